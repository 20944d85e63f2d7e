"""VolumeBinding (kube v1.31 volumebinding) rule by rule, plus CheckCSIStorageCapacity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest

from netsched.cache import ObjectStore
from netsched.clock import ManualClock
from netsched.config import load_config
from netsched.fakeapi.patch import merge_patch
from netsched.framework import Code, CycleState, Snapshot, Status
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.runtime import Framework
from netsched.kube.errors import Conflict
from netsched.plugins.registry import in_tree_plugins
from netsched.plugins.volume_binding import CheckCSIStorageCapacity, VolumeBinding, VolumeBindingArgs
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_framework, plugin_of
from netsched.testing.handle import MemoryAPI, RecordingEvents
from netsched.testing.volumes import (
    HOSTNAME,
    PVCS,
    PVS,
    ZONE,
    bind_claim,
    capacity,
    csi_driver,
    node_affinity,
    pv,
    pvc,
    storage_class,
    volume_objects,
)

NODES = [make_node(f"n-{z}").label(ZONE, z).label(HOSTNAME, f"n-{z}") for z in ("a", "b", "c")]
FAST = storage_class("fast")  # WaitForFirstConsumer, csi.example.com
LOCAL = storage_class("local", provisioner="kubernetes.io/no-provisioner")
IMMEDIATE = storage_class("standard", mode="Immediate")


class StoreAPI(MemoryAPI):
    """Records patches and applies them to the informer's store with a new resourceVersion,
    as an API server whose watch delivers at once."""

    store: ObjectStore | None = None

    def patch_object(
        self, resource: Any, namespace: str, name: str, patch: Any, *, subresource: str = ""
    ) -> Any:
        super().patch_object(resource, namespace, name, patch, subresource=subresource)
        assert self.store is not None
        current = self.store.get(resource.key, namespace, name)
        assert current is not None
        if patch["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", f"{resource.key} {name}: the object has been modified")
        out = merge_patch(current, dict(patch))
        out["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.store.apply(resource.key, "MODIFIED", out)
        return out


def framework(**objects: Any) -> tuple[Framework, StoreAPI, RecordingEvents]:
    api, events = StoreAPI(), RecordingEvents()
    clock = objects.pop("clock", None)
    fwk = build_framework(
        [VolumeBinding], objects=volume_objects(**objects), api=api, events=events, clock=clock
    )
    api.store = store(fwk)
    return fwk, api, events


def store(fwk: Framework) -> ObjectStore:
    objs = fwk._services.objects
    assert isinstance(objs, ObjectStore)
    return objs


def run(
    fwk: Framework, pod: Any, nodes: list[Any] | None = None
) -> tuple[CycleState, Status, dict[str, Status]]:
    """PreFilter, then Filter on each node: (state, PreFilter status, node -> Filter status)."""
    state = fwk.new_cycle_state()
    info = pod.info()
    snap = Snapshot.of(node_infos(nodes or NODES))
    _, st = fwk.run_pre_filter(state, info, snap)
    out = {}
    if st.ok:
        for n in snap.nodes:
            out[n.name] = fwk.run_filter_plugins(state, info, n)
    return state, st, out


def reasons(filtered: dict[str, Status]) -> dict[str, list[str]]:
    return {n: s.reasons for n, s in filtered.items() if not s.ok}


POD = make_pod("web-0").uid("pod-uid").pvc("data")


# ---------------------------------------------------------------- PreFilter


def test_pod_without_claims_skips() -> None:
    fwk, _, _ = framework()
    _, st, _ = run(fwk, make_pod("p"))
    assert st.ok
    plugin = plugin_of(fwk, VolumeBinding)
    _, st = plugin.pre_filter(CycleState(), make_pod("p").info(), Snapshot())
    assert st.is_skip


def test_missing_claim_is_unresolvable() -> None:
    fwk, _, _ = framework()
    _, st, _ = run(fwk, POD)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ['persistentvolumeclaim "data" not found']


def test_claim_being_deleted_is_unresolvable() -> None:
    claim = pvc("data", storage_class="fast")
    claim["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    fwk, _, _ = framework(pvcs=[claim], classes=[FAST])
    _, st, _ = run(fwk, POD)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ['persistentvolumeclaim "data" is being deleted']


def test_unbound_immediate_claim_is_unresolvable() -> None:
    fwk, _, _ = framework(pvcs=[pvc("data", storage_class="standard")], classes=[IMMEDIATE])
    _, st, _ = run(fwk, POD)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ["pod has unbound immediate PersistentVolumeClaims"]


def test_claim_naming_a_missing_class_gets_an_event_naming_claim_and_field() -> None:
    fwk, _, events = framework(pvcs=[pvc("data", storage_class="nope")])
    _, st, _ = run(fwk, POD)
    assert st.reasons == [
        "pod has unbound immediate PersistentVolumeClaims"
    ]  # kube: a missing class is Immediate
    assert len(events.events) == 1
    key, type_, reason, _, message = events.events[0]
    assert (key, type_, reason) == ("default/web-0", "Warning", "FailedScheduling")
    assert "PersistentVolumeClaim default/data" in message
    assert 'spec.storageClassName: StorageClass "nope" not found' in message


def test_ephemeral_claim_must_be_owned_by_the_pod() -> None:
    pod = make_pod("web-0").uid("pod-uid").set("spec.volumes", [{"name": "scratch", "ephemeral": {}}])
    theirs = pvc("web-0-scratch", storage_class="fast", owner_uid="someone-else")
    fwk, _, _ = framework(pvcs=[theirs], classes=[FAST])
    _, st, _ = run(fwk, pod)
    assert st.reasons == [
        "PVC default/web-0-scratch was not created for pod default/web-0 (pod is not owner)"
    ]
    fwk, _, _ = framework(
        pvcs=[pvc("web-0-scratch", storage_class="fast", owner_uid="pod-uid")], classes=[FAST]
    )
    _, st, filtered = run(fwk, pod)
    assert st.ok and reasons(filtered) == {}


# ---------------------------------------------------------------- bound claims


def test_bound_pv_node_affinity() -> None:
    claim = pvc("data", storage_class="fast", volume="pv-a", bound=True)
    volume = pv("pv-a", storage_class="fast", affinity=node_affinity(ZONE, "a"), claim=claim)
    fwk, _, _ = framework(pvcs=[claim], pvs=[volume], classes=[FAST])
    _, st, filtered = run(fwk, POD)
    assert st.ok
    assert reasons(filtered) == {
        "n-b": ["node(s) had volume node affinity conflict"],
        "n-c": ["node(s) had volume node affinity conflict"],
    }
    assert filtered["n-b"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_claim_bound_to_a_missing_pv() -> None:
    claim = pvc("data", storage_class="fast", volume="gone", bound=True)
    fwk, _, _ = framework(pvcs=[claim], classes=[FAST])
    _, _, filtered = run(fwk, POD)
    assert set(reasons(filtered)["n-a"]) == {
        "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
    }


def test_local_pvs_narrow_the_nodes_by_hostname() -> None:
    claim = pvc("data", storage_class="local", volume="pv-b", bound=True)
    volume = pv("pv-b", storage_class="local", affinity=node_affinity(HOSTNAME, "n-b"), claim=claim)
    fwk, _, _ = framework(pvcs=[claim], pvs=[volume], classes=[LOCAL])
    result, st = plugin_of(fwk, VolumeBinding).pre_filter(CycleState(), POD.info(), Snapshot())
    assert st.ok and result is not None and result.node_names == {"n-b"}


def test_bound_pv_with_malformed_node_affinity_is_an_event_not_a_crash() -> None:
    claim = pvc("data", storage_class="fast", volume="bad", bound=True)
    volume = pv("bad", storage_class="fast", affinity=node_affinity(ZONE, "a", operator="Near"), claim=claim)
    fwk, _, events = framework(pvcs=[claim], pvs=[volume], classes=[FAST])
    _, st, _ = run(fwk, POD)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "PersistentVolume bad" in st.reasons[0]
    assert "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator" in st.reasons[0]
    assert events.events and "PersistentVolume bad: spec.nodeAffinity.required" in events.events[0][4]


# ---------------------------------------------------------------- static binding


def test_smallest_matching_static_pv_wins() -> None:
    claim = pvc("data", storage_class="local", size="10Gi")
    pvs = [
        pv("big", storage_class="local", size="100Gi", affinity=node_affinity(ZONE, "a")),
        pv("small", storage_class="local", size="10Gi", affinity=node_affinity(ZONE, "a")),
        pv("too-small", storage_class="local", size="5Gi", affinity=node_affinity(ZONE, "a")),
        pv("other-class", storage_class="fast", size="10Gi", affinity=node_affinity(ZONE, "a")),
        pv(
            "rox-only",
            storage_class="local",
            size="10Gi",
            modes=["ReadOnlyMany"],
            affinity=node_affinity(ZONE, "a"),
        ),
        pv(
            "released",
            storage_class="local",
            size="10Gi",
            phase="Released",
            affinity=node_affinity(ZONE, "a"),
        ),
        pv("zone-b", storage_class="local", size="50Gi", affinity=node_affinity(ZONE, "b")),
    ]
    fwk, _, _ = framework(pvcs=[claim], pvs=pvs, classes=[LOCAL])
    state, st, filtered = run(fwk, POD)
    assert st.ok
    assert reasons(filtered) == {"n-c": ["node(s) didn't find available persistent volumes to bind"]}
    vs = state.read("PreFilterVolumeBinding")
    assert [v.name for v, _ in vs.by_node["n-a"].static] == ["small"]
    assert [v.name for v, _ in vs.by_node["n-b"].static] == ["zone-b"]


def test_claim_selector_restricts_static_pvs() -> None:
    claim = pvc("data", storage_class="local", selector={"matchLabels": {"tier": "gold"}})
    pvs = [pv("plain", storage_class="local", affinity=node_affinity(ZONE, "a"))]
    fwk, _, _ = framework(pvcs=[claim], pvs=pvs, classes=[LOCAL])
    _, _, filtered = run(fwk, POD, [NODES[0]])
    assert reasons(filtered) == {"n-a": ["node(s) didn't find available persistent volumes to bind"]}


def test_reserve_assumes_the_pv_so_the_next_pod_cannot_take_it_and_unreserve_reverts() -> None:
    claims = [pvc("data-0", storage_class="local"), pvc("data-1", storage_class="local")]
    fwk, _, _ = framework(pvcs=claims, pvs=[pv("only", storage_class="local")], classes=[LOCAL])
    first = make_pod("web-0").pvc("data-0")
    second = make_pod("web-1").pvc("data-1")
    state, _, filtered = run(fwk, first, [NODES[0]])
    assert reasons(filtered) == {}
    assert fwk.run_reserve(state, first.info(), "n-a").ok
    _, _, filtered = run(fwk, second, [NODES[0]])
    assert reasons(filtered) == {"n-a": ["node(s) didn't find available persistent volumes to bind"]}
    fwk.run_unreserve(state, first.info(), "n-a")
    _, _, filtered = run(fwk, second, [NODES[0]])
    assert reasons(filtered) == {}


def test_prebound_pv_is_used_when_its_affinity_fits() -> None:
    claim = pvc("data", storage_class="local")
    volume = pv("mine", storage_class="local", affinity=node_affinity(ZONE, "b"), claim=claim)
    fwk, _, _ = framework(pvcs=[claim], pvs=[volume, pv("free", storage_class="local")], classes=[LOCAL])
    state, _, filtered = run(fwk, POD)
    assert reasons(filtered) == {
        "n-a": ["node(s) didn't find available persistent volumes to bind"],
        "n-c": ["node(s) didn't find available persistent volumes to bind"],
    }
    assert [v.name for v, _ in state.read("PreFilterVolumeBinding").by_node["n-b"].static] == ["mine"]


# ---------------------------------------------------------------- dynamic provisioning


def test_no_provisioner_and_no_static_pv() -> None:
    fwk, _, _ = framework(pvcs=[pvc("data", storage_class="local")], classes=[LOCAL])
    _, _, filtered = run(fwk, POD, [NODES[0]])
    assert reasons(filtered) == {"n-a": ["node(s) didn't find available persistent volumes to bind"]}


def test_allowed_topologies() -> None:
    cls = storage_class("fast", topologies={ZONE: ["a", "c"]})
    fwk, _, _ = framework(pvcs=[pvc("data", storage_class="fast")], classes=[cls])
    _, _, filtered = run(fwk, POD)
    assert reasons(filtered) == {"n-b": ["node(s) didn't find available persistent volumes to bind"]}


def test_csi_storage_capacity() -> None:
    caps = [
        capacity("a", "fast", "100Gi", topology={ZONE: "a"}),
        capacity("b", "fast", "100Gi", topology={ZONE: "b"}, maximum_volume_size="5Gi"),  # max size wins
        capacity("c", "fast", "100Gi", topology=None),  # no topology: reaches no node
    ]
    claim = pvc("data", storage_class="fast", size="10Gi")
    fwk, _, _ = framework(
        pvcs=[claim], classes=[FAST], csi_drivers=[csi_driver("csi.example.com")], capacities=caps
    )
    _, _, filtered = run(fwk, POD)
    assert reasons(filtered) == {
        "n-b": ["node(s) did not have enough free storage"],
        "n-c": ["node(s) did not have enough free storage"],
    }
    # Capacity is only checked for drivers that opt in.
    fwk, _, _ = framework(
        pvcs=[claim],
        classes=[FAST],
        csi_drivers=[csi_driver("csi.example.com", storage_capacity=False)],
        capacities=caps,
    )
    assert reasons(run(fwk, POD)[2]) == {}


def test_claim_already_selected_for_another_node() -> None:
    claim = pvc("data", storage_class="fast", annotations={"volume.kubernetes.io/selected-node": "n-b"})
    fwk, _, _ = framework(pvcs=[claim], classes=[FAST])
    _, _, filtered = run(fwk, POD)
    assert set(reasons(filtered)) == {"n-a", "n-c"}


# ---------------------------------------------------------------- PreBind


class HookClock(ManualClock):
    """A manual clock that runs `hook` on each sleep (the PV controller acting meanwhile)."""

    def __init__(self, hook: Callable[[int], None]) -> None:
        super().__init__()
        self.hook = hook
        self.sleeps = 0

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.hook(self.sleeps)
        super().sleep(seconds)


def reserve(fwk: Framework, pod: Any, node: Any) -> CycleState:
    state, st, filtered = run(fwk, pod, [node])
    assert st.ok and reasons(filtered) == {}
    assert fwk.run_reserve(state, pod.info(), node.info().name).ok
    return state


def test_prebind_binds_a_static_pv_then_waits_for_the_claim() -> None:
    claim = pvc("data", storage_class="local", rv="7")
    volume = pv("pv-1", storage_class="local", rv="3")

    def controller(n: int) -> None:
        if n == 2:  # the PV controller binds the claim a little later
            s.apply(PVCS, "MODIFIED", bind_claim(claim, "pv-1"))

    clock = HookClock(controller)
    fwk, api, _ = framework(pvcs=[claim], pvs=[volume], classes=[LOCAL], clock=clock)
    s = store(fwk)
    state = reserve(fwk, POD, NODES[0])
    st = fwk.run_pre_bind(state, POD.info(), "n-a")
    assert st.ok, st
    assert api.patches == [
        (
            "persistentvolumes",
            "/pv-1",
            "",
            {
                "metadata": {
                    "resourceVersion": "3",
                    "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"},
                },
                "spec": {
                    "claimRef": {
                        "kind": "PersistentVolumeClaim",
                        "apiVersion": "v1",
                        "namespace": "default",
                        "name": "data",
                        "resourceVersion": "7",
                        "uid": "uid-default-data",
                    }
                },
            },
        )
    ]
    assert clock.sleeps == 2
    stored = s.get(PVS, "", "pv-1")
    assert stored is not None and stored["spec"]["claimRef"]["name"] == "data"


def test_prebind_selects_the_node_for_provisioning() -> None:
    claim = pvc("data", storage_class="fast", rv="5")

    def controller(n: int) -> None:
        current = s.get(PVCS, "default", "data")
        assert (
            current is not None
            and current["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "n-a"
        )
        s.apply(
            PVCS,
            "MODIFIED",
            bind_claim({**current, "metadata": {**current["metadata"], "resourceVersion": "9"}}, "pvc-data"),
        )
        s.apply(
            PVS, "ADDED", pv("pvc-data", storage_class="fast", affinity=node_affinity(ZONE, "a"), claim=claim)
        )

    fwk, api, _ = framework(pvcs=[claim], classes=[FAST], clock=HookClock(controller))
    s = store(fwk)
    state = reserve(fwk, POD, NODES[0])
    assert fwk.run_pre_bind(state, POD.info(), "n-a").ok
    assert api.patches == [
        (
            "persistentvolumeclaims",
            "default/data",
            "",
            {
                "metadata": {
                    "resourceVersion": "5",
                    "annotations": {"volume.kubernetes.io/selected-node": "n-a"},
                }
            },
        )
    ]


def test_prebind_times_out_after_bind_timeout_seconds() -> None:
    clock, api = ManualClock(), StoreAPI()
    fwk = build_framework(
        [VolumeBinding],
        objects=volume_objects(pvcs=[pvc("data", storage_class="fast")], classes=[FAST]),
        args={"VolumeBinding": VolumeBindingArgs(bind_timeout_seconds=30)},
        clock=clock,
        api=api,
    )
    api.store = store(fwk)
    state = reserve(fwk, POD, NODES[0])
    started = clock.now()
    st = fwk.run_pre_bind(state, POD.info(), "n-a")
    assert st.code == Code.ERROR and st.plugin == "VolumeBinding"
    assert "binding volumes: context deadline exceeded" in st.message()
    assert clock.now() - started == pytest.approx(30)


def test_prebind_wait_ends_when_the_scheduler_shuts_down() -> None:
    api = StoreAPI()
    fwk_cell: list[Framework] = []
    clock = HookClock(lambda n: fwk_cell[0].cancel_binding_waits() if n == 3 else None)
    fwk = build_framework(
        [VolumeBinding],
        objects=volume_objects(pvcs=[pvc("data", storage_class="fast")], classes=[FAST]),
        clock=clock,
        api=api,
    )
    fwk_cell.append(fwk)
    api.store = store(fwk)
    state = reserve(fwk, POD, NODES[0])
    started = clock.now()
    st = fwk.run_pre_bind(state, POD.info(), "n-a")
    assert st.code == Code.ERROR and st.plugin == "VolumeBinding"
    assert "binding volumes: context canceled" in st.message()
    assert clock.sleeps == 3 and clock.now() - started < 600  # not the bind timeout


def test_prebind_fails_when_the_claim_is_deleted_while_waiting() -> None:
    claim = pvc("data", storage_class="fast")
    fwk, _, _ = framework(
        pvcs=[claim], classes=[FAST], clock=HookClock(lambda n: s.apply(PVCS, "DELETED", claim))
    )
    s = store(fwk)
    state = reserve(fwk, POD, NODES[0])
    st = fwk.run_pre_bind(state, POD.info(), "n-a")
    assert st.code == Code.ERROR
    assert 'persistentvolumeclaim "default/data" not found' in st.message()


def test_prebind_conflict_fails_and_unreserve_frees_the_pv() -> None:
    class ConflictAPI(MemoryAPI):
        def patch_object(
            self, resource: Any, namespace: str, name: str, patch: Any, *, subresource: str = ""
        ) -> Any:
            raise Conflict(409, "Conflict", f"{resource.key} {name}: the object has been modified")

    claims = [pvc("data", storage_class="local"), pvc("data-1", storage_class="local")]
    fwk = build_framework(
        [VolumeBinding],
        objects=volume_objects(pvcs=claims, pvs=[pv("only", storage_class="local")], classes=[LOCAL]),
        api=ConflictAPI(),
    )
    state = reserve(fwk, POD, NODES[0])
    st = fwk.run_pre_bind(state, POD.info(), "n-a")
    assert st.code == Code.ERROR and "has been modified" in st.message()
    fwk.run_unreserve(state, POD.info(), "n-a")
    _, _, filtered = run(fwk, make_pod("web-1").pvc("data-1"), [NODES[0]])
    assert reasons(filtered) == {}


def test_all_bound_pod_prebinds_without_writes() -> None:
    claim = pvc("data", storage_class="fast", volume="pv-a", bound=True)
    fwk, api, _ = framework(pvcs=[claim], pvs=[pv("pv-a", storage_class="fast", claim=claim)], classes=[FAST])
    state = reserve(fwk, POD, NODES[0])
    assert fwk.run_pre_bind(state, POD.info(), "n-a").ok
    assert api.patches == []


# ---------------------------------------------------------------- args and profile


def test_args_defaults_and_validation() -> None:
    assert VolumeBindingArgs.default().bind_timeout_seconds == 600
    errs = ErrorList()
    VolumeBindingArgs.decode(Fields({"bindTimeoutSeconds": -1, "shape": []}, "args", errs))
    text = " ".join(str(e) for e in errs)
    assert "args.bindTimeoutSeconds" in text and "should not be a negative value" in text
    assert "args.shape" in text and "VolumeCapacityPriority" in text


SEED_PROFILE = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: seeds
  plugins:
    filter:
      enabled:
      - name: CheckCSIStorageCapacity
"""


