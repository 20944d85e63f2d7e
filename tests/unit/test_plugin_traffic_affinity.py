"""TrafficAffinity: workload identity, distances by level, inert without edges, stale edges,
declared edges as the prior, the estimator's bandwidth hint, args and the graph query."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.search import NodeSearch
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo
from netsched.framework.workload import workload_key, workload_name
from netsched.metrics.cache import Series
from netsched.metrics.plugin_api import (
    BANDWIDTH_HINT,
    CPU,
    LINK_SPEED,
    MEMORY,
    NETWORK_RX,
    NETWORK_TX,
    PAIR_LABEL,
    TRAFFIC_PAIRS,
    PrometheusArgs,
    TrafficArgs,
    traffic_graph,
)
from netsched.metrics.queries import render
from netsched.metrics.traffic import REQUEST, build_graph, pair_key
from netsched.observability.metrics import SchedulerMetrics
from netsched.plugins.load_threshold import LoadThreshold
from netsched.plugins.network_traffic import NetworkTraffic
from netsched.plugins.node_affinity import NodeAffinity
from netsched.plugins.traffic_affinity import TrafficAffinity, TrafficAffinityArgs
from netsched.plugins.traffic_affinity import cost as cost_module
from netsched.plugins.traffic_affinity.appgroup import appgroup_edges
from netsched.plugins.traffic_affinity.cost import invert
from netsched.plugins.traffic_affinity.declared import ANNOTATION, declared_edges
from netsched.plugins.traffic_affinity.placed import WorkloadIndex, peers_of
from netsched.plugins.traffic_affinity.plugin import MAX_COST, UNMATCHED_CHECKS
from netsched.plugins.traffic_affinity.shares import NODE_LEVEL, cross_shares
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_framework, fake_services, plugin_of
from netsched.testing.handle import RecordingEvents
from netsched.testing.prometheus import fake_hub

ZONE, RACK = "topology.kubernetes.io/zone", "example.com/rack"


# ---------------------------------------------------------------- workload identity


@pytest.mark.parametrize(
    ("owner", "labels", "label", "want"),
    [
        (("ReplicaSet", "api-7d9f8c6b5d"), {"pod-template-hash": "7d9f8c6b5d"}, "", "api"),
        (("ReplicaSet", "my-api-v2-5f6d"), {"pod-template-hash": "5f6d"}, "", "my-api-v2"),
        (("ReplicaSet", "bare-rs"), {}, "", "bare-rs"),  # no template hash: a bare ReplicaSet
        (("ReplicaSet", "api-abc"), {"pod-template-hash": "zzz"}, "", "api-abc"),  # hash does not match
        (("StatefulSet", "db"), {}, "", "db"),
        (("DaemonSet", "agent"), {}, "", "agent"),
        (("Job", "migrate"), {}, "", "migrate"),
        (("Job", "report-28473920"), {}, "", "report"),  # a CronJob's run
        (("Job", "build-1234"), {}, "", "build-1234"),  # too few digits for a CronJob's run
        (None, {}, "", "lonely"),  # no controller: the pod's own name
        (("ReplicaSet", "api-7d9f"), {"pod-template-hash": "7d9f", "app": "shop"}, "app", "shop"),
        (("ReplicaSet", "api-7d9f"), {"pod-template-hash": "7d9f"}, "app", "api"),  # label absent
    ],
)
def test_workload_identity(
    owner: tuple[str, str] | None, labels: dict[str, str], label: str, want: str
) -> None:
    b = make_pod("lonely", "shop").labels(**labels)
    if owner is not None:
        b = b.owner(*owner)
    pod = b.info()
    assert workload_name(pod, label) == want
    assert workload_key(pod, label) == f"shop/{want}"


# ---------------------------------------------------------------- the plugin over a small cluster


def replica(workload: str, i: int, node: str = "") -> Any:
    b = make_pod(f"{workload}-{i}").owner("ReplicaSet", f"{workload}-h1").label("pod-template-hash", "h1")
    return b.node(node) if node else b


class Rig:
    """8 nodes: 2 zones x 2 racks x 2 nodes; n0,n1 = zone a rack r0; n2,n3 = a/r1; n4.. = zone b."""

    def __init__(
        self, placed: list[Any], args: TrafficAffinityArgs | None = None, pending: list[Any] | None = None
    ) -> None:
        self.clock = FakeClock()
        self.hub, self.fake = fake_hub(self.clock)
        nodes = [make_node(f"n{i}").labels(**{ZONE: "ab"[i // 4], RACK: f"r{i // 2}"}) for i in range(8)]
        self.snap = Snapshot.of(node_infos(nodes, placed))
        self.events = RecordingEvents()
        args = args or TrafficAffinityArgs(levels=(ZONE, RACK))
        self.fwk = build_framework(
            [TrafficAffinity],
            args={TrafficAffinity.name: args},
            metrics=self.hub,
            clock=self.clock,
            snapshot=self.snap,
            events=self.events,
            pending=[b.info() for b in pending or []],
        )
        self.plugin = plugin_of(self.fwk, TrafficAffinity)

    def hint(self, pod: PodInfo, snap: Snapshot | None = None) -> Any:
        """The BANDWIDTH_HINT the pod's PreFilter leaves in its cycle."""
        state = CycleState()
        self.plugin.pre_filter(state, pod, snap or self.snap)
        return state.read(BANDWIDTH_HINT)

    def edges(self, pairs: dict[str, float], ts: float | None = None) -> None:
        values: dict[str, Any] = {k: (v, ts) if ts is not None else v for k, v in pairs.items()}
        self.fake.serve(self.plugin.source, TRAFFIC_PAIRS, values, label=PAIR_LABEL)
        self.hub.poll_now()

    def run(self, pod: PodInfo) -> tuple[bool, list[int], list[int]]:
        """(scored?, raw costs, normalised scores) over all rows."""
        state = CycleState()
        idx = self.snap.all_rows
        st = self.plugin.pre_score(state, pod, self.snap, idx)
        if st.is_skip:
            return False, [], []
        assert st.ok, st
        raw = np.asarray(self.plugin.score_nodes(state, pod, self.snap, idx))
        per_node = [self.plugin.score(state, pod, n) for n in self.snap.nodes]
        assert raw.tolist() == per_node
        norm = raw.copy()
        self.plugin.normalize_scores(state, pod, norm)
        return True, raw.tolist(), norm.tolist()


def test_distances_by_level() -> None:
    # One peer pod of "db" on n0; the pod of "api" talks to db at 100 B/s.
    r = Rig([replica("db", 0, "n0")])
    r.edges({"default|api|default|db": 100.0})
    scored, raw, norm = r.run(replica("api", 0).info())
    assert scored
    # same node 0, same rack 1, same zone 2, elsewhere 3 (default distances 1, 2, 3)
    assert raw == [0, 100, 200, 200, 300, 300, 300, 300]
    assert norm == [100, 67, 33, 33, 0, 0, 0, 0]


