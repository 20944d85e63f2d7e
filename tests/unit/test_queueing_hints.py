"""Queueing hints: which cluster events move a parked pod (kube v1.31 isPodWorthRequeuing)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from netsched.eventhandlers import node_update_action
from netsched.framework import (
    ASSIGNED_POD,
    METRICS_POLLED_EVENT,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Plugin,
    QueueingHint,
)
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.types import PodInfo, QueuedPodInfo
from netsched.plugins.inter_pod_affinity.plugin import InterPodAffinity
from netsched.plugins.load_threshold.plugin import LoadThreshold
from netsched.plugins.node_affinity.plugin import NodeAffinity
from netsched.plugins.node_ports.plugin import NodePorts
from netsched.plugins.node_unschedulable.plugin import NodeUnschedulable
from netsched.plugins.node_volume_limits.plugin import NodeVolumeLimits
from netsched.plugins.noderesources.fit import NodeResourcesFit
from netsched.plugins.pod_topology_spread.plugin import PodTopologySpread
from netsched.plugins.priority_sort.plugin import PrioritySort
from netsched.plugins.taint_toleration.plugin import TaintToleration
from netsched.plugins.volume_binding.capacity import CheckCSIStorageCapacity
from netsched.plugins.volume_binding.plugin import VolumeBinding
from netsched.plugins.volume_restrictions.plugin import VolumeRestrictions
from netsched.plugins.volume_zone.plugin import VolumeZone
from netsched.queue import UNSCHEDULABLE, HintMap, SchedulingQueue
from netsched.testing import volumes as vol
from netsched.testing.builders import make_node, make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_plugin

NODE_ADD = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
NODE_LABEL = ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL, "NodeUpdate")
NODE_TAINT = ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT, "NodeUpdate")
NODE_ALLOC = ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE, "NodeUpdate")
HEARTBEAT = ClusterEvent(NODE, ActionType(0), "NodeUpdate")
POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")


class _Only(Plugin):
    """A plugin registering one event, with a hint that answers `answer`."""

    name = "Only"

    def __init__(self, event: ClusterEvent, answer: QueueingHint | None) -> None:
        super().__init__(None, None)  # type: ignore[arg-type]
        self.event, self.answer = event, answer

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        answer = self.answer
        if answer is None:
            return [ClusterEventWithHint(self.event)]
        return [ClusterEventWithHint(self.event, lambda _p, _o, _n: answer)]


def _queue(hints: HintMap | None, *, on: bool = True) -> tuple[SchedulingQueue, FakeClock]:
    clock = FakeClock()
    sort = PrioritySort(None, None)  # type: ignore[arg-type]
    q = SchedulingQueue(sort, clock=clock, hints=lambda _name: hints, queueing_hints=on)
    return q, clock


def _park(q: SchedulingQueue, pod: PodInfo, rejectors: frozenset[str]) -> QueuedPodInfo:
    q.add(pod)
    qp = q.pop(timeout=0)
    assert qp is not None
    qp.unschedulable_plugins = rejectors
    assert q.add_unschedulable_if_not_present(qp)
    q.done(pod.uid)
    assert q.where(pod.uid) == UNSCHEDULABLE
    return qp


def _hints(**plugins: Plugin | None) -> HintMap:
    return HintMap({name: (p.events_to_register() if p is not None else None) for name, p in plugins.items()})


# ---------------------------------------------------------------- queue


@pytest.mark.parametrize(
    ("registered", "answer", "event", "moved"),
    [
        (NODE_ADD, None, NODE_ADD, True),  # registered, no hint: Queue
        (NODE_ADD, QueueingHint.QUEUE, NODE_ADD, True),
        (NODE_ADD, QueueingHint.SKIP, NODE_ADD, False),  # the hint says no
        (NODE_ADD, None, POD_DELETE, False),  # not registered for that event
        (ClusterEvent(NODE, ActionType.ALL), None, NODE_LABEL, True),
        (ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT), None, NODE_LABEL, False),
        (ClusterEvent("*", ActionType.DELETE), None, POD_DELETE, True),
    ],
)
def test_event_moves_a_parked_pod_only_if_a_rejecting_plugin_registered_it_and_hints_queue(
    registered: ClusterEvent, answer: QueueingHint | None, event: ClusterEvent, moved: bool
) -> None:
    q, _ = _queue(_hints(Only=_Only(registered, answer)))
    pod = make_pod("p").info()
    _park(q, pod, frozenset({"Only"}))
    assert q.move_all_to_active_or_backoff(event) == int(moved)
    assert (q.where(pod.uid) != UNSCHEDULABLE) is moved


def test_safe_defaults_move_the_pod_on_every_event() -> None:
    hints = _hints(Silent=None, Only=_Only(NODE_ADD, QueueingHint.SKIP))
    q, _ = _queue(hints)
    no_rejector = _park(q, make_pod("none").info(), frozenset())
    silent = _park(q, make_pod("silent").info(), frozenset({"Silent"}))  # no events_to_register
    unknown = _park(q, make_pod("unknown").info(), frozenset({"NotInProfile"}))
    skipped = _park(q, make_pod("skipped").info(), frozenset({"Only"}))
    assert q.move_all_to_active_or_backoff(POD_DELETE) == 3
    for qp in (no_rejector, silent, unknown):
        assert q.where(qp.pod.uid) != UNSCHEDULABLE
    assert q.where(skipped.pod.uid) == UNSCHEDULABLE
    # A string event is a wildcard: it moves everything, hints or not.
    assert q.move_all_to_active_or_backoff("NodeAdd") == 1


def test_a_raising_hint_counts_as_queue() -> None:
    def boom(_p: PodInfo, _o: Any, _n: Any) -> QueueingHint:
        raise RuntimeError("bug in a hint")

    q, _ = _queue(HintMap({"Only": [ClusterEventWithHint(NODE_ADD, boom)]}))
    pod = make_pod("p").info()
    _park(q, pod, frozenset({"Only"}))
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 1


def test_heartbeats_move_nothing_with_hints_and_everything_without() -> None:
    for on, expected in ((True, 0), (False, 2)):
        q, _ = _queue(_hints(Only=_Only(NODE_ADD, None)), on=on)
        _park(q, make_pod("a").info(), frozenset({"Only"}))
        _park(q, make_pod("b").info(), frozenset())  # even a pod with no rejector stays
        assert q.move_all_to_active_or_backoff(HEARTBEAT) == expected


def test_hints_off_moves_every_parked_pod_on_any_event() -> None:
    q, _ = _queue(_hints(Only=_Only(NODE_ADD, QueueingHint.SKIP)), on=False)
    _park(q, make_pod("a").info(), frozenset({"Only"}))
    assert q.move_all_to_active_or_backoff(POD_DELETE) == 1


def test_event_during_the_attempt_sends_the_pod_to_backoff_only_if_it_could_help() -> None:
    for answer, where in ((QueueingHint.QUEUE, "backoff"), (QueueingHint.SKIP, UNSCHEDULABLE)):
        q, _ = _queue(_hints(Only=_Only(NODE_ADD, answer)))
        pod = make_pod("p").info()
        q.add(pod)
        qp = q.pop(timeout=0)
        assert qp is not None
        q.move_all_to_active_or_backoff(NODE_ADD, new=make_node("n").info())  # while in flight
        qp.unschedulable_plugins = frozenset({"Only"})
        assert q.add_unschedulable_if_not_present(qp)
        assert q.where(pod.uid) == where


def test_the_periodic_flush_still_retries_pods_no_event_helps() -> None:
    q, clock = _queue(_hints(Only=_Only(NODE_ADD, QueueingHint.SKIP)))
    pod = make_pod("p").info()
    _park(q, pod, frozenset({"Only"}))
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 0
    clock.step(q.max_unschedulable_seconds + 1)
    assert q.flush_unschedulable_leftover() == 1


# ---------------------------------------------------------------- node update classification


@pytest.mark.parametrize(
    ("change", "action"),
    [
        (lambda b: b, ActionType(0)),  # a heartbeat: nothing a plugin reads
        (lambda b: b.label("disk", "ssd"), ActionType.UPDATE_NODE_LABEL),
        (lambda b: b.taint("gpu", "true"), ActionType.UPDATE_NODE_TAINT),
        (lambda b: b.unschedulable(), ActionType.UPDATE_NODE_TAINT),
        (lambda b: b.capacity(cpu="8", memory="8Gi", pods="110"), ActionType.UPDATE_NODE_ALLOCATABLE),
        (lambda b: b.not_ready(), ActionType.UPDATE_NODE_CONDITION),
    ],
)
def test_node_update_action(change: Any, action: ActionType) -> None:
    old = make_node("n").capacity(cpu="4", memory="8Gi", pods="110").info()
    new_obj = change(make_node("n").capacity(cpu="4", memory="8Gi", pods="110")).obj()
    for cond in new_obj["status"].get("conditions") or ():
        cond["lastHeartbeatTime"] = "2030-01-01T00:00:00Z"  # heartbeats change times only
    from netsched.framework.parse import parse_node

    assert node_update_action(old, parse_node(new_obj)) == action


# ---------------------------------------------------------------- plugin hints (table-driven)


def _hint(plugin: Plugin, event: ClusterEvent, pod: PodInfo, old: Any, new: Any) -> QueueingHint | None:
    """What the plugin's registrations say about the event: None if not registered for it."""
    regs = plugin.events_to_register()
    assert regs is not None
    answers = [
        reg.hint(pod, old, new) if reg.hint is not None else QueueingHint.QUEUE
        for reg in regs
        if reg.event.match(event)
    ]
    if not answers:
        return None
    return QueueingHint.QUEUE if QueueingHint.QUEUE in answers else QueueingHint.SKIP