def test_profile_naming_check_csi_storage_capacity_loads_next_to_volume_binding() -> None:
    registry = {c.name: c for c in in_tree_plugins()}
    cfg = load_config(SEED_PROFILE, registry)
    filters = cfg.profiles[0].names("filter")
    assert "VolumeBinding" in filters and "CheckCSIStorageCapacity" in filters


def test_check_csi_storage_capacity_alone_and_next_to_volume_binding() -> None:
    objs = volume_objects(
        pvcs=[pvc("data", storage_class="fast", size="10Gi")],
        classes=[FAST],
        csi_drivers=[csi_driver("csi.example.com")],
        capacities=[capacity("a", "fast", "100Gi", topology={ZONE: "a"})],
    )
    alone = build_framework([CheckCSIStorageCapacity], objects=objs)
    assert reasons(run(alone, POD)[2]) == {
        "n-b": ["node(s) did not have enough free storage"],
        "n-c": ["node(s) did not have enough free storage"],
    }
    both = build_framework([VolumeBinding, CheckCSIStorageCapacity], objects=objs)
    filtered = run(both, POD)[2]
    assert {n: (s.plugin, s.reasons) for n, s in filtered.items() if not s.ok} == {
        "n-b": ("VolumeBinding", ["node(s) did not have enough free storage"]),
        "n-c": ("VolumeBinding", ["node(s) did not have enough free storage"]),
    }
    # Each node is rejected once, by VolumeBinding: the alias passes nodes VolumeBinding checked.
    state = both.new_cycle_state()
    snap = Snapshot.of(node_infos(NODES))
    both.run_pre_filter(state, POD.info(), snap)
    alias = plugin_of(both, CheckCSIStorageCapacity)
    assert all(alias.filter(state, POD.info(), n).ok for n in snap.nodes)


