"""Coscheduling through the real scheduler over an in-memory cluster: every extension point,
all-or-nothing gangs, timeouts, and zero reservations held after every failed gang."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from netsched.app import build_registry
from netsched.clock import ManualClock
from netsched.config import ConfigError, load_config
from netsched.framework import (
    ASSIGNED_POD,
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    Fields,
    QueuedPodInfo,
)
from netsched.framework.fields import ErrorList
from netsched.inmemory import InMemoryCluster
from netsched.plugins.coscheduling import (
    LEGACY_POD_GROUP_LABEL,
    POD_GROUP_LABEL,
    Coscheduling,
    CoschedulingArgs,
)
from netsched.queue import UNSCHEDULABLE
from netsched.testing.builders import make_node, make_pod

SEED = Path(__file__).resolve().parents[2] / "examples" / "coscheduling" / "config.yaml"
PG = "scheduling.x-k8s.io/podgroups"


def podgroup(name: str, min_member: int, *, created: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "namespace": "default",
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": f"2024-01-01T00:00:{created:02d}Z",
        },
        "spec": {"minMember": min_member, **spec},
    }


def cluster(nodes: int = 2, cpu: str = "4", observe: bool = False) -> InMemoryCluster:
    registry = build_registry()
    cfg = load_config(SEED.read_text(), registry)
    c = InMemoryCluster(cfg, registry, clock=ManualClock(), keep_events=True, observe=observe)
    c.add_nodes([make_node(f"n{i}").capacity(cpu=cpu, pods="110").obj() for i in range(nodes)])
    return c


def gang(c: InMemoryCluster, group: str, n: int, cpu: str = "2", label: str = POD_GROUP_LABEL) -> None:
    for i in range(n):
        c.add_pod(make_pod(f"{group}{i}").label(label, group).req(cpu=cpu).obj())


def held(c: InMemoryCluster) -> tuple[int, int]:
    """(assumed pods in the cache, pods in the waiting map)."""
    fwk = c.frameworks["default-scheduler"]
    return c.cache.assumed_count(), sum(1 for _ in fwk.iterate_waiting_pods())


def failed(c: InMemoryCluster, pod: str) -> str:
    """The pod's latest FailedScheduling message (events are recorded on the scheduling thread)."""
    msgs = [e[3] for e in c.events.events if e[0] == pod and e[2] == "FailedScheduling"]
    assert msgs, f"no FailedScheduling for {pod}"
    return msgs[-1]


def plugin(c: InMemoryCluster) -> Coscheduling:
    p = c.frameworks["default-scheduler"].plugins["Coscheduling"]
    assert isinstance(p, Coscheduling)
    return p


def status(c: InMemoryCluster, name: str) -> dict[str, Any]:
    obj = c.objects.get(PG, "default", name)
    assert obj is not None
    return dict(obj.get("status") or {})


def test_seed_config_loads_unchanged_with_deprecation_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = load_config(SEED.read_text(), build_registry())
    assert any("Deprecated" in r.getMessage() for r in caplog.records)
    plugins = cfg.profiles[0].plugins
    assert [r.name for r in plugins["queueSort"]] == ["Coscheduling"]
    for point in ("preFilter", "postFilter", "permit", "reserve"):
        assert "Coscheduling" in [r.name for r in plugins[point]], point
    assert cfg.profiles[0].plugin_config["Coscheduling"] == CoschedulingArgs(10, 3)


def test_args_alias_and_errors() -> None:
    def decode(raw: dict[str, Any]) -> tuple[CoschedulingArgs, list[str]]:
        errs = ErrorList()
        out = CoschedulingArgs.decode(Fields(raw, "args", errs))
        return out, [str(e) for e in errs]

    assert decode({})[0] == CoschedulingArgs(60, 0)
    assert decode({"deniedPGExpirationTimeSeconds": 3})[0].pod_group_backoff_seconds == 3
    assert decode({"podGroupBackoffSeconds": 5})[0].pod_group_backoff_seconds == 5
    _, errs = decode({"podGroupBackoffSeconds": 5, "deniedPGExpirationTimeSeconds": 3})
    assert errs and "deniedPGExpirationTimeSeconds" in errs[0]
    _, errs = decode({"permitWaitingTimeSeconds": -1})
    assert errs and "args.permitWaitingTimeSeconds" in errs[0]
    with pytest.raises(ConfigError, match="bogus"):
        load_config(SEED.read_text().replace("permitWaitingTimeSeconds", "bogus"), build_registry())