def _plugin(cls: type[Plugin]) -> Plugin:

    if cls is LoadThreshold:
        # Needs the metrics hub to initialise; its registrations read no instance state.
        return cls.__new__(cls)
    return build_plugin(cls)


Q, S = QueueingHint.QUEUE, QueueingHint.SKIP
big = make_pod("big").req(cpu="16").info()
small_node = make_node("n").capacity(cpu="4", memory="8Gi", pods="110").info()
large_node = make_node("n").capacity(cpu="32", memory="8Gi", pods="110").info()
ssd = make_pod("p").node_selector(disk="ssd").info()
plain_node = make_node("n").info()
ssd_node = make_node("n").label("disk", "ssd").info()
tainted = make_node("n").taint("gpu", "true").info()
cordoned = make_node("n").unschedulable().info()
port_pod = make_pod("p").host_port(8080).info()
bound_port = make_pod("o").host_port(8080).node("n").info()
bound_other_port = make_pod("o").host_port(9090).node("n").info()
affine = (
    make_pod("p")
    .affinity(
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    )
    .info()
)
db = make_pod("db").label("app", "db").node("n").info()
web = make_pod("web").label("app", "web").node("n").info()
spread = make_pod("p").spread(1, "topology.kubernetes.io/zone", "DoNotSchedule", {"app": "db"}).info()