@pytest.mark.parametrize("dense_factor", [0, 16])  # the sparse gather (np.add.at) / one bincount
def test_both_gathers_give_the_same_costs(dense_factor: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost_module, "_DENSE_FACTOR", dense_factor)
    r = Rig(
        [replica("db", 0, "n0"), replica("db", 1, "n0"), replica("cache", 0, "n0"), replica("cache", 1, "n6")]
    )
    r.edges({"default|api|default|db": 100.0, "default|api|default|cache": 60.0})
    _, raw, _ = r.run(replica("api", 0).info())
    # n0: db all there, cache half (30 at zone b: 3); n6: db 100 at 3, cache 30 at 0, 30 at 3
    assert raw[0] == 30 * 3 and raw[6] == 100 * 3 + 30 * 3
    assert r.plugin._scratch.sum() == 0  # left zeroed for the next pod


def test_rate_shared_among_peer_pods_and_both_directions_add_up() -> None:
    r = Rig([replica("db", 0, "n0"), replica("db", 1, "n4")])
    # db -> api and api -> db both count: 60 + 40 = 100 B/s, 50 per db pod.
    r.edges({"default|api|default|db": 60.0, "default|db|default|api": 40.0})
    _, raw, _ = r.run(replica("api", 0).info())
    assert raw[0] == 0 + 50 * 3  # n0: its db pod at 0, the other in zone b at 3
    assert raw[1] == 50 * 1 + 50 * 3
    assert raw[4] == 50 * 3 + 0


def test_profile_distances() -> None:
    args = TrafficAffinityArgs(levels=(ZONE, RACK), distances=(1.0, 10.0, 100.0))
    r = Rig([replica("db", 0, "n0")], args)
    r.edges({"default|api|default|db": 1.0})
    _, raw, _ = r.run(replica("api", 0).info())
    assert raw == [0, 1, 10, 10, 100, 100, 100, 100]


def test_inert_without_edges_or_without_placed_peers() -> None:
    r = Rig([replica("db", 0, "n0")])
    assert r.run(replica("api", 0).info())[0] is False  # nothing polled
    r.edges({"default|web|default|cache": 100.0})
    assert r.run(replica("api", 0).info())[0] is False  # edges, none of api's
    r.edges({"default|api|default|queue": 100.0})
    assert r.run(replica("api", 0).info())[0] is False  # api's peer has no placed pod


def test_stale_edges_are_dropped() -> None:
    r = Rig([replica("db", 0, "n0")])
    r.edges({"default|api|default|db": 100.0})
    assert r.run(replica("api", 0).info())[0]
    max_age = r.plugin.source.max_age
    r.fake.fail_all = None
    r.clock.step(max_age + 1)  # no new poll: the last answer ages past maxSampleAgeSeconds
    assert r.run(replica("api", 0).info())[0] is False


def test_declared_edges_are_the_prior_and_measured_ones_win() -> None:
    r = Rig([replica("db", 0, "n0"), replica("cache", 0, "n7")])
    pod = replica("api", 0).annotation(ANNOTATION, "db=10Mi").info()
    scored, raw, _ = r.run(pod)
    assert scored and raw.index(min(raw)) == 0  # declared: next to db
    r.edges({"default|api|default|cache": 100.0})
    _, raw, _ = r.run(pod)
    assert raw.index(min(raw)) == 7  # measured: next to cache, the declaration is ignored


def test_malformed_declaration_is_an_event_on_the_pod_once() -> None:
    r = Rig([replica("db", 0, "n0")])
    pod = replica("api", 0).annotation(ANNOTATION, "db=fast").info()
    assert r.run(pod)[0] is False
    assert r.run(pod)[0] is False
    assert len(r.events.events) == 1
    key, type_, reason, _, message = r.events.events[0]
    assert (key, type_, reason) == ("default/api-0", "Warning", "InvalidTrafficPeers")
    assert ANNOTATION in message and "db=fast" in message


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("db", {"default/db": 1024.0 * 1024.0}),
        ("db=", {"default/db": 1024.0 * 1024.0}),
        ("db=2Mi, shop/cache=500", {"default/db": 2 * 1024.0 * 1024.0, "shop/cache": 500.0}),
        (" , db=1k,", {"default/db": 1000.0}),
        # Workload names as the mesh names them: label-value syntax (dots, capitals, '_').
        ("api.v2=1k", {"default/api.v2": 1000.0}),
        ("shop/Shop_API=1k", {"shop/Shop_API": 1000.0}),
        ("db=1T", {"default/db": 1e12}),  # MAX_RATE itself
    ],
)
def test_declared_edges_format(text: str, want: dict[str, float]) -> None:
    got = declared_edges(make_pod("p").annotation(ANNOTATION, text).info())
    assert got.edges == want and got.errors == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Shop/db", "namespace a DNS-1123 label"),
        ("-db", "workload a label value"),
        ("db.", "workload a label value"),
        ("a/b/c", "namespace a DNS-1123 label"),
        ("shop\n/cache=5Mi", "namespace a DNS-1123 label"),  # before: `$` let the newline through
        ("db=-1", "must be > 0"),
        ("db=0", "must be > 0"),
        ("db=x", "rate"),
        ("db=1e400", "at most"),  # a float inf: it overflowed the integer costs
        ("db=5Ei", "at most"),
        ("db=2T", "at most"),
        ("db=NaN", "rate"),
    ],
)
def test_declared_edges_reports_only_the_bad_entry(text: str, why: str) -> None:
    got = declared_edges(make_pod("p").annotation(ANNOTATION, f"cache=1k, {text}, web").info())
    assert got.edges == {"default/cache": 1000.0, "default/web": 1024.0 * 1024.0}
    assert len(got.errors) == 1
    assert ANNOTATION in got.errors[0] and repr(text) in got.errors[0] and why in got.errors[0]


def test_huge_declared_rate_is_an_event_and_never_inverts_the_scores() -> None:
    # Before: "db=1e400" was inf, the int64 cast overflowed and the farthest nodes won silently.
    r = Rig([replica("db", 0, "n0"), replica("cache", 0, "n7")])
    pod = replica("api", 0).annotation(ANNOTATION, "db=1e400, cache=1k").info()
    scored, raw, norm = r.run(pod)
    assert scored and raw.index(min(raw)) == 7 and norm[7] == 100  # the valid entry still counts
    assert len(r.events.events) == 1 and "'db=1e400'" in r.events.events[0][4]