def test_two_gangs_that_fit_only_alone_get_all_or_nothing() -> None:
    c = cluster()  # room for 4 pods of 2 cpu
    c.add_object(PG, podgroup("a", 4, created=1))
    c.add_object(PG, podgroup("b", 4, created=2))
    # Interleaved arrival: the queue sort still keeps each gang together (a first).
    for i in range(4):
        for g in ("b", "a"):
            c.add_pod(make_pod(f"{g}{i}").label(POD_GROUP_LABEL, g).req(cpu="2").obj())
    c.schedule_pending()
    assert sorted(c.placements) == [f"default/a{i}" for i in range(4)]
    assert held(c) == (0, 0)
    assert status(c, "a") == {"phase": "Scheduled", "scheduled": 4, "running": 0}
    assert status(c, "b")["phase"] == "PreScheduling"
    assert "PodGroup default/b gets rejected due to Pod b0" in failed(c, "default/b0")
    # Backoff: the rest of b is turned away at PreFilter without a full cycle.
    assert "podGroup default/b failed recently" in failed(c, "default/b1")


def test_members_queued_before_their_podgroups_are_sorted_again_when_the_groups_arrive() -> None:
    c = cluster()  # room for 4 pods of 2 cpu
    # The informers list pods and PodGroups in parallel: here every pod is queued first, keyed
    # by its own arrival (b0, a0, b1, ...), and the groups arrive before the first cycle.
    assert isinstance(c.clock, ManualClock)
    for i in range(4):
        for g in ("b", "a"):
            c.add_pod(make_pod(f"{g}{i}").label(POD_GROUP_LABEL, g).req(cpu="2").obj())
            c.clock.step(0.01)
    c.add_object(PG, podgroup("a", 4, created=1))
    c.add_object(PG, podgroup("b", 4, created=2))
    c.schedule_pending()
    assert sorted(c.placements) == [f"default/a{i}" for i in range(4)]
    # Gang a went first whole: b never held anything it had to give back.
    assert not [e for e in c.events.events if e[2] == "GangReleased"]
    assert held(c) == (0, 0)


def test_a_pod_freed_by_a_released_gang_is_retried_at_once() -> None:
    c = cluster(nodes=1)  # 4 cpu
    c.add_object(PG, podgroup("g", 2, scheduleTimeoutSeconds=5))
    c.add_pod(make_pod("g0").label(POD_GROUP_LABEL, "g").req(cpu="2").obj())
    c.add_pod(make_pod("g1").label(POD_GROUP_LABEL, "g").req(cpu="2").gate("hold").obj())
    c.schedule_pending()
    assert held(c) == (1, 1)  # g0 reserved, waiting for g1
    c.add_pod(make_pod("solo").uid("uid-solo").req(cpu="3").obj())
    c.schedule_pending()
    assert "Insufficient cpu" in failed(c, "default/solo")
    assert c.queue.where("uid-solo") == UNSCHEDULABLE
    assert isinstance(c.clock, ManualClock)
    c.clock.step(5.0)  # g times out: g0 is unreserved and forgotten ...
    c.schedule_pending()
    # ... which frees its room as a deleted pod would (kube's handleBindingCycleError), so the
    # pod turned away for lack of it is retried, not left for an unrelated event or the flush.
    assert c.placements == {"default/solo": "n0"}
    assert held(c) == (0, 0)