@pytest.mark.parametrize(
    ("cls", "event", "pod", "old", "new", "expected"),
    [
        (NodeResourcesFit, NODE_ADD, big, None, small_node, S),
        (NodeResourcesFit, NODE_ADD, big, None, large_node, Q),
        (NodeResourcesFit, NODE_ALLOC, big, small_node, large_node, Q),
        (NodeResourcesFit, NODE_LABEL, big, small_node, small_node, None),
        (NodeResourcesFit, POD_DELETE, big, web, None, Q),
        (NodeResourcesFit, POD_ADD, big, None, web, None),
        (NodeAffinity, NODE_ADD, ssd, None, plain_node, S),
        (NodeAffinity, NODE_ADD, ssd, None, ssd_node, Q),
        (NodeAffinity, NODE_LABEL, ssd, plain_node, ssd_node, Q),
        (NodeAffinity, NODE_LABEL, ssd, ssd_node, ssd_node, S),
        (NodeAffinity, POD_DELETE, ssd, web, None, None),
        (TaintToleration, NODE_ADD, big, None, tainted, S),
        (TaintToleration, NODE_TAINT, big, tainted, plain_node, Q),
        (TaintToleration, NODE_TAINT, big, plain_node, tainted, S),
        (TaintToleration, NODE_LABEL, big, plain_node, plain_node, None),
        (NodeUnschedulable, NODE_TAINT, big, cordoned, plain_node, Q),
        (NodeUnschedulable, NODE_TAINT, big, plain_node, cordoned, S),
        (NodeUnschedulable, NODE_ADD, big, None, cordoned, S),
        (NodePorts, POD_DELETE, port_pod, bound_port, None, Q),
        (NodePorts, POD_DELETE, port_pod, bound_other_port, None, S),
        (NodePorts, NODE_ADD, port_pod, None, plain_node, Q),
        (InterPodAffinity, POD_ADD, affine, None, db, Q),
        (InterPodAffinity, POD_ADD, affine, None, web, S),
        (InterPodAffinity, NODE_LABEL, affine, plain_node, ssd_node, Q),
        (InterPodAffinity, NODE_ALLOC, affine, small_node, large_node, None),
        (PodTopologySpread, POD_DELETE, spread, db, None, Q),
        (PodTopologySpread, POD_DELETE, spread, web, None, S),
        (PodTopologySpread, NODE_ADD, spread, None, plain_node, Q),
        (PodTopologySpread, NODE_ALLOC, spread, small_node, large_node, None),
        (LoadThreshold, METRICS_POLLED_EVENT, big, None, None, Q),
        (LoadThreshold, NODE_ADD, big, None, plain_node, Q),
        (LoadThreshold, POD_DELETE, big, web, None, None),
    ],
)
def test_plugin_hint(
    cls: type[Plugin], event: ClusterEvent, pod: PodInfo, old: Any, new: Any, expected: QueueingHint | None
) -> None:
    assert _hint(_plugin(cls), event, pod, old, new) == expected