def test_costs_are_clipped_before_the_integer_cast() -> None:
    r = Rig([replica("db", 0, "n0")])
    r.edges({"default|api|default|db": 1e300})  # a measured rate no link carries
    scored, raw, norm = r.run(replica("api", 0).info())
    assert scored and raw[0] == 0 and min(raw[1:]) > 0 and max(raw) <= MAX_COST
    assert norm[0] == 100 and norm[7] == 0


@pytest.mark.parametrize(
    ("key", "on_n3"),
    [
        ("default|api|default|db|request", (0.0, 100.0)),  # api sends: its pod transmits 100 B/s
        ("default|api|default|db|response", (100.0, 0.0)),  # db answers: the api pod receives
        ("default|api|default|db", (100.0, 100.0)),  # direction unknown: all of it, both ways
    ],
)
def test_estimate_counts_only_traffic_leaving_the_node(key: str, on_n3: tuple[float, float]) -> None:
    # api has 2 placed pods and 200 B/s with db (one pod on n0): 100 B/s per api pod.
    r = Rig([replica("db", 0, "n0"), replica("api", 0, "n5"), replica("api", 1, "n6")])
    r.edges({key: 200.0})
    pod = replica("api", 2).info()
    assert r.plugin.pod_bandwidth(pod, "n3") == on_n3  # all of it leaves n3
    assert r.plugin.pod_bandwidth(pod, "n0") == (0.0, 0.0)  # its peer is on n0: nothing leaves
    unmeasured = replica("web", 0).info()
    assert r.plugin.pod_bandwidth(unmeasured, "n0") is None
    # The hint PreFilter leaves: the same on one node (Reserve) and over the candidates (filters).
    hint = r.hint(pod)
    assert hint(pod, "n3") == on_n3
    rx, tx = hint.rows(pod, r.snap, r.snap.all_rows)
    assert (rx[3], tx[3]) == on_n3 and (rx[0], tx[0]) == (0.0, 0.0)
    # The shared ledger takes it instead of the 1 MiB/s default.
    state = CycleState()
    r.plugin.pre_filter(state, pod, r.snap)
    r.plugin.source.reserve(pod, "n3", state)
    est = r.plugin.source.estimates(r.snap)
    assert (est.rx[3], est.tx[3]) == on_n3


def test_explainer_replica_does_not_take_over_the_estimate() -> None:
    # The explainer's replica builds a second TrafficAffinity on the same shared estimator;
    # the live cycle's hint is the one Reserve uses (before: the replica's replaced it).
    r = Rig([replica("db", 0, "n0"), replica("api", 0, "n5"), replica("api", 1, "n6")])
    r.edges({"default|api|default|db": 200.0})
    pod = replica("api", 2).info()
    state = CycleState()
    r.plugin.pre_filter(state, pod, r.snap)
    rep = plugin_of(r.fwk.replica(), TrafficAffinity)
    assert rep is not r.plugin
    rep.pre_filter(CycleState(), pod, Snapshot.of(node_infos([make_node("n0")], [])))
    r.plugin.source.reserve(pod, "n0", state)
    est = r.plugin.source.estimates(r.snap)
    assert est.rx[0] == 0.0 and est.tx[0] == 0.0  # its peer db is on n0: nothing leaves
    # Without a cycle's hint (or outside this profile) the estimator keeps its default.
    other = replica("api", 3).info()
    r.plugin.source.reserve(other, "n1")
    default = r.plugin.source.args.estimation.default_bandwidth_bytes
    assert r.plugin.source.estimates(r.snap).rx[1] == default


def test_one_feasible_node_reserves_the_measured_estimate() -> None:
    # One feasible node: the runtime skips PreScore (as kube does), so the hint must be left
    # earlier (before: Reserve found none and the estimator charged its 1 MiB/s default).
    nodes = [make_node(f"n{i}") for i in range(3)] + [make_node("n3").label("pick", "yes")]
    snap = Snapshot.of(node_infos(nodes, [replica("db", 0, "n0"), replica("api", 0, "n1")]))
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    fwk = build_framework(
        [TrafficAffinity, NetworkTraffic, NodeAffinity], metrics=hub, clock=clock, snapshot=snap
    )
    plugin = plugin_of(fwk, TrafficAffinity)
    assert plugin_of(fwk, NetworkTraffic).source.ledger is plugin.source.ledger
    fake.serve(plugin.source, TRAFFIC_PAIRS, {"default|api|default|db": 200.0}, label=PAIR_LABEL)
    hub.poll_now()
    pod = replica("api", 1).node_selector(pick="yes").info()
    state = fwk.new_cycle_state()
    result = NodeSearch(fwk).schedule(state, pod, snap)
    assert result.node_name == "n3" and result.totals is None  # nothing was scored
    assert fwk.run_reserve(state, pod, "n3").ok
    est = plugin.source.estimates(snap)
    # 200 B/s per api pod (its one placed pod; direction unknown: both ways), all leaving n3.
    assert est.rx[3] == 200.0 and est.tx[3] == 200.0


GBIT = 125_000_000.0  # bytes/s


def placed_with_links(tx: dict[str, float], pending: list[PodInfo]) -> tuple[Any, Any, Snapshot, Any]:
    """deploy/'s weights (TrafficAffinity 10, NetworkTraffic 3) and LoadThreshold (80 %) over
    four 1 Gb/s nodes: db's one pod on n0, cache's on n2; `tx`: each node's transmit load;
    `pending`: the pods waiting to be scheduled, as the scheduler's pod index holds them."""
    nodes = [make_node(f"n{i}").capacity(cpu="8", memory="16Gi") for i in range(4)]
    snap = Snapshot.of(node_infos(nodes, [replica("db", 0, "n0"), replica("cache", 0, "n2")]))
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    fwk = build_framework(
        [TrafficAffinity, NetworkTraffic, LoadThreshold],
        weights={TrafficAffinity.name: 10, NetworkTraffic.name: 3},
        metrics=hub,
        clock=clock,
        snapshot=snap,
        pending=pending,
    )
    src = plugin_of(fwk, TrafficAffinity).source
    names = [f"n{i}" for i in range(4)]
    fake.serve(src, LINK_SPEED, dict.fromkeys(names, GBIT))
    fake.serve(src, NETWORK_RX, dict.fromkeys(names, 0.0))
    fake.serve(src, NETWORK_TX, {n: tx.get(n, 0.0) * GBIT for n in names})
    fake.serve(src, CPU, dict.fromkeys(names, 0.1))
    fake.serve(src, MEMORY, dict.fromkeys(names, 0.1))
    return fwk, fake, snap, hub


