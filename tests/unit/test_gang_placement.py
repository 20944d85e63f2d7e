"""One placement decision per gang (plugins/gangs/placement.py through GangTopology), rule by rule.

Every test runs the real scheduler over an in-memory cluster of racks (Coscheduling plus
GangTopology, link load from a fake Prometheus through the real metrics hub) and checks
where each gang's members land, what the decision considered, and that a gang that is not
placed holds nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from netsched.app import build_registry
from netsched.config import load_config
from netsched.framework import LABEL_HOSTNAME
from netsched.inmemory import InMemoryCluster
from netsched.metrics import LINK_SPEED, NETWORK_RX, NETWORK_TX
from netsched.plugins.coscheduling import POD_GROUP_LABEL
from netsched.plugins.gang_topology import GangTopology
from netsched.plugins.gang_topology import plugin as gang_topology_plugin
from netsched.plugins.gangs import GANGS, TOPOLOGY_PREFERRED, TOPOLOGY_REQUIRED, Placement, derive
from netsched.plugins.gangs.domains import domain_rows, domains_at
from netsched.queue import UNSCHEDULABLE
from netsched.testing.builders import make_node, make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import FakePrometheus, fake_hub

PG = "scheduling.x-k8s.io/podgroups"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"
GBIT = 125_000_000.0  # bytes/s
# zone z1: racks r1, r2; zone z2: rack r3. Three nodes per rack.
RACKS = {"r1": "z1", "r2": "z1", "r3": "z2"}


def config(**args: Any) -> str:
    gang_args = {"levels": [ZONE, RACK], **args}
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "netsched",
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "Coscheduling"}, {"name": "GangTopology", "weight": 2}]
                        },
                        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                    },
                    "pluginConfig": [
                        {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}},
                        {"name": "GangTopology", "args": gang_args},
                    ],
                }
            ],
        }
    )


@dataclass
class Racks:
    cluster: InMemoryCluster
    fake: FakePrometheus
    clock: FakeClock

    @property
    def plugin(self) -> GangTopology:
        p = self.cluster.frameworks["netsched"].plugins["GangTopology"]
        assert isinstance(p, GangTopology)
        return p

    def links(self, busy: Mapping[str, float], stale: tuple[str, ...] = ()) -> None:
        """Link load per node as a fraction of 1 Gbit/s (others idle); `stale` nodes have no sample."""
        src = self.plugin.source
        names = [n.name for n in self.cluster.nodes()]
        rx = {n: busy.get(n, 0.0) * GBIT for n in names if n not in stale}
        self.fake.serve(src, NETWORK_RX, rx)
        self.fake.serve(src, NETWORK_TX, dict.fromkeys(rx, 0.0))
        self.fake.serve(src, LINK_SPEED, dict.fromkeys(names, GBIT))
        self.cluster.hub.poll_now()

    def gang(
        self,
        name: str,
        members: int,
        cpu: str = "2",
        bandwidth: str = "",
        created: int = 1,
        **annotations: str,
    ) -> None:
        meta: dict[str, Any] = {
            "namespace": "default",
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": f"2024-01-01T00:00:{created:02d}Z",
        }
        if annotations:
            meta["annotations"] = annotations
        self.cluster.add_object(PG, {"metadata": meta, "spec": {"minMember": members}})
        for i in range(members):
            self.member(name, f"{name}-{i}", cpu, bandwidth)

    def member(self, group: str, name: str, cpu: str = "2", bandwidth: str = "") -> None:
        b = make_pod(name).scheduler("netsched").label(POD_GROUP_LABEL, group).req(cpu=cpu)
        if bandwidth:
            b.annotation("kubernetes.io/ingress-bandwidth", bandwidth)
        self.cluster.add_pod(b.obj())

    def run(self) -> None:
        self.cluster.schedule_pending()

    def racks_of(self, group: str) -> list[str]:
        """The rack of each placed member of `group`."""
        nodes = {n.name: n for n in self.cluster.nodes()}
        return sorted(
            nodes[node].labels[RACK] for key, node in self.cluster.placements.items() if f"/{group}-" in key
        )

    def placed(self, group: str) -> int:
        return sum(1 for key in self.cluster.placements if f"/{group}-" in key)

    def failed(self, pod: str) -> str:
        msgs = [
            e[3]
            for e in self.cluster.events.events
            if e[0] == f"default/{pod}" and e[2] == "FailedScheduling"
        ]
        assert msgs, f"no FailedScheduling for {pod}"
        return msgs[-1]

    def holds_nothing(self) -> bool:
        fwk = self.cluster.frameworks["netsched"]
        return self.cluster.cache.assumed_count() == 0 and not list(fwk.iterate_waiting_pods())

    def decision(self, group: str) -> Placement:
        got = self.cluster.shared.find(GANGS).placement(f"default/{group}")  # type: ignore[union-attr]
        assert got is not None, f"no placement kept for {group}"
        return got


@pytest.fixture
def build() -> Iterator[Any]:
    hubs = []

    def make(cpu: str = "4", pods: str = "110", observe: bool = False, **args: Any) -> Racks:
        reg = build_registry()
        clock = FakeClock()
        hub, fake = fake_hub(clock)
        hubs.append(hub)
        c = InMemoryCluster(
            load_config(config(**args), reg),
            reg,
            metrics_hub=hub,
            clock=clock,
            keep_events=True,
            observe=observe,
        )
        c.add_nodes(
            make_node(f"{rack}-n{i}").zone(zone).label(RACK, rack).capacity(cpu=cpu, pods=pods).obj()
            for rack, zone in RACKS.items()
            for i in range(3)
        )
        r = Racks(c, fake, clock)
        r.links({})
        return r

    yield make
    for hub in hubs:
        hub.stop()


# ------------------------------------------------------------------ required / preferred


def test_required_rack_places_every_member_in_one_rack(build: Any) -> None:
    r = build()
    r.gang("train", 5, **{TOPOLOGY_REQUIRED: RACK})  # 10 cpu: a rack has 12
    r.run()
    racks = r.racks_of("train")
    assert len(racks) == 5 and len(set(racks)) == 1
    d = r.decision("train")
    assert (d.outcome, d.level) == ("placed", RACK) and len(d.considered) == 3


def test_required_rack_no_rack_can_hold_waits_holds_nothing_and_says_why(build: Any) -> None:
    r = build()
    r.gang("big", 7, **{TOPOLOGY_REQUIRED: RACK})  # 14 cpu: no rack (12) holds it, a zone would
    r.run()
    assert r.placed("big") == 0 and r.holds_nothing()
    msg = r.failed("big-0")
    for rack in RACKS:
        assert f"{RACK}={rack}: too small: 12 of 14 cpu free" in msg, msg
    pg_events = [e for e in r.cluster.events.events if e[0] == "default/big" and e[2] == "FailedScheduling"]
    assert pg_events and "needs one example.com/rack domain for 7 members" in pg_events[0][3]


def test_preferred_rack_falls_back_outward_to_a_zone(build: Any) -> None:
    r = build()
    r.gang("wide", 7, **{TOPOLOGY_PREFERRED: RACK})  # no rack holds 14 cpu; zone z1 (24) does
    r.run()
    assert r.placed("wide") == 7
    assert set(r.racks_of("wide")) <= {"r1", "r2"}  # zone z1
    d = r.decision("wide")
    assert (d.outcome, d.level, d.domain) == ("placed", ZONE, "z1")
    assert [v.feasible for v in d.considered if v.level == RACK] == [False, False, False]


def test_preferred_spreads_only_when_no_domain_of_any_level_holds_the_gang(build: Any) -> None:
    r = build()
    r.gang("huge", 13, **{TOPOLOGY_PREFERRED: RACK})  # 26 cpu: more than zone z1's 24, cluster has 36
    r.run()
    assert r.placed("huge") == 13
    assert set(r.racks_of("huge")) == {"r1", "r2", "r3"}
    assert r.decision("huge").outcome == "spread"


def test_a_gang_without_annotations_gets_the_profile_default(build: Any) -> None:
    r = build(defaultTopologyRequired=RACK)
    r.gang("plain", 7)  # the default requires one rack: 14 cpu fits none
    r.run()
    assert r.placed("plain") == 0 and "example.com/rack=r1: too small" in r.failed("plain-0")
    r2 = build()  # the default default: preferred, the innermost listed level (the rack)
    r2.gang("plain", 4)
    r2.run()
    assert len(set(r2.racks_of("plain"))) == 1 and r2.decision("plain").level == RACK


def test_a_malformed_topology_annotation_is_reported_on_the_podgroup(build: Any) -> None:
    r = build()
    r.gang("bad", 2, **{TOPOLOGY_REQUIRED: RACK, TOPOLOGY_PREFERRED: ZONE})
    r.gang("bad2", 2, created=2, **{TOPOLOGY_REQUIRED: "not a label!"})
    r.run()
    assert "are both set; set one" in r.failed("bad-0")
    assert "metadata.annotations[netsched.io/topology-required]: invalid value 'not a label!'" in r.failed(
        "bad2-0"
    )
    invalid = {e[0] for e in r.cluster.events.events if e[2] == "InvalidPodGroup"}
    assert invalid == {"default/bad", "default/bad2"}
    assert r.placed("bad") == r.placed("bad2") == 0 and r.holds_nothing()


def test_a_status_write_does_not_requeue_a_member_no_domain_holds(build: Any) -> None:
    # The scheduler writes the PodGroup's status itself: each write is a PodGroup update, and
    # only a change of the spec or the topology annotations can undo GangTopology's rejection.
    r = build()
    r.gang("big", 7, **{TOPOLOGY_REQUIRED: RACK})  # 14 cpu: no rack (12) holds it
    r.run()
    uids = [_uid(r, f"big-{i}") for i in range(7)]
    parked = r.cluster.queue.pending_pods()[UNSCHEDULABLE]
    assert {p.uid for p in parked} == set(uids)
    queued = [r.cluster.queue.get(u) for u in uids]
    assert all(qp is not None and qp.unschedulable_plugins == {"GangTopology"} for qp in queued)
    r.cluster.patch_object(PG, "default", "big", {"status": {"phase": "Pending", "scheduled": 0}})
    assert [r.cluster.queue.where(u) for u in uids] == [UNSCHEDULABLE] * 7
    r.cluster.patch_object(PG, "default", "big", {"metadata": {"annotations": {"note": "x"}}})
    assert [r.cluster.queue.where(u) for u in uids] == [UNSCHEDULABLE] * 7
    # The topology annotation relaxed: every member is worth another attempt.
    r.cluster.patch_object(
        PG,
        "default",
        "big",
        {"metadata": {"annotations": {TOPOLOGY_REQUIRED: None, TOPOLOGY_PREFERRED: RACK}}},
    )
    assert all(r.cluster.queue.where(u) != UNSCHEDULABLE for u in uids)


# ------------------------------------------------------------------ counting earlier members


def test_the_real_filters_count_earlier_members_of_the_same_decision(build: Any) -> None:
    # Every member wants host port 7000: a node takes one member. Room says each rack holds
    # 4 members of 1 cpu; NodePorts, counting the members placed before, says 3.
    r = build()
    r.cluster.add_object(
        PG,
        {
            "metadata": {"namespace": "default", "name": "four", "annotations": {TOPOLOGY_PREFERRED: RACK}},
            "spec": {"minMember": 4},
        },
    )
    for i in range(4):
        pod = make_pod(f"four-{i}").scheduler("netsched").label(POD_GROUP_LABEL, "four").req(cpu="1")
        r.cluster.add_pod(pod.host_port(7000).obj())
    r.run()
    d = r.decision("four")
    assert (d.outcome, d.level) == ("placed", ZONE)
    rack_reasons = [v.reason for v in d.considered if v.level == RACK]
    assert len(rack_reasons) == 3
    for why in rack_reasons:
        assert "member 4 of 4 fits none of its 3 nodes" in why and "free ports" in why, why
    assert r.placed("four") == 4


def test_the_coldest_rack_too_small_for_the_gang_is_passed_over_for_one_that_holds_it(build: Any) -> None:
    # The issue's case: r1's links are the coldest but r1 holds only 2 members; r3 holds all.
    r = build()
    r.links({"r2-n0": 0.7, "r2-n1": 0.7, "r2-n2": 0.7, "r3-n0": 0.3, "r3-n1": 0.3, "r3-n2": 0.3})
    for i in range(2):  # r1 is mostly taken
        r.cluster.add_pod(make_pod(f"busy-{i}").node(f"r1-n{i}").req(cpu="4").obj())
    r.gang("job", 4, **{TOPOLOGY_PREFERRED: RACK})
    r.run()
    assert r.racks_of("job") == ["r3"] * 4
    by = {v.value: v for v in r.decision("job").considered}
    assert not by["r1"].feasible and by["r2"].feasible and by["r3"].feasible
    assert by["r3"].peak is not None and by["r2"].peak is not None and by["r3"].peak < by["r2"].peak


# ------------------------------------------------------------------ late members


def test_a_late_member_goes_to_the_gang_s_rack_or_waits(build: Any) -> None:
    r = build()
    r.gang("g", 3, **{TOPOLOGY_REQUIRED: RACK})
    r.run()
    (rack,) = set(r.racks_of("g"))
    r.member("g", "g-late")  # a replaced pod: room left in its rack (12 - 6 cpu)
    r.run()
    assert r.racks_of("g") == [rack] * 4
    r.member("g", "g-big", cpu="8")  # fits other racks, not the gang's: it waits
    r.run()
    assert "default/g-big" not in r.cluster.placements
    assert r.cluster.queue.where(_uid(r, "g-big")) is not None


def test_a_decision_rebuilt_after_a_restart_is_kept_and_not_counted_again(
    build: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = build(observe=True)
    r.gang("g", 3, **{TOPOLOGY_REQUIRED: RACK})
    r.run()
    (rack,) = set(r.racks_of("g"))
    r.cluster.shared.find(GANGS).drop_placement("default/g")  # type: ignore[union-attr]  # a restart: the members are placed, nothing kept
    rebuilt = []

    def counting(*a: Any, **kw: Any) -> Placement:
        rebuilt.append(a[0])
        return derive(*a, **kw)

    monkeypatch.setattr(gang_topology_plugin, "derive", counting)
    for late in ("g-late0", "g-late1", "g-late2"):
        r.member("g", late)
        r.run()
    assert r.racks_of("g") == [rack] * 6
    assert rebuilt == ["default/g"]  # once, by the first late member; kept from its Reserve on
    d = r.decision("g")
    assert (d.outcome, d.level, d.domain, d.derived) == ("placed", RACK, rack, True)
    assert r.cluster.metrics is not None
    placed = {"outcome": "placed", "level": RACK, "profile": "netsched"}
    assert r.cluster.metrics.registry.get_sample_value("netsched_gang_placements_total", placed) == 1


def test_a_domain_s_rows_are_read_from_the_level_s_grouping(build: Any) -> None:
    snap = build().cluster.cache.snapshot_copy()
    for level in (ZONE, RACK, LABEL_HOSTNAME):
        domains = domains_at(snap, level, [])
        assert domains
        for d in domains:
            assert domain_rows(snap, level, d.value).tolist() == d.rows.tolist()
    assert len(domain_rows(snap, RACK, "r9")) == 0


def _uid(r: Racks, name: str) -> str:
    pod = r.cluster.handlers.pending_pod_by_key(f"default/{name}")
    assert pod is not None
    return pod.uid


# ------------------------------------------------------------------ link headroom


def test_the_domain_with_the_most_link_headroom_wins(build: Any) -> None:
    r = build()
    r.links({"r1-n0": 0.5, "r2-n0": 0.1, "r2-n1": 0.1, "r2-n2": 0.1, "r3-n2": 0.6})
    r.gang("net", 3, bandwidth="200M", **{TOPOLOGY_REQUIRED: RACK})  # 25 MB/s each: +20 % per member
    r.run()
    d = r.decision("net")
    by = {v.value: v for v in d.considered}
    # Each member takes the coolest link it can: r2 spreads them over its three nodes (30 %);
    # r1 and r3 keep their busy node out and put two members on one idle node (40 %).
    assert by["r2"].peak == pytest.approx(0.3)
    assert by["r1"].peak == pytest.approx(0.4) and by["r3"].peak == pytest.approx(0.4)
    assert d.domain == "r2" and set(r.racks_of("net")) == {"r2"}


def test_a_domain_whose_links_would_pass_the_threshold_does_not_hold_the_gang(build: Any) -> None:
    r = build(maxLinkUtilizationPercent=50)
    hot = {f"{rack}-n{i}": 0.45 for rack in ("r1", "r2") for i in range(3)}
    r.links(hot)
    r.gang("net", 2, bandwidth="200M", **{TOPOLOGY_REQUIRED: RACK})  # +20 %: 65 % in r1 and r2
    r.run()
    d = r.decision("net")
    by = {v.value: v for v in d.considered}
    assert "would have its link above 50%" in by["r1"].reason
    assert d.domain == "r3"
    # r3's links now carry "net" (20 % on two nodes, counted by the estimator until measured):
    # five more members of 20 % fit under 50 % nowhere.
    r.gang("more", 5, cpu="1", bandwidth="200M", created=2, **{TOPOLOGY_REQUIRED: RACK})
    r.run()
    assert r.placed("more") == 0 and r.holds_nothing()
    assert "above 50%" in r.failed("more-0")


def test_equal_headroom_goes_to_the_fuller_rack_and_binpack_prefers_it_outright(build: Any) -> None:
    r = build()
    r.cluster.add_pod(make_pod("filler").node("r2-n0").req(cpu="2").obj())
    r.gang("a", 2, **{TOPOLOGY_REQUIRED: RACK})  # idle links everywhere: a tie
    r.run()
    assert r.decision("a").domain == "r2"
    b = build(domainChoice="binpack")
    b.cluster.add_pod(make_pod("filler").node("r2-n0").req(cpu="2").obj())
    b.links({"r2-n1": 0.3, "r2-n2": 0.3, "r2-n0": 0.3})  # r2 is the fuller rack, and the hotter
    b.gang("a", 2, **{TOPOLOGY_REQUIRED: RACK})
    b.run()
    assert b.decision("a").domain == "r2"
    h = build()  # the same cluster with the default choice: the coolest links win
    h.cluster.add_pod(make_pod("filler").node("r2-n0").req(cpu="2").obj())
    h.links({"r2-n1": 0.3, "r2-n2": 0.3, "r2-n0": 0.3})
    h.gang("a", 2, **{TOPOLOGY_REQUIRED: RACK})
    h.run()
    assert h.decision("a").domain == "r1"


@pytest.mark.parametrize(("policy", "rack"), [("failOpen", "r1"), ("failClosed", "r2")])
def test_stale_link_metrics_follow_the_stale_policy(build: Any, policy: str, rack: str) -> None:
    r = build(prometheus={"stalePolicy": policy})
    for i in range(3):  # r3 is full: cold links, no room
        r.cluster.add_pod(make_pod(f"filler-{i}").node(f"r3-n{i}").req(cpu="4").obj())
    busy = {**{f"r2-n{i}": 0.5 for i in range(3)}, **{f"r3-n{i}": 0.1 for i in range(3)}}
    r.links(busy, stale=("r1-n0", "r1-n1", "r1-n2"))
    r.gang("s", 2, **{TOPOLOGY_REQUIRED: RACK})
    r.run()
    d = r.decision("s")
    by = {v.value: v for v in d.considered}
    # failOpen: r1's nodes count as the fresh nodes' mean (30 %), cooler than r2 (50 %);
    # failClosed: they cannot take a member.
    assert d.domain == rack
    if policy == "failOpen":
        assert by["r1"].peak is not None and by["r1"].peak < 0.5
    else:
        assert "no recent network metrics" in by["r1"].reason


# ------------------------------------------------------------------ observability


def test_placements_are_counted_by_outcome_and_level(build: Any) -> None:
    reg = build_registry()
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    c = InMemoryCluster(load_config(config(), reg), reg, metrics_hub=hub, clock=clock, observe=True)
    try:
        c.add_nodes(
            make_node(f"{rack}-n{i}").zone(zone).label(RACK, rack).capacity(cpu="4").obj()
            for rack, zone in RACKS.items()
            for i in range(3)
        )
        r = Racks(c, fake, clock)
        r.links({})
        r.gang("a", 2, **{TOPOLOGY_REQUIRED: RACK})
        r.gang("b", 7, created=2, **{TOPOLOGY_REQUIRED: RACK})
        r.gang("c", 7, created=3, **{TOPOLOGY_PREFERRED: RACK})
        r.run()
    finally:
        hub.stop()
    assert c.metrics is not None
    sample = c.metrics.registry.get_sample_value
    assert (
        sample("netsched_gang_placements_total", {"outcome": "placed", "level": RACK, "profile": "netsched"})
        == 1
    )
    assert (
        sample("netsched_gang_placements_total", {"outcome": "placed", "level": ZONE, "profile": "netsched"})
        == 1
    )
    unschedulable = {"outcome": "unschedulable", "level": RACK, "profile": "netsched"}
    assert (sample("netsched_gang_placements_total", unschedulable) or 0) >= 1


def test_the_snapshot_is_the_same_after_a_decision(build: Any) -> None:
    r = build()
    before = r.cluster.cache.snapshot_copy()
    r.gang("x", 7, **{TOPOLOGY_REQUIRED: RACK})  # simulated everywhere, placed nowhere
    r.run()
    after = r.cluster.scheduler.snapshot
    assert [(n.name, dict(n.requested), sorted(n.pods)) for n in after.nodes] == [
        (n.name, dict(n.requested), sorted(n.pods)) for n in before.nodes
    ]
    assert (after.requested == before.requested).all()