def test_no_in_tree_hinted_plugin_registers_heartbeats() -> None:
    for cls in (NodeResourcesFit, NodeAffinity, TaintToleration, NodeUnschedulable, InterPodAffinity):
        assert _hint(_plugin(cls), HEARTBEAT, big, plain_node, plain_node) is None


@pytest.mark.parametrize(
    ("pod", "old", "new", "expected"),
    [
        # The pod's own terms match before and after; the relabel makes the node match the
        # profile's addedAffinity (kube would skip here, leaving the pod to the periodic flush).
        (big, plain_node, make_node("n").label("pool", "batch").info(), Q),
        (big, None, plain_node, S),
        (big, None, make_node("n").label("pool", "batch").info(), Q),
        (big, make_node("n").label("pool", "batch").info(), make_node("n").label("pool", "batch").info(), S),
        # Admitted by addedAffinity before and after, the pod's own terms decide.
        (
            ssd,
            make_node("n").label("pool", "batch").info(),
            make_node("n").label("pool", "batch").label("disk", "ssd").info(),
            Q,
        ),
        (ssd, make_node("n").label("pool", "batch").info(), make_node("n").label("pool", "batch").info(), S),
    ],
)
def test_node_affinity_hint_counts_added_affinity(
    pod: PodInfo, old: Any, new: Any, expected: QueueingHint
) -> None:
    args = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch"]}]}
                ]
            }
        }
    }
    errs = ErrorList()
    plugin = build_plugin(NodeAffinity, NodeAffinity.Args.decode(Fields(args, "args", errs)))
    assert not list(errs)
    event = NODE_ADD if old is None else NODE_LABEL
    assert _hint(plugin, event, pod, old, new) == expected


# ---------------------------------------------------------------- volume plugins


def _obj_event(kind: str, action: ActionType) -> ClusterEvent:
    return ClusterEvent(kind, action)


PVC_ADD = _obj_event("PersistentVolumeClaim", ActionType.ADD)
PVC_UPDATE = _obj_event("PersistentVolumeClaim", ActionType.UPDATE_OTHER)
PV_ADD = _obj_event("PersistentVolume", ActionType.ADD)
SC_ADD = _obj_event("StorageClass", ActionType.ADD)
SC_UPDATE = _obj_event("StorageClass", ActionType.UPDATE_OTHER)
CAP_ADD = _obj_event("CSIStorageCapacity", ActionType.ADD)
CAP_UPDATE = _obj_event("CSIStorageCapacity", ActionType.UPDATE_OTHER)
CSINODE_ADD = _obj_event("CSINode", ActionType.ADD)
PDB_UPDATE = _obj_event("PodDisruptionBudget", ActionType.UPDATE_OTHER)