@pytest.mark.parametrize(
    ("pairs", "node"),
    [
        # All of api's traffic is with db, on n0: nothing would cross n0's link at 70 %.
        ({pair_key("default/api", "default/db", REQUEST): 40e6}, "n0"),
        # api also sends 20 MB/s to cache on n2: on n0 that leaves over a link at 70 %: 86 %.
        (
            {
                pair_key("default/api", "default/db", REQUEST): 40e6,
                pair_key("default/api", "default/cache", REQUEST): 20e6,
            },
            "n2",
        ),
    ],
)
def test_the_pull_towards_peers_never_buys_a_hot_link(pairs: dict[str, float], node: str) -> None:
    pod = replica("api", 0).info()  # api's one pod: the whole measured traffic is its own
    fwk, fake, snap, hub = placed_with_links({"n0": 0.70}, [pod])
    src = plugin_of(fwk, TrafficAffinity).source
    fake.serve(src, TRAFFIC_PAIRS, pairs, label=PAIR_LABEL)
    hub.poll_now()
    state = fwk.new_cycle_state()
    result = NodeSearch(fwk).schedule(state, pod, snap)
    assert result.node_name == node
    verdict = plugin_of(fwk, LoadThreshold).filter(state, pod, snap.nodes[0])  # n0, with this pod
    assert verdict.ok == (node == "n0")
    if node != "n0":
        assert verdict.reasons == ["node(s) had network utilisation above 80%"]
    assert fwk.run_reserve(state, pod, result.node_name).ok
    # The ledger counts what crosses the chosen node's link, each way.
    est = src.estimates(snap)
    row = snap.index[result.node_name]
    want_tx = 0.0 if node == "n0" else 40e6  # its traffic to db leaves n2 (to cache stays local)
    assert (est.rx[row], est.tx[row]) == (0.0, want_tx)


def test_profiles_sharing_an_estimator_keep_their_own_workload_label() -> None:
    # Two profiles, one prometheus block (one estimator), different workload labels: each
    # cycle's hint comes from its own profile's plugin (before: the last plugin built won).
    r = Rig([replica("db", 0, "n0"), replica("api", 0, "n5")])
    by_app = TrafficAffinityArgs(levels=(ZONE, RACK), workload_label="app")
    other = plugin_of(
        build_framework(
            [TrafficAffinity],
            args={TrafficAffinity.name: by_app},
            metrics=r.hub,
            clock=r.clock,
            snapshot=r.snap,
        ),
        TrafficAffinity,
    )
    assert other.source.ledger is r.plugin.source.ledger
    r.edges({"default|api|default|db": 200.0})
    pod = replica("api", 1).label("app", "shop").info()  # "shop" for the app-label profile: no edges
    state = CycleState()
    r.plugin.pre_filter(state, pod, r.snap)
    r.plugin.source.reserve(pod, "n3", state)
    assert r.plugin.source.estimates(r.snap).rx[3] == 200.0  # api's one pod's 200 B/s, both ways


def test_first_pod_after_the_old_ones_left_is_not_charged_the_whole_workload() -> None:
    # api's 4 pods made 400 B/s with db; a Recreate rollout removed them all.  The first new
    # pod gets the estimator's default (None), not 4 pods' traffic.
    r = Rig([replica("db", 0, "n0")])
    r.edges({"default|api|default|db": 400.0})
    assert r.plugin.pod_bandwidth(replica("api", 9).info(), "n3") is None


def test_traffic_to_peers_not_placed_yet_leaves_the_node() -> None:
    # db has two pods: one on n0, one pending.  An api pod on n0 exchanges half of its db
    # traffic locally; the pending db pod will most likely land elsewhere.
    r = Rig(
        [replica("db", 0, "n0"), replica("api", 0, "n5")],
        pending=[replica("db", 1)],
    )
    r.edges({pair_key("default/api", "default/db", REQUEST): 100.0})
    pod = replica("api", 1).info()
    assert r.plugin.pod_bandwidth(pod, "n0") == (0.0, 50.0)
    assert r.plugin.pod_bandwidth(pod, "n3") == (0.0, 100.0)


def test_a_recreate_rollout_shares_the_traffic_among_the_pods_that_left() -> None:
    # api's 2 pods made 400 B/s to db; both left (the ledger asked what they carried), a poll
    # landed before the first new pod: it carries half, not all (whole workload) nor the
    # 1 MiB/s default (before: the default, so a hot link looked free to it).
    old = [replica("api", i, f"n{4 + i}").info() for i in range(2)]
    r = Rig([replica("db", 0, "n0")], pending=[replica("api", 9)])
    r.edges({pair_key("default/api", "default/db", REQUEST): 400.0})
    for pod in old:
        assert r.plugin.departing(pod) == (0.0, 400.0 / 2)
    r.clock.step(5)
    r.edges({pair_key("default/api", "default/db", REQUEST): 400.0})  # the next poll
    new = replica("api", 9).info()
    assert r.hint(new)(new, "n3") == (0.0, 200.0)
    # A window after they left, the sample is the new pods' own: shared by the pods known.
    r.clock.step(r.plugin.args.prometheus.rate_window_seconds + 1)
    r.edges({pair_key("default/api", "default/db", REQUEST): 400.0})
    assert r.hint(new)(new, "n3") == (0.0, 400.0)


@pytest.mark.parametrize(("later", "api0_leaving"), [(5.0, 100.0), (61.0, 200.0)])
def test_a_leaving_pod_kept_its_flow_to_a_peer_that_left_first_off_the_link(
    later: float, api0_leaving: float
) -> None:
    # api-0 and db-0 shared n0; api sends db 400 B/s over 4 pod pairs.  A Recreate rollout
    # deletes both: db-0 leaves first (gone from the cache), api-0 `later` seconds after.  Within
    # the 1m window the sample api-0's share comes from was made with db-0 beside it, so only its
    # flow to db-1 (n5) crossed n0's link: 100 B/s, not 200 (before: db-0 no longer counted,
    # n0's reading was corrected by a flow it never carried and read below its background).
    # A window later the sample holds nothing of db-0: all of api-0's db traffic crossed.
    api0 = replace(replica("api", 0, "n0").info(), deleting=True)
    r = Rig([api0, replica("db", 1, "n5"), replica("api", 1, "n4")])
    r.edges({pair_key("default/api", "default/db", REQUEST): 400.0})
    assert r.plugin.departing(replica("db", 0, "n0").info()) == (100.0, 0.0)  # api-1's, from n4
    r.clock.step(later)
    r.edges({pair_key("default/api", "default/db", REQUEST): 400.0})
    assert r.plugin.departing(api0) == (0.0, api0_leaving)