def test_a_backed_off_gang_is_retried_when_its_backoff_ends_in_an_idle_cluster() -> None:
    c = cluster(nodes=1)  # room for 2 pods of 2 cpu; the seed config backs a gang off for 3 s
    c.add_object(PG, podgroup("a", 2, created=1))
    c.add_object(PG, podgroup("b", 2, created=2))
    gang(c, "a", 2)
    gang(c, "b", 2)
    c.schedule_pending()
    assert sorted(c.placements) == ["default/a0", "default/a1"]
    assert "podGroup default/b failed recently" in failed(c, "default/b1")
    assert isinstance(c.clock, ManualClock)
    c.clock.step(1.0)
    for key in ("default/a0", "default/a1"):  # gang a ends while b is still backed off
        gone = c.cache.find_pod(key)
        assert gone is not None
        c.delete_pod(gone)
    c.schedule_pending()
    assert not [k for k in c.placements if k.startswith("default/b")]
    # Nothing else happens in the cluster: the end of the backoff itself retries the gang
    # (before: its members waited for an unrelated event or the 5-minute flush).
    c.clock.step(3.0)
    c.schedule_pending()
    assert sorted(k for k in c.placements if k.startswith("default/b")) == ["default/b0", "default/b1"]
    assert held(c) == (0, 0)


def test_metrics_count_waiting_gangs_and_how_their_attempts_end() -> None:
    c = cluster(observe=True)
    assert c.metrics is not None
    sample = c.metrics.registry.get_sample_value
    c.add_object(PG, podgroup("a", 3, scheduleTimeoutSeconds=5))
    gang(c, "a", 2)
    c.add_pod(make_pod("a2").label(POD_GROUP_LABEL, "a").req(cpu="2").gate("hold").obj())
    c.schedule_pending()
    assert sample("netsched_gangs_waiting", {"profile": "default-scheduler"}) == 1
    assert isinstance(c.clock, ManualClock)
    c.clock.step(5.0)
    c.schedule_pending()
    assert sample("netsched_gangs_waiting", {"profile": "default-scheduler"}) == 0
    labels = {"outcome": "timed_out", "profile": "default-scheduler"}
    assert sample("netsched_gang_outcomes_total", labels) == 1


def test_gang_that_cannot_finish_releases_its_reservations() -> None:
    c = cluster()
    c.add_object(PG, podgroup("a", 3))
    gang(c, "a", 2)
    c.add_pod(make_pod("a2").label(POD_GROUP_LABEL, "a").req(cpu="8").obj())  # fits nowhere
    c.schedule_pending()
    assert c.placements == {}
    assert held(c) == (0, 0)
    assert any(e[2] == "GangReleased" and e[0] == "default/a" for e in c.events.events)


def test_too_few_members_is_rejected_at_prefilter_with_what_is_missing() -> None:
    c = cluster()
    c.add_object(PG, podgroup("a", 3))
    gang(c, "a", 2)
    c.schedule_pending()
    msg = failed(c, "default/a0")
    assert "cannot find enough sibling pods, current pods number: 2, minMember of group: 3" in msg
    assert "waiting for 1 more" in msg
    assert held(c) == (0, 0)
    assert status(c, "a")["phase"] == "Pending"


def test_missing_and_malformed_podgroups_are_reported_not_crashed() -> None:
    c = cluster()
    c.add_pod(make_pod("x").label(POD_GROUP_LABEL, "nope").req(cpu="1").obj())
    c.add_object(PG, podgroup("bad", 2, minResources={"cpu": "lots"}))
    c.add_pod(make_pod("y").label(POD_GROUP_LABEL, "bad").req(cpu="1").obj())
    c.schedule_pending()
    assert "PodGroup default/nope not found" in failed(c, "default/x")
    assert "PodGroup default/bad: spec.minResources.cpu: invalid quantity 'lots'" in failed(c, "default/y")
    assert any(e[0] == "default/bad" and e[2] == "InvalidPodGroup" for e in c.events.events)


def test_min_resources_beyond_the_cluster_is_a_clear_failure() -> None:
    c = cluster()
    c.add_object(PG, podgroup("big", 2, minResources={"cpu": "10"}))
    gang(c, "big", 2, cpu="1")
    c.schedule_pending()
    assert "podGroup default/big cannot fit the cluster: resource gap: cpu: 2" in failed(c, "default/big0")
    assert held(c) == (0, 0)