claimant = make_pod("p").pvc("data").info()
own_claim = vol.pvc("data")
other_claim = vol.pvc("logs")
foreign_claim = vol.pvc("data", namespace="other")
sc_zone_a = vol.storage_class("fast", topologies={"topology.kubernetes.io/zone": ["a"]})
sc_zone_ab = vol.storage_class("fast", topologies={"topology.kubernetes.io/zone": ["a", "b"]})
sc_relabelled = {**sc_zone_a, "metadata": {"name": "fast", "resourceVersion": "2", "labels": {"x": "y"}}}
cap_small = vol.capacity("c", "fast", "1Gi")
cap_large = vol.capacity("c", "fast", "10Gi")
cap_max_set = vol.capacity("c", "fast", "10Gi", maximum_volume_size="1Gi")
bound_claimant = make_pod("o").pvc("data").node("n").info()
bound_plain = make_pod("o").node("n").info()


@pytest.mark.parametrize(
    ("cls", "event", "pod", "old", "new", "expected"),
    [
        (VolumeBinding, PVC_ADD, claimant, None, own_claim, Q),
        (VolumeBinding, PVC_ADD, claimant, None, other_claim, S),
        (VolumeBinding, PVC_UPDATE, claimant, foreign_claim, foreign_claim, S),
        (VolumeBinding, PVC_ADD, claimant, None, {"metadata": {}}, Q),  # unreadable: queue
        (VolumeBinding, PV_ADD, claimant, None, vol.pv("pv1"), Q),
        (VolumeBinding, SC_ADD, claimant, None, sc_zone_a, Q),
        (VolumeBinding, SC_UPDATE, claimant, sc_zone_a, sc_zone_ab, Q),
        (VolumeBinding, SC_UPDATE, claimant, sc_zone_a, sc_relabelled, S),
        (VolumeBinding, CAP_ADD, claimant, None, cap_small, Q),
        (VolumeBinding, CAP_UPDATE, claimant, cap_small, cap_large, Q),
        (VolumeBinding, CAP_UPDATE, claimant, cap_large, cap_small, S),
        (VolumeBinding, CAP_UPDATE, claimant, cap_large, cap_max_set, S),
        (VolumeBinding, NODE_LABEL, claimant, plain_node, ssd_node, Q),
        (VolumeBinding, NODE_ALLOC, claimant, small_node, large_node, None),
        (VolumeBinding, POD_DELETE, claimant, bound_claimant, None, None),
        (VolumeBinding, PDB_UPDATE, claimant, None, None, None),
        (CheckCSIStorageCapacity, CAP_UPDATE, claimant, cap_small, cap_large, Q),
        (CheckCSIStorageCapacity, PV_ADD, claimant, None, vol.pv("pv1"), None),
        (VolumeZone, PV_ADD, claimant, None, vol.pv("pv1"), Q),
        (VolumeZone, PVC_ADD, claimant, None, other_claim, S),
        (VolumeZone, POD_DELETE, claimant, bound_claimant, None, None),
        (VolumeRestrictions, POD_DELETE, claimant, bound_claimant, None, Q),
        (VolumeRestrictions, POD_DELETE, claimant, bound_plain, None, S),
        (VolumeRestrictions, PVC_ADD, claimant, None, own_claim, Q),
        (VolumeRestrictions, NODE_ADD, claimant, None, plain_node, Q),
        (VolumeRestrictions, NODE_LABEL, claimant, plain_node, ssd_node, None),
        (NodeVolumeLimits, CSINODE_ADD, claimant, None, vol.csi_node("n", {"csi.example.com": 2}), Q),
        (NodeVolumeLimits, POD_DELETE, claimant, bound_claimant, None, Q),
        (NodeVolumeLimits, POD_DELETE, claimant, bound_plain, None, S),
        (NodeVolumeLimits, PV_ADD, claimant, None, vol.pv("pv1"), None),
    ],
)
def test_volume_plugin_hint(
    cls: type[Plugin], event: ClusterEvent, pod: PodInfo, old: Any, new: Any, expected: QueueingHint | None
) -> None:
    assert _hint(_plugin(cls), event, pod, old, new) == expected


def test_a_resource_counts_as_registered_only_where_a_plugin_names_it() -> None:
    hints = _hints(
        Silent=None, Any=_Only(ClusterEvent("*", ActionType.ADD), None), Only=_Only(NODE_ADD, None)
    )
    assert hints.registers(NODE)
    assert not hints.registers(ASSIGNED_POD)  # neither the wildcard nor "every event" names it