SEED_PROFILE_WITH_PRE_FILTER = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: seeds
  plugins:
    preFilter:
      enabled:
      - name: CheckCSIStorageCapacity
    filter:
      enabled:
      - name: CheckCSIStorageCapacity
"""

CAPACITY_OBJECTS = volume_objects(
    pvcs=[pvc("data", storage_class="fast", size="10Gi"), pvc("old", storage_class="fast", volume="pv-1")],
    classes=[FAST],
    csi_drivers=[csi_driver("csi.example.com")],
    capacities=[capacity("a", "fast", "100Gi", topology={ZONE: "a"})],
)


def test_check_csi_storage_capacity_extends_pre_filter_and_runs_the_seed_profile() -> None:
    registry = {c.name: c for c in in_tree_plugins()}
    profile = load_config(SEED_PROFILE_WITH_PRE_FILTER, registry).profiles[0]
    assert "CheckCSIStorageCapacity" in profile.names("preFilter")
    assert "CheckCSIStorageCapacity" in profile.names("filter")


def test_check_csi_storage_capacity_pre_filter_reads_claims_once_and_skips_pods_without_them() -> None:
    fwk = build_framework([CheckCSIStorageCapacity], objects=CAPACITY_OBJECTS)
    plugin = plugin_of(fwk, CheckCSIStorageCapacity)
    with mock.patch.object(plugin, "_to_check", wraps=plugin._to_check) as reads:
        state, st, filtered = run(fwk, POD)
        assert st.ok and [c.args[0].name for c in reads.call_args_list] == ["web-0"]  # once, not per node
        assert reasons(filtered) == {
            "n-b": ["node(s) did not have enough free storage"],
            "n-c": ["node(s) did not have enough free storage"],
        }
        # No claims, or only bound ones: PreFilter skips, so the runtime never calls its Filter.
        for pod in (make_pod("plain"), make_pod("bound").pvc("old")):
            state, st, filtered = run(fwk, pod)
            assert st.ok and "CheckCSIStorageCapacity" in state.skip_filter_plugins
            assert all(s.ok for s in filtered.values())
        assert [c.args[0].name for c in reads.call_args_list] == ["web-0", "bound"]


def test_check_csi_storage_capacity_filter_alone_still_reads_the_claims() -> None:
    # A profile enabling it at filter only: the first Filter call computes what PreFilter would.
    fwk = build_framework([CheckCSIStorageCapacity], objects=CAPACITY_OBJECTS)
    plugin = plugin_of(fwk, CheckCSIStorageCapacity)
    state = CycleState()
    nodes = {n.name: n for n in node_infos(NODES)}
    assert plugin.filter(state, POD.info(), nodes["n-a"]).ok
    assert plugin.filter(state, POD.info(), nodes["n-b"]).reasons == [
        "node(s) did not have enough free storage"
    ]


def test_check_csi_storage_capacity_skips_after_volume_binding_pre_filter() -> None:
    fwk = build_framework([VolumeBinding, CheckCSIStorageCapacity], objects=CAPACITY_OBJECTS)
    state, st, _ = run(fwk, POD)
    assert st.ok and "CheckCSIStorageCapacity" in state.skip_filter_plugins
    assert "VolumeBinding" not in state.skip_filter_plugins


# ---------------------------------------------------------------- batch form


def batch_reasons(fwk: Framework, pod: Any, nodes: list[Any]) -> dict[str, list[str]]:
    """The batch Filter's verdicts, per node name (what the node search uses)."""
    state = fwk.new_cycle_state()
    info = pod.info()
    snap = Snapshot.of(node_infos(nodes))
    _, st = fwk.run_pre_filter(state, info, snap)
    assert st.ok
    out: dict[str, list[str]] = {}
    rows = snap.all_rows
    for rej in plugin_of(fwk, VolumeBinding).filter_nodes(state, info, snap, rows):
        assert rej.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        for i in rows[rej.mask].tolist():
            out[snap.nodes[i].name] = list(rej.reasons)
    return out