def test_permit_waits_then_times_out_and_releases_everything() -> None:
    c = cluster()
    c.add_object(PG, podgroup("a", 3, scheduleTimeoutSeconds=5))
    gang(c, "a", 2)
    c.add_pod(make_pod("a2").label(POD_GROUP_LABEL, "a").req(cpu="2").gate("hold").obj())
    c.schedule_pending()
    assert c.placements == {}
    assert held(c) == (2, 2)  # reserved on their nodes, waiting at Permit
    assert status(c, "a") == {"phase": "Scheduling", "scheduled": 0, "running": 0}
    waiting = [e for e in c.events.events if e[2] == "WaitingForGang"]
    assert waiting[0][3] == "waiting for 2 more pods of group a"
    assert waiting[1][3] == "waiting for 1 more pod of group a"
    # A member deleted while the others wait: the wait can only end in the timeout.
    pending = c.handlers.pending_pod_by_key("default/a2")
    assert pending is not None
    c.delete_pod(pending)
    assert isinstance(c.clock, ManualClock)
    c.clock.step(5.0)
    c.schedule_pending()
    assert held(c) == (0, 0)
    released = [e for e in c.events.events if e[2] == "GangReleased"]
    assert released == [
        ("default/a", "Warning", "GangReleased", "group a timed out after 5s: 2 of 3 placed, released")
    ]
    assert status(c, "a")["phase"] == "Pending"
    # Two of three members exist: no event can help them (our own status writes move
    # nothing), so they stay parked instead of being retried on every cluster event.
    c.clock.step(10.0)
    c.queue.flush_backoff_completed()
    assert c.schedule_pending() == 0
    parked = [c.handlers.pending_pod_by_key(f"default/a{i}") for i in range(2)]
    assert [c.queue.where(p.uid) for p in parked if p is not None] == [UNSCHEDULABLE, UNSCHEDULABLE]
    # A replacement member arrives: it is tried itself and wakes the others at Permit.
    c.add_pod(make_pod("a3").label(POD_GROUP_LABEL, "a").req(cpu="2").obj())
    c.schedule_pending()
    assert sorted(c.placements) == ["default/a0", "default/a1", "default/a3"]
    assert held(c) == (0, 0)


def test_gang_completes_when_the_last_member_arrives_and_legacy_label_works() -> None:
    c = cluster()
    c.add_object(PG, podgroup("a", 3))
    gang(c, "a", 2, label=LEGACY_POD_GROUP_LABEL)
    c.add_pod(make_pod("a2").label(LEGACY_POD_GROUP_LABEL, "a").req(cpu="2").gate("hold").obj())
    c.schedule_pending()
    assert held(c) == (2, 2)
    ungated = make_pod("a2").label(LEGACY_POD_GROUP_LABEL, "a").req(cpu="2").obj()
    ungated["metadata"]["resourceVersion"] = "2"
    c.handlers.on_pod_event("MODIFIED", ungated)
    c.schedule_pending()
    assert sorted(c.placements) == ["default/a0", "default/a1", "default/a2"]
    assert held(c) == (0, 0)
    assert status(c, "a") == {"phase": "Scheduled", "scheduled": 3, "running": 0}


def test_queue_sort_keeps_a_gang_together_after_priority() -> None:
    c = cluster()
    c.add_object(PG, podgroup("early", 2, created=1))
    c.add_object(PG, podgroup("late", 2, created=9))
    p = plugin(c)

    def qp(name: str, group: str = "", prio: int = 0, ts: float = 0.0) -> QueuedPodInfo:
        b = make_pod(name).priority(prio)
        if group:
            b = b.label(POD_GROUP_LABEL, group)
        return QueuedPodInfo(b.info(), timestamp=ts, initial_attempt_timestamp=ts)

    assert p.less(qp("x", "early", ts=50), qp("y", "late", ts=1))
    assert p.less(qp("y", "late", prio=10), qp("x", "early"))
    assert not p.less(qp("x", "early"), qp("z", "early")) and not p.less(qp("z", "early"), qp("x", "early"))


