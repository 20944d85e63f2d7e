"""The gang manager's answers (plugins/gangs/manager.py): one definition of a placed member,
Permit's verdicts, releases typed by outcome, the PreEnqueue gate of a short gang, and state
that expires by time with a bound (plugins/gangs/expiring.py)."""

from __future__ import annotations

import dataclasses

import pytest

from netsched.cache import ObjectStore
from netsched.framework import Code, PodInfo, Snapshot
from netsched.plugins.gangs import (
    POD_GROUP_LABEL,
    PODGROUPS_KEY,
    GangManager,
    GangOutcome,
    PermitVerdict,
    PodGroupStatusWriter,
)
from netsched.plugins.gangs import manager as manager_module
from netsched.plugins.gangs.expiring import Expiring
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.handle import MemoryAPI


def _group(min_member: int) -> dict[str, object]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"namespace": "default", "name": "g", "uid": "pg", "resourceVersion": "1"},
        "spec": {"minMember": min_member},
    }


class Rig:
    def __init__(self, min_member: int, pods: int) -> None:
        self.clock = FakeClock()
        self.pods = {
            f"m{i}": make_pod(f"m{i}").label(POD_GROUP_LABEL, "g").req(cpu="1").info() for i in range(pods)
        }
        objects = ObjectStore({PODGROUPS_KEY: [_group(min_member)]})
        writer = PodGroupStatusWriter(MemoryAPI(), inline=True)
        self.gangs = GangManager(self.clock, objects, lambda _ns, _n: list(self.pods.values()), writer)
        pg = self.gangs.group_of(self.pods["m0"])
        assert pg is not None
        self.pg = pg

    def reserve(self, name: str, node: str) -> PodInfo:
        """The member assumed on `node` (the cache's copy), and the Reserve the plugin runs."""
        pod = self.pods[name] = dataclasses.replace(self.pods[name], node_name=node)
        self.gangs.reserved(pod)
        return pod

    def permit(self, name: str) -> PermitVerdict:
        return self.gangs.permit(self.pods[name], self.pg, 10.0, "p").verdict


def test_permit_does_not_allow_a_gang_on_members_just_released() -> None:
    """m0 and m1 wait at Permit; the gang is released (m2 fit nowhere, say), and before their
    binding cycles unreserve them the cache still shows them on their nodes.  m2, reserved
    now, must wait: the released members are not placed, by the one definition Permit,
    PostFilter, the status and GangTopology share.  Reserved again, they count again."""
    r = Rig(min_member=3, pods=3)
    r.reserve("m0", "n0")
    assert r.permit("m0") is PermitVerdict.WAIT
    r.reserve("m1", "n1")
    assert r.permit("m1") is PermitVerdict.WAIT
    waiting = [r.pods["m0"].uid, r.pods["m1"].uid]  # what the shell rejected at Permit
    released = r.gangs.release(r.pg, "m2 fits nowhere", GangOutcome.REJECTED, waiting)
    assert released is not None and released.outcome is GangOutcome.REJECTED
    assert "2 of 3 placed, released" in released.message
    # Released, though still on their nodes until their bindings unreserve them.
    assert [p.name for p in r.gangs.placed(r.pg)] == []
    r.reserve("m2", "n2")
    assert r.permit("m2") is PermitVerdict.WAIT  # not ALLOW on the released m0 and m1
    assert [p.name for p in r.gangs.placed(r.pg)] == ["m2"]
    r.reserve("m0", "n0")
    r.reserve("m1", "n1")
    assert r.permit("m1") is PermitVerdict.ALLOW
    assert r.gangs.runs(r.pg)


def test_a_release_without_an_outcome_tells_a_timeout_from_a_rejection() -> None:
    r = Rig(min_member=2, pods=2)
    r.reserve("m0", "n0")
    assert r.permit("m0") is PermitVerdict.WAIT
    r.clock.step(10.0)  # the whole wait
    got = r.gangs.release(r.pg, "unreserved", None, [r.pods["m0"].uid])
    assert got is not None and got.outcome is GangOutcome.TIMED_OUT and got.ended is not None
    assert r.gangs.release(r.pg, "again", None, []) is None  # no attempt left to end


def test_permit_answers_the_siblings_to_wake() -> None:
    r = Rig(min_member=3, pods=3)
    r.reserve("m0", "n0")
    answer = r.gangs.permit(r.pods["m0"], r.pg, 10.0, "p")
    assert answer.verdict is PermitVerdict.WAIT and answer.more == 2
    assert sorted(p.name for p in answer.siblings) == ["m1", "m2"]
    assert r.gangs.waiting_gangs("p") == 1 and r.gangs.waiting_gangs("other") == 0