def test_pods_gone_within_a_sample_divide_by_the_most_seen() -> None:
    # Seen with 4 placed pods while this sample is current, then all gone: the sample's
    # traffic is still shared by 4.
    old = [replica("api", i, f"n{4 + i}") for i in range(4)]
    r = Rig([replica("db", 0, "n0"), *old])
    r.edges({"default|api|default|db": 400.0})
    pod = replica("api", 9).info()
    assert r.plugin.pod_bandwidth(pod, "n3") == (100.0, 100.0)
    empty = Snapshot.of(node_infos([make_node(f"n{i}") for i in range(8)], [replica("db", 0, "n0")]))
    assert r.hint(pod, empty)(pod, "n3") == (100.0, 100.0)
    # A new sample forgets the peak; the pods the cache still knows (this handle's index holds
    # the four) keep sharing it.
    r.clock.step(1.0)
    r.edges({"default|api|default|db": 400.0})
    assert r.hint(pod, empty)(pod, "n3") == (100.0, 100.0)


def test_graph_is_built_once_per_poll_for_every_profile() -> None:
    # Through the metrics read API (LoadView.derived): two profiles' plugins on one source share
    # the graph of a poll; the next poll builds a new one.
    r = Rig([replica("db", 0, "n0")])
    other = plugin_of(
        build_framework([TrafficAffinity], metrics=r.hub, clock=r.clock, snapshot=r.snap), TrafficAffinity
    )
    r.edges({"default|api|default|db": 100.0})
    first = r.plugin.graph(r.snap)
    assert first.of("default/api") == {"default/db": 100.0}
    assert other.graph(r.snap) is first and r.plugin.graph(r.snap) is first
    r.edges({"default|api|default|db": 50.0})
    assert r.plugin.graph(r.snap) is not first and other.graph(r.snap).of("default/api") == {
        "default/db": 50.0
    }


def test_graph_drops_rates_no_cost_can_use() -> None:
    keys = ("a|x|a|y", "a|x|a|z", "a|x|a|w")
    s = Series(keys, np.array([np.nan, np.inf, 2.0]), np.array([10.0, 10.0, 10.0]), 3)
    assert build_graph(s).of("a/x") == {"a/w": 2.0}


def test_invert() -> None:
    assert invert(np.array([0.0, 50.0, 100.0]), 100).tolist() == [100, 50, 0]
    assert invert(np.array([7.0, 7.0]), 100).tolist() == [100, 100]


# ---------------------------------------------------------------- graph and args


def test_graph_is_undirected_and_drops_unknown_workloads() -> None:
    keys = ("a|x|a|y", "a|y|a|x", "a|x|a|unknown", "a|x|a|x")
    s = Series(keys, np.array([1.0, 2.0, 5.0, 4.0]), np.array([10.0, 10.0, 10.0, 10.0]), 4)
    g = build_graph(s)
    assert g.of("a/x") == {"a/y": 3.0, "a/x": 4.0}
    assert g.of("a/y") == {"a/x": 3.0}
    assert g.total() == 7.0
    assert g.dropped == 1


@pytest.mark.parametrize(
    ("key", "sent_by_x", "received_by_x"),
    [
        # Istio's request bytes flow from source to destination, its response bytes back.
        ("a|x|a|y|request", {"a/y": 5.0}, {}),
        ("a|x|a|y|response", {}, {"a/y": 5.0}),
        # Unknown direction (Hubble, a custom query): the whole rate both ways.
        ("a|x|a|y|", {"a/y": 5.0}, {"a/y": 5.0}),
        ("a|x|a|y", {"a/y": 5.0}, {"a/y": 5.0}),
    ],
)
def test_graph_keeps_the_direction_the_mesh_reports(
    key: str, sent_by_x: dict[str, float], received_by_x: dict[str, float]
) -> None:
    g = build_graph(Series((key,), np.array([5.0]), np.array([10.0]), 1))
    assert g.sent_by("a/x") == sent_by_x
    assert g.received_by("a/x") == received_by_x
    assert g.of("a/x") == {"a/y": 5.0} and g.of("a/y") == {"a/x": 5.0}  # the cost: both ways together


def test_graph_adds_a_pairs_two_directions_and_drops_unknown_ones() -> None:
    keys = ("a|x|a|y|request", "a|x|a|y|response", "a|x|a|y|sideways")
    g = build_graph(Series(keys, np.array([3.0, 1.0, 7.0]), np.array([10.0] * 3), 3))
    assert g.of("a/x") == {"a/y": 4.0}
    assert g.sent_by("a/x") == {"a/y": 3.0} and g.sent_by("a/y") == {"a/x": 1.0}
    assert g.dropped == 1


def test_pair_key_is_what_build_graph_reads() -> None:
    key = pair_key("ns1/web", "ns2/db", REQUEST)
    assert key == "ns1|web|ns2|db|request"
    g = build_graph(Series((key,), np.array([2.0]), np.array([10.0]), 1))
    assert g.sent_by("ns1/web") == {"ns2/db": 2.0}


def decode(raw: dict[str, Any]) -> tuple[TrafficAffinityArgs, list[str]]:
    errs = ErrorList()
    args = TrafficAffinityArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def test_args_defaults_and_roundtrip() -> None:
    args, errs = decode({})
    assert errs == []
    assert args.level_distances == (1.0, 2.0)
    again, errs = decode(args.encode())
    assert errs == [] and again == args


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ({"traffic": {"preset": "linkerd"}}, "args.traffic.preset"),
        ({"traffic": {"preset": "custom"}}, "args.traffic.query"),
        ({"traffic": {"query": "up"}}, "args.traffic.query"),
        ({"traffic": {"bytesPerFlow": 10}}, "args.traffic.bytesPerFlow"),
        ({"traffic": {"labels": {"sourceWorkload": "a-b"}}}, "args.traffic.labels.sourceWorkload"),
        ({"traffic": {"labels": {"nope": "x"}}}, "args.traffic.labels.nope"),
        ({"levels": ["kubernetes.io/hostname"]}, "args.levels[0]"),
        ({"levels": ["a", "a"]}, "args.levels[1]"),
        ({"levels": ["a"], "distances": [1]}, "args.distances"),
        ({"levels": ["a"], "distances": [2, 1]}, "args.distances[1]"),
        ({"levels": ["a"], "distances": [0, 1]}, "args.distances[0]"),
        ({"workloadLabel": "bad label"}, "args.workloadLabel"),
        ({"prometheus": {"pollIntervalSeconds": 0}}, "args.prometheus.pollIntervalSeconds"),
    ],
)
def test_args_errors_name_the_field(raw: dict[str, Any], path: str) -> None:
    _, errs = decode(raw)
    assert any(e.startswith(path + ":") for e in errs), errs