def test_members_arriving_one_by_one_are_woken_when_the_gang_can_start() -> None:
    c = cluster()
    c.add_object(PG, podgroup("a", 3))
    for i in range(3):
        c.add_pod(make_pod(f"a{i}").label(POD_GROUP_LABEL, "a").req(cpu="2").obj())
        c.schedule_pending()  # a0, a1: too few members yet, parked as unschedulable
    # a2 passes PreFilter and waits at Permit, waking a0 and a1 (no time passes, no flush).
    assert sorted(c.placements) == ["default/a0", "default/a1", "default/a2"]
    assert held(c) == (0, 0)


def test_a_gated_member_that_completes_the_count_wakes_the_members_turned_away() -> None:
    # A gated member is never tried itself, so it cannot wake its siblings at Permit: its
    # arrival does (the informers may deliver it after its siblings were tried).
    c = cluster()
    c.add_object(PG, podgroup("a", 3))
    gang(c, "a", 2)
    c.schedule_pending()  # too few members: parked as unschedulable
    uids = [p.uid for i in range(2) if (p := c.handlers.pending_pod_by_key(f"default/a{i}")) is not None]
    assert [c.queue.where(u) for u in uids] == [UNSCHEDULABLE, UNSCHEDULABLE]
    c.add_pod(make_pod("a2").label(POD_GROUP_LABEL, "a").req(cpu="2").gate("hold").obj())
    assert all(c.queue.where(u) != UNSCHEDULABLE for u in uids)
    assert isinstance(c.clock, ManualClock)
    c.clock.step(2.0)
    c.queue.flush_backoff_completed()
    c.schedule_pending()
    assert held(c) == (2, 2)  # both wait at Permit for the gated one


def test_an_arriving_member_counts_the_gang_once_for_all_its_parked_siblings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = cluster(nodes=4)
    c.add_object(PG, podgroup("a", 5))
    gang(c, "a", 3)
    c.schedule_pending()  # too few members: parked as unschedulable
    uids = [p.uid for i in range(3) if (p := c.handlers.pending_pod_by_key(f"default/a{i}")) is not None]
    assert [c.queue.where(u) for u in uids] == [UNSCHEDULABLE] * 3
    gangs = plugin(c).gangs
    listed = []
    members = gangs.members

    def counting(pg: Any) -> Any:
        listed.append(pg.full_name)
        return members(pg)

    monkeypatch.setattr(gangs, "members", counting)
    c.add_pod(make_pod("a3").label(POD_GROUP_LABEL, "a").req(cpu="2").gate("hold").obj())
    assert [c.queue.where(u) for u in uids] == [UNSCHEDULABLE] * 3  # 4 of 5: still too few
    assert listed == ["default/a"]  # one member list for the three siblings asked
    c.add_pod(make_pod("a4").label(POD_GROUP_LABEL, "a").req(cpu="2").gate("hold").obj())
    assert all(c.queue.where(u) != UNSCHEDULABLE for u in uids)  # the next arrival is counted anew
    assert listed == ["default/a", "default/a"]


def test_a_member_that_leaves_the_gang_short_wakes_nobody() -> None:
    c = cluster()
    c.add_object(PG, podgroup("a", 4))
    gang(c, "a", 2)
    c.schedule_pending()
    uids = [p.uid for i in range(2) if (p := c.handlers.pending_pod_by_key(f"default/a{i}")) is not None]
    c.add_pod(make_pod("a2").label(POD_GROUP_LABEL, "a").req(cpu="2").gate("hold").obj())
    c.add_pod(make_pod("b0").label(POD_GROUP_LABEL, "b").req(cpu="2").gate("hold").obj())
    assert [c.queue.where(u) for u in uids] == [UNSCHEDULABLE, UNSCHEDULABLE]