def test_a_short_gang_holds_its_next_members_out_until_the_count_is_reached() -> None:
    r = Rig(min_member=3, pods=1)
    m0 = r.pods["m0"]
    assert r.gangs.gate(m0, r.pg).ok  # nobody was turned away yet: tried, and turned away
    assert r.gangs.pre_filter(m0, r.pg, _empty_snapshot(), 60.0).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    r.pods["m1"] = make_pod("m1").label(POD_GROUP_LABEL, "g").info()
    held = r.gangs.gate(r.pods["m1"], r.pg)
    assert held.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "waiting for 1 more" in held.message()
    r.pods["m2"] = make_pod("m2").label(POD_GROUP_LABEL, "g").info()
    assert r.gangs.gate(r.pods["m2"], r.pg).ok  # it completes the count
    assert [g for g, _ in r.gangs.no_longer_short()] == ["default/g"]  # the periodic task wakes them
    assert r.gangs.no_longer_short() == []
    r.pods.pop("m2")
    assert r.gangs.pre_filter(m0, r.pg, _empty_snapshot(), 60.0).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert r.gangs.no_longer_short() == []  # still short: nothing to wake
    r.clock.step(301.0)  # what the manager remembers ends
    assert r.gangs.gate(r.pods["m1"], r.pg).ok


def _empty_snapshot() -> Snapshot:
    return Snapshot()


def test_expiring_entries_end_by_time_and_the_map_keeps_its_bound() -> None:
    m: Expiring[int] = Expiring(bound=3)
    m.put("a", 1, until=10.0, now=0.0)
    assert m.get("a", now=5.0) == 1 and m.remaining("a", now=5.0) == 5.0
    assert m.ended("a", now=10.0) and m.get("a", now=10.0) is None and len(m) == 0
    for i, k in enumerate("bcde"):
        m.put(k, i, until=100.0, now=0.0)
    assert len(m) == 3 and m.get("b", now=1.0) is None  # the oldest went past the bound
    m.put("f", 9, until=1.0, now=0.0)  # over the bound again: c, the oldest, goes
    assert len(m) == 3 and m.get("c", now=0.5) is None
    m.put("g", 7, until=100.0, now=2.0)  # over the bound with f ended: f goes, not d
    assert m.get("d", now=2.0) == 2 and m.get("f", now=0.5) is None
    assert m.take_ended(now=50.0) == [] and m.take_ended(now=200.0) == ["d", "e", "g"] and len(m) == 0


def test_the_groups_seen_are_a_bounded_memory_and_a_deleted_group_is_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PreFilter remembers each group it recomputed a status for (once), and first_time each
    Event sent: bounded, whatever the number of gangs over the scheduler's life."""
    monkeypatch.setattr(manager_module, "SEEN_BOUND", 50)
    clock = FakeClock()
    groups = [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"namespace": "default", "name": f"g{i}", "uid": f"pg{i}", "resourceVersion": "1"},
            "spec": {"minMember": 1},
        }
        for i in range(500)
    ]
    objects = ObjectStore({PODGROUPS_KEY: groups})
    pods = {f"g{i}": [make_pod(f"m{i}").label(POD_GROUP_LABEL, f"g{i}").info()] for i in range(500)}
    gm = GangManager(clock, objects, lambda _ns, n: pods[n], PodGroupStatusWriter(MemoryAPI(), inline=True))
    for i in range(500):
        pod = pods[f"g{i}"][0]
        pg = gm.group_of(pod)
        assert pg is not None
        assert gm.pre_filter(pod, pg, Snapshot(), 10.0).ok
        assert gm.first_time("default", f"g{i}", "bad")
        clock.step(1.0)
    assert len(gm._seen) <= 50
    assert not gm.first_time("default", "g499", "bad")  # recent ones are remembered
    objects.apply(PODGROUPS_KEY, "DELETED", groups[499])
    assert gm.status_of("default/g499") is None
    assert gm._seen.get("default/g499", clock.now()) is None


def test_a_podgroup_reference_keeps_the_uid_and_version() -> None:
    r = Rig(min_member=2, pods=2)
    ref = r.gangs.ref_of("default", "g")
    assert (ref.name, ref.uid, ref.resource_version) == ("g", "pg", "1")
    assert r.gangs.ref_of("default", "gone").uid == ""  # deleted: the name is all there is


def test_min_resources_counts_only_the_placed_members_as_the_gangs_own_room() -> None:
    """The gang's own placed members' requests count as free for its minResources check; a
    released member (still on its node until unreserved) is not the gang's any more."""
    from netsched.testing.builders import make_node, node_infos

    group = _group(2)
    group["spec"] = {"minMember": 2, "minResources": {"cpu": "2"}}
    clock = FakeClock()
    m0 = make_pod("m0").label(POD_GROUP_LABEL, "g").req(cpu="1").node("n0")
    pods = [m0.info(), make_pod("m1").label(POD_GROUP_LABEL, "g").req(cpu="1").info()]
    gm = GangManager(
        clock,
        ObjectStore({PODGROUPS_KEY: [group]}),
        lambda _ns, _n: pods,
        PodGroupStatusWriter(MemoryAPI(), inline=True),
    )
    snap = Snapshot.of(node_infos([make_node("n0").capacity(cpu="2", pods="10")], [m0]))
    pg = gm.group_of(pods[1])
    assert pg is not None
    assert gm.pre_filter(pods[1], pg, snap, 10.0).ok  # 1 cpu free + m0's own 1 cpu
    gm.release(pg, "m1 fits nowhere", GangOutcome.REJECTED, [pods[0].uid])
    got = gm.pre_filter(pods[1], pg, snap, 10.0)
    assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "resource gap: cpu: 1" in got.message()