def test_presets_query_shape() -> None:
    istio = TrafficArgs().promql()
    assert 'reporter="source"' in istio and "istio_request_bytes_sum" in istio and "$window" in istio
    assert istio.startswith("label_join(") and f'"{PAIR_LABEL}"' in istio
    hubble, _ = decode({"traffic": {"preset": "hubble", "bytesPerFlow": 1000}})
    assert "hubble_flows_processed_total" in hubble.traffic.promql() and "* 1000" in hubble.traffic.promql()
    custom, _ = decode(
        {"traffic": {"preset": "custom", "query": "my_pairs", "labels": {"sourceWorkload": "src"}}}
    )
    q = custom.traffic.promql()
    assert q.startswith("label_join(my_pairs,") and '"src"' in q


def test_cross_shares_from_placement() -> None:
    s = Series(("d|a|d|b", "d|b|d|c"), np.array([100.0, 50.0]), np.array([1.0, 1.0]), 2)
    where = {"d/a": ["n0"], "d/b": ["n0", "n1"], "d/c": ["n2"]}
    racks = {"n0": "r0", "n1": "r0", "n2": "r1"}
    got = cross_shares(build_graph(s), lambda w: where.get(w, []), lambda n, _lv: racks[n], [RACK])
    assert got.total == 150.0
    # a-b: half of b's pods share a's node, all share its rack; b-c: nothing shared.
    assert got.crossing[NODE_LEVEL] == pytest.approx((100 * 0.5 + 50) / 150)
    assert got.crossing[RACK] == pytest.approx(50 / 150)
    assert (got.workloads, got.matched) == (3, 3)
    unplaced = cross_shares(build_graph(s), lambda w: [], lambda n, _lv: None, [RACK])
    assert unplaced.total == 0.0 and unplaced.crossing == {}
    assert (unplaced.workloads, unplaced.matched) == (3, 0)


def test_graph_matching_no_placed_workload_is_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    # workloadLabel names pods "shop-api" while the mesh says "api": the plugin would be inert.
    r = Rig([], TrafficAffinityArgs(workload_label="app"))
    r.edges({"default|api|default|db": 100.0})
    placed = {"default/shop-db": ["n0"], "default/shop-api": ["n1"]}
    got = cross_shares(r.plugin.graph(), lambda w: placed.get(w, []), lambda n, _lv: None, [])
    assert (got.workloads, got.matched) == (2, 0)

    def warned() -> list[str]:
        return [rec.getMessage() for rec in caplog.records if "measured traffic graph" in rec.getMessage()]

    with caplog.at_level(logging.WARNING):
        # No pod placed yet (right after start): nothing can match, nothing is wrong.
        for _ in range(2 * UNMATCHED_CHECKS):
            r.plugin.check_match(got, placed=False)
        assert warned() == []
        # Pods placed and none matches: warned after UNMATCHED_CHECKS checks, once.
        for _ in range(UNMATCHED_CHECKS - 1):
            r.plugin.check_match(got, placed=True)
        assert warned() == []
        for _ in range(UNMATCHED_CHECKS + 2):
            r.plugin.check_match(got, placed=True)
    assert len(warned()) == 1 and "workloadLabel=app" in warned()[0]
    # Once one matches, the warning is re-armed for the next time none does.
    placed["default/db"] = ["n0"]
    matched = cross_shares(r.plugin.graph(), lambda w: placed.get(w, []), lambda n, _lv: None, [])
    assert matched.matched == 1
    with caplog.at_level(logging.WARNING):
        r.plugin.check_match(matched, placed=True)
        for _ in range(UNMATCHED_CHECKS):
            r.plugin.check_match(got, placed=True)
    assert len(warned()) == 2


def test_the_share_task_warns_inert_only_once_placed_pods_match_nothing_for_a_few_polls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Through the periodic share task, as the scheduler runs it once per poll interval (issue
    39): right after start the graph is measured but no pod is placed at all, and however many
    polls pass that is no warning; once pods are placed and none of their workloads is in the
    graph, it warns after UNMATCHED_CHECKS polls, once."""
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    nodes = [make_node(f"n{i}") for i in range(2)]
    snap = Snapshot.of(node_infos(nodes, []))
    services = fake_services(clock=clock, metrics=hub, assigned=snap)
    metrics = SchedulerMetrics(CollectorRegistry())
    services.plugin_metrics = metrics
    fwk = build_framework([TrafficAffinity], services=services, snapshot=snap)
    plugin = plugin_of(fwk, TrafficAffinity)
    fake.serve(plugin.source, TRAFFIC_PAIRS, {"default|api|default|db": 100.0}, label=PAIR_LABEL)
    hub.poll_now()

    def gauge(name: str) -> float | None:
        return metrics.registry.get_sample_value(name, {"profile": fwk.profile_name})

    def warned() -> list[str]:
        return [rec.getMessage() for rec in caplog.records if "TrafficAffinity is inert" in rec.getMessage()]

    def cycle(placed: list[Any]) -> None:
        """The cluster now holds `placed`; a cycle of the plugin sees the snapshot's rows."""
        snap.nodes = node_infos(nodes, placed)
        plugin.pre_filter(CycleState(), replica("web", 9).info(), snap)

    with caplog.at_level(logging.WARNING):
        cycle([])  # the first pending pod's cycle, before any pod is bound
        for _ in range(4 * UNMATCHED_CHECKS):
            services.periodic.run_all()
        assert (gauge("netsched_traffic_graph_workloads"), gauge("netsched_traffic_matched_workloads")) == (
            2,
            0,
        )
        assert warned() == []
        cycle([replica("web", 0, "n0"), replica("cache", 0, "n1")])  # placed, not in the graph
        for _ in range(UNMATCHED_CHECKS - 1):
            services.periodic.run_all()
        assert warned() == []
        for _ in range(UNMATCHED_CHECKS + 1):
            services.periodic.run_all()
        assert len(warned()) == 1
        cycle([replica("web", 0, "n0"), replica("db", 0, "n1")])  # one of them is in the graph
        for _ in range(2 * UNMATCHED_CHECKS):
            services.periodic.run_all()
        assert gauge("netsched_traffic_matched_workloads") == 1
    assert len(warned()) == 1


APPGROUP = {
    "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1",
    "kind": "AppGroup",
    "metadata": {"name": "shop", "namespace": "default"},
    "spec": {
        "numMembers": 3,
        "workloads": [
            {
                "workload": {"kind": "Deployment", "name": "api", "selector": "p-api"},
                "dependencies": [
                    {
                        "workload": {"kind": "Deployment", "name": "db", "selector": "p-db"},
                        "minBandwidth": "10Mi",
                    }
                ],
            },
            {
                "workload": {"kind": "Deployment", "name": "web", "selector": "p-web"},
                "dependencies": [{"workload": {"kind": "Deployment", "name": "api", "selector": "p-api"}}],
            },
            {"workload": {"kind": "Deployment", "name": "db", "selector": "p-db"}},
        ],
    },
}