MANY = [
    make_node(f"m-{i}").label(ZONE, "abc"[i % 3]).label(HOSTNAME, f"m-{i}").label("rack", str(i % 2))
    for i in range(12)
]
CASES: dict[str, dict[str, Any]] = {
    "dynamic, topology": {
        "pvcs": [pvc("data", storage_class="fast")],
        "classes": [storage_class("fast", topologies={ZONE: ["b"]})],
    },
    "dynamic, capacity": {
        "pvcs": [pvc("data", storage_class="fast", size="10Gi")],
        "classes": [FAST],
        "csi_drivers": [csi_driver("csi.example.com")],
        "capacities": [capacity("r1", "fast", "20Gi", topology={"rack": "1"})],
    },
    "static by zone and rack": {
        "pvcs": [pvc("data", storage_class="local")],
        "classes": [LOCAL],
        "pvs": [
            pv("z-a", storage_class="local", affinity=node_affinity(ZONE, "a")),
            pv("rack-0", storage_class="local", affinity=node_affinity("rack", "0")),
        ],
    },
    "static by node name": {
        "pvcs": [pvc("data", storage_class="local")],
        "classes": [LOCAL],
        "pvs": [
            pv(
                "pinned",
                storage_class="local",
                affinity={
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["m-4"]}]}
                        ]
                    }
                },
            )
        ],
    },
    "selected elsewhere": {
        "pvcs": [
            pvc("data", storage_class="fast", annotations={"volume.kubernetes.io/selected-node": "m-7"})
        ],
        "classes": [FAST],
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batch_filter_agrees_with_the_per_node_filter(case: str) -> None:
    fwk, _, _ = framework(**CASES[case])
    _, st, filtered = run(fwk, POD, MANY)
    assert st.ok
    per_node = reasons(filtered)
    assert per_node, "each case rejects some nodes"
    assert len(per_node) < len(MANY), "and keeps some"
    assert batch_reasons(fwk, POD, MANY) == per_node


def test_reserve_after_the_batch_filter_uses_the_shared_answer() -> None:
    fwk, api, _ = framework(**CASES["static by zone and rack"])
    state = fwk.new_cycle_state()
    info = POD.info()
    snap = Snapshot.of(node_infos(MANY))
    fwk.set_snapshot(snap)
    fwk.run_pre_filter(state, info, snap)
    plugin_of(fwk, VolumeBinding).filter_nodes(state, info, snap, snap.all_rows)
    assert fwk.run_reserve(state, info, "m-3").ok  # zone a, rack 1: only z-a fits
    reserved = state.read("PreFilterVolumeBinding").reserved
    assert [v.name for v, _ in reserved.static] == ["z-a"]
    assert reserved.node_labels[HOSTNAME] == "m-3"
    assert fwk.run_pre_bind(state, info, "m-3").code == Code.ERROR  # nobody binds: times out
    assert [p[1] for p in api.patches] == ["/z-a"]


def test_malformed_storage_class_is_an_event_and_no_other_volume_plugin_crashes() -> None:
    from netsched.plugins.node_volume_limits import NodeVolumeLimits

    bad = storage_class("fast")
    bad["volumeBindingMode"] = "Eventually"
    events = RecordingEvents()
    fwk = build_framework(
        [NodeVolumeLimits, VolumeBinding, CheckCSIStorageCapacity],
        objects=volume_objects(pvcs=[pvc("data", storage_class="fast")], classes=[bad]),
        events=events,
    )
    _, st, _ = run(fwk, POD)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.plugin == "VolumeBinding"
    assert "StorageClass fast: volumeBindingMode: Unsupported value: 'Eventually'" in st.reasons[0]
    assert any("StorageClass fast: volumeBindingMode" in e[4] for e in events.events)


def test_prefilter_reads_only_the_pvs_that_could_serve_the_pod() -> None:
    """Free PVs of the claim's class, the PV pre-bound to it, and malformed PVs (reported); not
    the PVs other claims hold, nor other classes' (kube's assume cache indexes PVs by class)."""
    claim = pvc("data", storage_class="local")
    other = pvc("other", storage_class="local", volume="taken", bound=True)
    pvs = [
        pv("free", storage_class="local"),
        pv("mine", storage_class="local", claim=claim),
        pv("taken", storage_class="local", claim=other),
        pv("elsewhere", storage_class="fast"),
        pv("bad", storage_class="local", affinity=node_affinity(ZONE, "a", operator="Near")),
    ]
    fwk, _, _ = framework(pvcs=[claim, other], pvs=pvs, classes=[LOCAL, FAST])
    binder = plugin_of(fwk, VolumeBinding).binder
    errors: list[Any] = []
    got = binder.reader.volumes_for(["local"], [binder.claim("default", "data")], errors)
    assert [v.name for v in got] == ["free", "mine"]
    assert [str(e) for e in errors] and "PersistentVolume bad" in str(errors[0])
    # A PV that a claim releases (claimRef removed) becomes available in its class again.
    store(fwk).apply("persistentvolumes", "MODIFIED", pv("taken", storage_class="local"))
    assert [v.name for v in binder.reader.volumes_for(["local"], [])] == ["free", "taken"]
