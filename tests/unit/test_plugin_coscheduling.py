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
from netsched.framework import Fields, QueuedPodInfo
from netsched.framework.fields import ErrorList
from netsched.inmemory import InMemoryCluster
from netsched.testing.builders import make_node, make_pod
from plugins.coscheduling import LEGACY_POD_GROUP_LABEL, POD_GROUP_LABEL, Coscheduling, CoschedulingArgs

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


def cluster(nodes: int = 2, cpu: str = "4") -> InMemoryCluster:
    registry = build_registry()
    cfg = load_config(SEED.read_text(), registry)
    c = InMemoryCluster(cfg, registry, clock=ManualClock(), keep_events=True)
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
    c.clock.step(10.0)
    c.queue.flush_backoff_completed()
    c.schedule_pending()
    assert "current pods number: 2, minMember of group: 3" in failed(c, "default/a0")
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