def appgroup_pod(selector: str) -> Any:
    return (
        replica("x", 0)
        .label("appgroup.diktyo.x-k8s.io", "shop")
        .label("appgroup.diktyo.x-k8s.io.workload", selector)
    )


def test_appgroup_dependencies_both_ways() -> None:
    api = appgroup_pod("p-api").info()
    assert appgroup_edges(api, APPGROUP).edges == {"default/db": 10 * 1024 * 1024, "default/web": 1024 * 1024}
    assert appgroup_edges(appgroup_pod("p-db").info(), APPGROUP).edges == {"default/api": 10 * 1024 * 1024}
    assert appgroup_edges(appgroup_pod("p-none").info(), APPGROUP).edges == {}
    assert appgroup_edges(api, None).edges == {}
    assert appgroup_edges(api, APPGROUP).errors == []


@pytest.mark.parametrize(("raw", "want"), [("0", 1024.0 * 1024.0), ("1e400", None), ("fast", None)])
def test_appgroup_min_bandwidth(raw: str, want: float | None) -> None:
    group = json.loads(json.dumps(APPGROUP))
    group["spec"]["workloads"][0]["dependencies"][0]["minBandwidth"] = raw
    got = appgroup_edges(appgroup_pod("p-api").info(), group)
    assert got.edges.get("default/db") == want
    assert got.edges["default/web"] == 1024 * 1024  # the other dependency still counts
    where = f"AppGroup default/shop: spec.workloads[0].dependencies[0].minBandwidth: Invalid value: {raw!r}: "
    assert [e.startswith(where) for e in got.errors] == ([] if want else [True])


@pytest.mark.parametrize("workload", [{"name": ["x"]}, {"name": "db", "namespace": ["z"]}, {}])
def test_appgroup_malformed_workload_is_reported(workload: dict[str, Any]) -> None:
    group = json.loads(json.dumps(APPGROUP))
    group["spec"]["workloads"][0]["dependencies"][0]["workload"] = {**workload, "selector": "p-db"}
    got = appgroup_edges(appgroup_pod("p-api").info(), group)
    assert got.edges == {"default/web": 1024 * 1024}
    assert [e.split(": Invalid value")[0] for e in got.errors] == [
        "AppGroup default/shop: spec.workloads[0].dependencies[0].workload"
    ]


def test_appgroup_is_a_declared_prior_through_the_object_store() -> None:
    r = Rig([replica("db", 0, "n6")])
    r.fwk = build_framework(
        [TrafficAffinity],
        args={TrafficAffinity.name: TrafficAffinityArgs(levels=(ZONE, RACK))},
        metrics=r.hub,
        clock=r.clock,
        snapshot=r.snap,
        objects={"appgroup.diktyo.x-k8s.io/appgroups": [APPGROUP]},
    )
    r.plugin = plugin_of(r.fwk, TrafficAffinity)
    scored, raw, _ = r.run(appgroup_pod("p-api").info())
    assert scored and raw.index(min(raw)) == 6
    assert r.plugin.edges(appgroup_pod("p-api").info())[1:] == (
        "declared",
        {"default/db": 10 * 1024 * 1024, "default/web": 1024 * 1024},
    )


@pytest.mark.parametrize("n", [100, 5000])
def test_one_query_per_poll_for_the_whole_graph_whatever_the_node_count(n: int) -> None:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    snap = Snapshot.of(node_infos([make_node(f"n{i}") for i in range(n)], []))
    fwk = build_framework([TrafficAffinity], metrics=hub, clock=clock, snapshot=snap)
    src = plugin_of(fwk, TrafficAffinity).source
    fake.serve(
        src, TRAFFIC_PAIRS, {f"default|w{i}|default|w{i + 1}": 1.0 for i in range(1000)}, label=PAIR_LABEL
    )
    before = len(fake.calls)
    hub.poll_now()
    polled = fake.calls[before:]
    assert polled.count(src.query(TRAFFIC_PAIRS)) == 1
    assert len(polled) == len(src.poller.keys())  # one query per required metric, none per node
    series = src.series(TRAFFIC_PAIRS)
    assert series is not None and len(series.keys) == 1000