def _pg_update(name: str, min_member: int, **status: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    old = podgroup(name, min_member)
    new = {**old, "metadata": {**old["metadata"], "resourceVersion": "2"}, "status": status}
    return old, new


def _annotated(name: str, min_member: int, **annotations: str) -> tuple[dict[str, Any], dict[str, Any]]:
    old = podgroup(name, min_member)
    return old, {**old, "metadata": {**old["metadata"], "resourceVersion": "2", "annotations": annotations}}


GROUP_ADD = ClusterEvent("PodGroup", ActionType.ADD)
GROUP_UPDATE = ClusterEvent("PodGroup", ActionType.UPDATE_OTHER)
NODE_ADD = ClusterEvent(NODE, ActionType.ADD)
POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
PENDING_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)
MEMBER = make_pod("a9").label(POD_GROUP_LABEL, "a").node("n0").info()
STRANGER = make_pod("b0").label(POD_GROUP_LABEL, "b").node("n0").info()
PENDING = make_pod("a8").label(POD_GROUP_LABEL, "a").info()
PENDING_STRANGER = make_pod("b1").label(POD_GROUP_LABEL, "b").info()
OTHER_NS = {**podgroup("a", 2), "metadata": {**podgroup("a", 2)["metadata"], "namespace": "other"}}


@pytest.mark.parametrize(
    ("case", "happened", "spec", "backed_off_for", "old", "new", "want"),
    [
        # backed_off_for: the group backed off for 10 s, then this much simulated time passed.
        ("own group added", GROUP_ADD, {}, None, None, podgroup("a", 2), "Queue"),
        ("another group added", GROUP_ADD, {}, None, None, podgroup("b", 2), "QueueSkip"),
        ("same name in another namespace", GROUP_ADD, {}, None, None, OTHER_NS, "QueueSkip"),
        ("own group's status written", GROUP_UPDATE, {}, None, *_pg_update("a", 2, phase="x"), "QueueSkip"),
        ("own group's other annotation", GROUP_UPDATE, {}, None, *_annotated("a", 2, note="x"), "QueueSkip"),
        (
            "own group's topology annotation",
            GROUP_UPDATE,
            {},
            None,
            *_annotated("a", 2, **{"netsched.io/topology-required": "rack"}),
            "Queue",
        ),
        (
            "own group's minMember lowered",
            GROUP_UPDATE,
            {},
            None,
            podgroup("a", 3),
            podgroup("a", 2),
            "Queue",
        ),
        (
            "another group's minMember lowered",
            GROUP_UPDATE,
            {},
            None,
            podgroup("b", 3),
            podgroup("b", 2),
            "QueueSkip",
        ),
        ("a member bound", POD_ADD, {}, None, None, MEMBER, "Queue"),
        ("a pod of another group bound", POD_ADD, {}, None, None, STRANGER, "QueueSkip"),
        ("a pod of another group bound, backoff over", POD_ADD, {}, 11.0, None, STRANGER, "Queue"),
        ("a pod of another group bound, still backed off", POD_ADD, {}, 5.0, None, STRANGER, "QueueSkip"),
        # A pending member completing the count: test_a_gated_member_that_completes_the_count...
        ("a pending member added, still too few", PENDING_ADD, {}, None, None, PENDING, "QueueSkip"),
        ("a pending pod of another group added", PENDING_ADD, {}, None, None, PENDING_STRANGER, "QueueSkip"),
        ("node added, no minResources", NODE_ADD, {}, None, None, None, "QueueSkip"),
        ("node added, minResources", NODE_ADD, {"minResources": {"cpu": "1"}}, None, None, None, "Queue"),
        (
            "pod deleted, malformed group",
            POD_DELETE,
            {"minResources": {"cpu": "lots"}},
            None,
            STRANGER,
            None,
            "QueueSkip",
        ),
    ],
)
def test_queueing_hints_name_what_can_undo_each_rejection(
    case: str,
    happened: ClusterEvent,
    spec: dict[str, Any],
    backed_off_for: float | None,
    old: Any,
    new: Any,
    want: str,
) -> None:
    c = cluster()
    p = plugin(c)
    c.add_object(PG, podgroup("a", 3, **spec))
    pod = make_pod("a0").label(POD_GROUP_LABEL, "a").info()
    assert isinstance(c.clock, ManualClock)
    if backed_off_for is not None:
        p.gangs.backed_off.add("default/a", c.clock.now(), 10)
        c.clock.step(backed_off_for)
    regs = [r for r in p.events_to_register() if r.event.match(happened)]
    assert len(regs) == 1, (case, regs)
    hint = regs[0].hint
    assert hint is not None
    assert hint(pod, old, new).value == want, case


def test_a_parked_gang_ignores_unrelated_events_and_moves_when_its_group_changes() -> None:
    c = cluster()
    c.add_object(PG, podgroup("a", 3))
    gang(c, "a", 2)
    c.schedule_pending()
    parked = [c.handlers.pending_pod_by_key(f"default/a{i}") for i in range(2)]
    uids = [p.uid for p in parked if p is not None]
    assert [c.queue.where(u) for u in uids] == [UNSCHEDULABLE, UNSCHEDULABLE]
    c.add_node(make_node("n9").capacity(cpu="4", pods="110").obj())  # room does not help: too few
    c.add_object(PG, {**podgroup("a", 3), "status": {"phase": "Pending"}}, kind="MODIFIED")
    assert [c.queue.where(u) for u in uids] == [UNSCHEDULABLE, UNSCHEDULABLE]
    lowered = podgroup("a", 2)
    lowered["metadata"]["resourceVersion"] = "3"
    c.add_object(PG, lowered, kind="MODIFIED")  # minMember 3 -> 2: the two can start
    assert all(c.queue.where(u) != UNSCHEDULABLE for u in uids)
    assert isinstance(c.clock, ManualClock)
    c.clock.step(2.0)
    c.queue.flush_backoff_completed()
    c.schedule_pending()
    assert sorted(c.placements) == ["default/a0", "default/a1"]


def test_a_permit_during_a_release_does_not_count_the_members_being_rejected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The binding thread releases the gang (m1 unreserved) and rejects the waiting m0; the
    scheduling thread's Permit of m2 runs between two rejections (here: inside m0's reject).
    The release is recorded before any rejection, so m2 waits: no gang allowed on members
    being rejected (one bound of three, no GangReleased)."""
    import dataclasses

    from test_gang_manager import Rig

    from netsched.plugins.gangs import PermitVerdict

    r = Rig(min_member=3, pods=3)
    r.reserve("m0", "n0")
    assert r.permit("m0") is PermitVerdict.WAIT
    m1 = r.reserve("m1", "n1")
    assert r.permit("m1") is PermitVerdict.WAIT
    c = cluster()
    p = plugin(c)
    monkeypatch.setattr(p, "gangs", r.gangs)
    verdicts: list[PermitVerdict] = []

    @dataclasses.dataclass
    class Waiting:
        pod: Any

        def reject(self, plugin: str, msg: str) -> None:
            r.reserve("m2", "n2")  # the scheduling thread, meanwhile
            verdicts.append(r.permit("m2"))

    monkeypatch.setattr(r.gangs, "waiting", lambda _h, _g: [Waiting(r.pods["m0"])])
    p._release(r.pg, "m1 unreserved", None, m1)
    assert verdicts == [PermitVerdict.WAIT]
    assert any(e[2] == "GangReleased" for e in c.events.events)


def test_the_event_about_a_malformed_podgroup_carries_its_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    """kubectl describe podgroup finds the group's events by uid: the reference keeps it."""
    from netsched.framework import ObjectRef

    c = cluster()
    refs: list[ObjectRef] = []
    real = c.events.event

    def event(obj: Any, *rest: str) -> None:
        if isinstance(obj, ObjectRef):
            refs.append(obj)
        real(obj, *rest)

    monkeypatch.setattr(c.events, "event", event)
    c.add_object(PG, podgroup("bad", 2, minResources={"cpu": "lots"}))
    c.add_pod(make_pod("y").label(POD_GROUP_LABEL, "bad").req(cpu="1").obj())
    c.schedule_pending()
    assert [(r.name, r.uid) for r in refs] == [("bad", "uid-bad")]