def test_promtool_accepts_every_preset_query(tmp_path: Any) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (apt-get install prometheus)")
    raw = [{}, {"preset": "hubble", "bytesPerFlow": 1500}, {"preset": "custom", "query": "sum by (a) (up)"}]
    exprs = [
        render(TrafficArgs.decode(Fields(r, "traffic", ErrorList())).promql(), PrometheusArgs()) for r in raw
    ]
    rules = {
        "groups": [
            {"name": "traffic", "rules": [{"record": f"r{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    path = tmp_path / "rules.yaml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    result = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_empty_graph_is_reported_by_the_self_check_and_a_metric_not_per_node(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    clock = FakeClock()
    hub, fake = fake_hub(clock, registry)
    snap = Snapshot.of(node_infos([make_node("n0"), make_node("n1")], []))
    hub.update_nodes(snap.nodes)
    fwk = build_framework([TrafficAffinity], metrics=hub, clock=clock, snapshot=snap)
    src = plugin_of(fwk, TrafficAffinity).source
    fake.serve(src, TRAFFIC_PAIRS, {})  # the mesh reports nothing
    with caplog.at_level(logging.INFO):
        hub.poll_now()
        hub.poll_now()
    report = src.self_check()
    (pairs,) = [m for m in report.metrics if m.metric == TRAFFIC_PAIRS]
    assert pairs.empty and pairs.nodes_without_series_count == 0 and pairs.unmapped_count == 0
    assert any("traffic_pairs: query returned no series" in p for p in report.problems())
    labels = {"source": src.name, "metric": TRAFFIC_PAIRS}
    assert registry.get_sample_value("netsched_metrics_query_empty", labels) == 1
    assert (
        sum("self-check found problems" in r.getMessage() for r in caplog.records) == 1
    )  # once, not per poll


def test_peer_weights_follow_the_index_as_pods_come_and_go() -> None:
    # The sparse weights from the kept index equal a count of the snapshot's pods, step by step.
    rng = np.random.default_rng(7)
    nodes = [make_node(f"n{i}").labels(**{ZONE: "ab"[i % 2]}) for i in range(6)]
    snap = Snapshot.of(node_infos(nodes, []))
    index = WorkloadIndex("")
    edges = {"default/db": 100.0, "default/cache": 30.0, "default/api": 5.0}
    placed: list[Any] = []
    for step in range(40):
        if placed and rng.random() < 0.3:
            placed.pop(int(rng.integers(len(placed))))
        else:
            wl = ["db", "cache", "api", "web"][int(rng.integers(4))]
            placed.append(replica(wl, step, f"n{int(rng.integers(6))}"))
        if step == 20:  # a new snapshot (a node added, say): rows are numbered anew
            snap = Snapshot.of(node_infos(nodes, placed))
        for row, node in enumerate(node_infos(nodes, placed)):
            if [p.uid for p in node.pods.values()] != [p.uid for p in snap.nodes[row].pods.values()]:
                snap.set_node(row, node)
        index.sync(snap)
        got = peers_of(index, edges)
        dense = np.bincount(got.held, weights=got.weights, minlength=len(snap))
        want = np.zeros(len(snap))
        for peer, rate in edges.items():
            infos = [p.info() for p in placed]
            where = [snap.index[p.node_name] for p in infos if workload_key(p, "") == peer]
            for row in where:
                want[row] += rate / len(where)
        np.testing.assert_allclose(dense, want, atol=1e-9)
        assert got.total == pytest.approx(sum(r for w, r in edges.items() if w in index.rows))


def test_the_graph_for_another_thread_leaves_the_cycle_snapshot_alone() -> None:
    """The share gauges' periodic task reads the graph without building a LoadView: views are
    kept in the cycle snapshot's cache, which only the scheduling thread may write."""
    r = Rig([])
    r.edges({"default|api|default|db": 100.0})
    r.snap.cache.clear()
    got = traffic_graph(r.plugin.source, None)
    assert got.of("default/api") == {"default/db": 100.0}
    assert r.snap.cache == {}
    assert traffic_graph(r.plugin.source, r.snap).of("default/api") == {"default/db": 100.0}
    assert r.snap.cache != {}  # the scheduling thread's read goes through the snapshot's view


def test_share_task_reads_the_rows_a_cycle_published_not_the_snapshot_being_rebuilt() -> None:
    """The share gauges run on the periodic thread while the cache rebuilds the live snapshot
    in place (nodes first, then index): a read between the two paired an old row number with
    a new row, so a node's zone came from another node (or the row did not exist)."""
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    nodes = [make_node(f"n{i}").labels(**{ZONE: "ab"[i // 4], RACK: f"r{i // 2}"}) for i in range(8)]
    snap = Snapshot.of(node_infos(nodes, [replica("db", 0, "n0"), replica("api", 0, "n1")]))
    services = fake_services(clock=clock, metrics=hub, assigned=snap)
    metrics = SchedulerMetrics(CollectorRegistry())
    services.plugin_metrics = metrics
    args = TrafficAffinityArgs(levels=(ZONE, RACK))
    fwk = build_framework(
        [TrafficAffinity], args={TrafficAffinity.name: args}, services=services, snapshot=snap
    )
    plugin = plugin_of(fwk, TrafficAffinity)
    fake.serve(plugin.source, TRAFFIC_PAIRS, {"default|api|default|db": 100.0}, label=PAIR_LABEL)
    hub.poll_now()

    def crossing(level: str) -> float | None:
        labels = {"profile": fwk.profile_name, "level": level}
        return metrics.registry.get_sample_value("netsched_traffic_cross_level_ratio", labels)

    plugin.pre_filter(CycleState(), replica("api", 1).info(), snap)  # a cycle sees the rows
    services.periodic.run_all()
    assert (crossing(ZONE), crossing(RACK)) == (0.0, 0.0)  # n0 and n1 share zone a, rack r0
    # A node joins: rebuild sorts it first and has set the new rows, not yet the index.
    newcomer = node_infos([make_node("a-new").labels(**{ZONE: "c", RACK: "r9"})], [])
    snap.nodes = newcomer + snap.nodes
    services.periodic.run_all()
    assert (crossing(ZONE), crossing(RACK)) == (0.0, 0.0)  # read db's n0 as a-new: 1.0, 1.0


def revision(
    workload: str, i: int, template: str, node: str = "", created: str = "2026-01-01T00:00:00Z"
) -> Any:
    """A pod of `workload` made from template revision `template` (its pod-template-hash)."""
    b = (
        make_pod(f"{workload}-{template}-{i}")
        .owner("ReplicaSet", f"{workload}-{template}")
        .label("pod-template-hash", template)
        .set("metadata.creationTimestamp", created)
    )
    return b.node(node) if node else b


LATER = "2026-01-01T00:01:30Z"


def test_a_rolling_update_prices_a_surge_pod_at_its_settled_share() -> None:
    # api has 2 replicas (template h1) sending 400 B/s to db; a RollingUpdate with maxSurge 1
    # adds a third pod (h2) before an old one goes.  The traffic stays the workload's: once the
    # rollout is done two pods share it, so the surge pod carries half (before: a third, and
    # links filled with surge pods ended above their limit when the old pods left).
    db = revision("db", 0, "d1", "n0")
    old = [revision("api", i, "h1", f"n{4 + i}") for i in range(2)]
    r = Rig([db, *old], pending=[revision("api", 0, "h2", created=LATER)])
    r.edges({pair_key("default/api", "default/db", REQUEST): 400.0})
    surge = revision("api", 0, "h2", created=LATER).info()
    assert r.hint(surge)(surge, "n3") == (0.0, 200.0)
    # Before the rollout, with the same three pods of one template, a third each.
    same = [revision("api", i, "h1", f"n{4 + i}") for i in range(3)]
    r2 = Rig([db, *same])
    r2.edges({pair_key("default/api", "default/db", REQUEST): 400.0})
    third = revision("api", 9, "h1").info()
    assert r2.plugin.pod_bandwidth(third, "n3") == (0.0, 400.0 / 3)


def test_peers_a_rollout_replaces_neither_pull_nor_keep_traffic_local() -> None:
    # db rolls out: its old pod (d1) on n0 will be deleted, its new one (d2) runs on n6.  An api
    # pod is pulled to n6, not n0, and on n0 its db traffic counts as leaving the node.
    placed = [revision("db", 0, "d1", "n0"), revision("db", 0, "d2", "n6", created=LATER)]
    r = Rig([*placed, revision("api", 1, "h1", "n5")])
    r.edges({pair_key("default/api", "default/db", REQUEST): 100.0})
    pod = revision("api", 0, "h1").info()
    scored, raw, _ = r.run(pod)
    assert scored
    assert raw[6] == min(raw) and raw[0] > raw[6], raw
    # db's steady pods: one (each revision has one), on n6; api's one placed pod made the 100.
    assert r.plugin.pod_bandwidth(pod, "n0") == (0.0, 100.0)
    assert r.plugin.pod_bandwidth(pod, "n6") == (0.0, 0.0)
    # The rollout done (the old pod gone), the index keeps every pod of the one revision left.
    done = Snapshot.of(node_infos([make_node(f"n{i}") for i in range(8)], [placed[1]]))
    assert r.hint(pod, done)(pod, "n6") == (0.0, 0.0)
