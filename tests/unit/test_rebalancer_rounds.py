"""Rebalancer rounds in memory: the real profile, metrics pipeline (a fake Prometheus) and
evictions of the in-memory cluster.  Hysteresis, a plan checked with the profile, the
replacement steered to the plan's target, dry run, stale samples, a node nothing can leave,
cooldowns kept in the state ConfigMap."""

from __future__ import annotations

import json
from typing import Any

import pytest

from netsched.app import build_registry
from netsched.clock import ManualClock
from netsched.config import load_config
from netsched.framework import CONFIGMAPS
from netsched.inmemory import InMemoryCluster
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX
from netsched.plugins.rebalancer import Rebalancer
from netsched.plugins.rebalancer.plugin import LEFT, RoundReport
from netsched.plugins.rebalancer.state import KEY, State
from netsched.testing.builders import make_node, make_pod
from netsched.testing.framework import plugin_of
from netsched.testing.prometheus import fake_hub

GBIT = 125_000_000.0
NODES = [f"n{i}" for i in range(4)]

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
  plugins:
    multiPoint:
      enabled:
      - {{name: NetworkTraffic, weight: 3}}
      - {{name: LoadThreshold}}
      - {{name: Rebalancer}}
  pluginConfig:
  - name: NetworkTraffic
    args: {{prometheus: &prom {{pollIntervalSeconds: 15, perPodUsage: false}}}}
  - name: LoadThreshold
    args: {{prometheus: *prom}}
  - name: Rebalancer
    args:
      dryRun: {dry_run}
      consecutiveRounds: 2
      intervalSeconds: 30
      prometheus: *prom
"""


class World:
    def __init__(self, dry_run: bool = False, state: bool = True) -> None:
        registry = build_registry()
        self.clock = ManualClock()
        self.hub, self.fake = fake_hub(self.clock)
        cfg = load_config(CONFIG.format(dry_run=str(dry_run).lower()), registry)
        self.cluster = InMemoryCluster(
            cfg, registry, metrics_hub=self.hub, clock=self.clock, keep_events=True
        )
        self.cluster.api.record = True
        self.cluster.add_nodes([make_node(n).capacity(cpu="8", memory="16Gi").obj() for n in NODES])
        if state:
            self.cluster.add_object(
                CONFIGMAPS.key,
                {
                    "metadata": {
                        "name": "netsched-rebalancer",
                        "namespace": "netsched-system",
                        "resourceVersion": "1",
                    },
                    "data": {},
                },
            )
        self.plugin = plugin_of(self.cluster.frameworks["netsched"], Rebalancer)
        self.src = self.plugin.source
        self.tx = dict.fromkeys(NODES, 0.1 * GBIT)

    def pod(self, workload: str, i: int, node: str = "", egress: str = "200M") -> dict[str, Any]:
        b = (
            make_pod(f"{workload}-{i}")
            .scheduler("netsched")
            .req(cpu="100m")
            .owner("ReplicaSet", f"{workload}-h1")
            .label("pod-template-hash", "h1")
            .annotation("kubernetes.io/egress-bandwidth", egress)
        )
        if node:
            b.node(node).set("status.phase", "Running").set(
                "status.conditions", [{"type": "Ready", "status": "True"}]
            )
        return b.obj()

    def poll(self) -> None:
        """A reading of every node now: transmit `self.tx`, CPU and memory idle-ish."""
        names = list(self.tx)
        self.fake.serve(self.src, LINK_SPEED, dict.fromkeys(names, GBIT))
        self.fake.serve(self.src, NETWORK_RX, dict.fromkeys(names, 0.0))
        self.fake.serve(self.src, NETWORK_TX, self.tx)
        self.fake.serve(self.src, CPU, dict.fromkeys(names, 0.2))
        self.fake.serve(self.src, MEMORY, dict.fromkeys(names, 0.3))
        self.hub.poll_now()

    def round(self) -> RoundReport:
        self.clock.step(30)
        self.poll()
        got = self.plugin.run_round()
        assert got is not None
        return got

    def events(self, reason: str) -> list[tuple[str, str]]:
        return [(key, msg) for key, _t, r, msg in self.cluster.events.events if r == reason]


@pytest.fixture
def world() -> World:
    w = World()
    # n0's link at 95 %: its two chatty pods send 25 MB/s each (200 Mbit/s), 40 % of it.
    w.cluster.add_pods(
        [w.pod("web", 0, "n0"), w.pod("api", 0, "n0"), w.pod("web", 1, "n1"), w.pod("api", 1, "n2")]
    )
    w.tx["n0"] = 0.95 * GBIT
    return w


def test_a_hot_link_moves_pods_after_consecutive_rounds_to_where_the_profile_puts_them(world: World) -> None:
    first = world.round()
    assert first.hot == {} and first.moves == []  # one hot round moves nothing
    second = world.round()
    assert second.hot == {"n0": ["network"]}
    # 95 % with 20 % per pod: two moves bring it to 55 %, under the 70 % target; one pod of a
    # workload a round, so one of web and one of api.
    moved = sorted((m["pod"], m["from"], m["result"]) for m in second.moves)
    assert moved == [("default/api-0", "n0", "evicted"), ("default/web-0", "n0", "evicted")]
    assert all(m["to"] != "n0" for m in second.moves)
    evicted = [c for c in world.cluster.api.calls if c[0] == "evict"]
    assert [c[1] for c in evicted] == [m["pod"] for m in second.moves]  # evictions, never deletes
    assert not [c for c in world.cluster.api.calls if c[0] == "delete"]
    events = world.events("Rebalanced")
    assert len(events) == 2 and "n0 link (busier direction) 95% > 80% for 2 rounds; planned" in events[0][1]
    assert "(round 2)" in events[0][1]
    # The state ConfigMap keeps the cooldowns and the moves in flight for the next leader.
    stored = world.cluster.objects.get(CONFIGMAPS.key, "netsched-system", "netsched-rebalancer")
    assert stored is not None
    st = State.decode(stored["data"][KEY])
    assert set(st.moves) == {"default/web", "default/api"} and "n0" in st.nodes


def test_the_replacement_goes_where_the_plan_said_and_never_back(world: World) -> None:
    world.round()
    report = world.round()
    target = {m["pod"]: m["to"] for m in report.moves}["default/web-0"]
    # The controller's replacement: a new pod of web, pending.
    world.cluster.add_pod(world.pod("web", 9))
    world.cluster.schedule_pending()
    assert world.cluster.placements["default/web-9"] == target
    # Its Filter kept it off n0 (LEFT), and the move is done once it is placed.
    assert "default/web" not in world.plugin._state.moves
    fwk = world.cluster.frameworks["netsched"]
    state = fwk.new_cycle_state()
    world.plugin._state.moves["default/web"] = world.plugin._state.moves.get("default/api")  # type: ignore[assignment]
    pending = (
        make_pod("web-10")
        .scheduler("netsched")
        .owner("ReplicaSet", "web-h1")
        .label("pod-template-hash", "h1")
        .info()
    )
    assert world.plugin.pre_filter(state, pending, world.cluster.scheduler.snapshot)[1].ok
    node = next(n for n in world.cluster.scheduler.snapshot.nodes if n.name == "n0")
    st = world.plugin.filter(state, pending, node)
    assert not st.ok and st.reasons == [LEFT]


def test_dry_run_reports_and_evicts_nothing() -> None:
    w = World(dry_run=True)
    w.cluster.add_pods([w.pod("web", 0, "n0"), w.pod("api", 0, "n0")])
    w.tx["n0"] = 0.95 * GBIT
    w.round()
    report = w.round()
    assert [m["result"] for m in report.moves] == ["dryRun", "dryRun"]
    assert not [c for c in w.cluster.api.calls if c[0] == "evict"]
    planned = w.events("RebalancePlanned")
    assert len(planned) == 2 and all(msg.startswith("dry run: n0 link") for _, msg in planned)
    w.round()  # planned again next round: reported once per cooldown, not every round
    assert len(w.events("RebalancePlanned")) == 2


def test_a_single_hot_scrape_moves_nothing(world: World) -> None:
    world.round()  # hot
    world.tx["n0"] = 0.5 * GBIT
    assert world.round().hot == {}  # below: the count starts over
    world.tx["n0"] = 0.95 * GBIT
    assert world.round().moves == []
    assert not [c for c in world.cluster.api.calls if c[0] == "evict"]


def test_stale_samples_or_a_fallback_move_nothing_and_say_so(world: World) -> None:
    world.round()
    world.clock.step(30)
    world.fake.serve(world.src, NETWORK_TX, {n: (world.tx[n], world.clock.wall() - 3600) for n in NODES})
    world.hub.poll_now()
    for metric in (LINK_SPEED, NETWORK_RX, CPU, MEMORY):
        world.fake.serve(world.src, metric, {n: (0.1, world.clock.wall() - 3600) for n in NODES})
    world.hub.poll_now()
    report = world.plugin.run_round()
    assert report is not None and report.skipped == "stale" and report.moves == []


def test_a_node_nothing_can_leave_gets_one_event_not_evictions(world: World) -> None:
    # Every other link is at 75 %: no node stays under the 70 % target with a pod.
    for n in ("n1", "n2", "n3"):
        world.tx[n] = 0.75 * GBIT
    world.round()
    report = world.round()
    assert report.moves == [] and "n0" in report.blocked
    assert not [c for c in world.cluster.api.calls if c[0] == "evict"]
    world.round()
    blocked = world.events("RebalanceBlocked")
    # (LoadThreshold, the profile's own filter, refuses every other node with the pod: 95 %.)
    assert len(blocked) == 1 and blocked[0][0] == "/n0" and "no node fits a pod like it" in blocked[0][1]


def test_a_new_leader_honours_the_cooldowns_kept_in_the_configmap(world: World) -> None:
    world.round()
    world.round()
    assert world.events("Rebalanced")
    # Another replica takes over: a new plugin (its memory empty) reading the same ConfigMap.
    world.plugin._loaded = False
    world.plugin._state = State()
    world.tx["n1"] = 0.95 * GBIT  # n1 turns hot; n0 is cooling down
    world.cluster.add_pods([world.pod("db", 0, "n0")])
    world.round()
    world.round()
    assert world.plugin._state.nodes.get("n0", 0) > world.clock.wall()
    assert not any(m["from"] == "n0" for r in world.plugin.reports for m in r.moves if r.round > 2)


def test_a_move_must_leave_its_target_under_the_target_watermark(world: World) -> None:
    # The others at 60 %: LoadThreshold (80 %) takes a 20 % pod (80 % is not above it), the
    # rebalancer's 70 % target does not.
    for n in ("n1", "n2", "n3"):
        world.tx[n] = 0.6 * GBIT
    world.round()
    report = world.round()
    assert report.moves == [] and "would end above a target watermark" in report.blocked["n0"]


def test_a_disruption_budgets_refusal_is_counted_never_forced(world: World) -> None:
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default", "generation": 1},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"pod-template-hash": "h1"}}},
    }
    world.cluster.add_object("policy/poddisruptionbudgets", budget)
    world.round()
    report = world.round()
    assert sorted(m["result"] for m in report.moves) == ["refused", "refused"]
    assert [c[0] for c in world.cluster.api.calls if c[0] in ("evict", "delete")] == ["evict", "evict"]
    refused = world.events("RebalanceRefused")
    assert len(refused) == 2 and all("retried in a later round" in msg for _, msg in refused)
    assert world.plugin._state.moves == {} and world.plugin._state.workloads == {}  # nothing moved


def test_each_adopted_move_takes_its_own_pod_off_its_own_node() -> None:
    # Two hot nodes: each step tries a pod of each and adopts the larger relief (n0's, tried
    # first). Adopting it must take n0's pod off n0 on the plan's copy, not the last trial's
    # (n1's pod, gone from n1 on a copy later trials recycled): else n1 reads relieved with
    # nothing moved off it, and n0 gets a second move it does not need.
    w = World()
    w.cluster.add_pods(
        [w.pod("web", 0, "n0"), w.pod("api", 0, "n0"), w.pod("db", 0, "n1"), w.pod("cache", 0, "n1")]
    )
    w.tx["n0"] = 0.85 * GBIT  # one move to reach the 70 % target (65 %)
    w.tx["n1"] = 0.95 * GBIT  # 75 % after one move
    w.round()
    report = w.round()
    sources = [m["from"] for m in report.moves]
    assert sources.count("n0") == 1 and "n1" in sources, report.moves


class _Crossing:
    """A plan's measured crossing traffic per workload (bytes/s), as the traffic trigger reads it."""

    def __init__(self, by_workload: dict[str, float]) -> None:
        self.by_workload = by_workload

    def crossing_by_workload(self) -> dict[str, float]:
        return self.by_workload


def test_the_traffic_trigger_needs_its_minimum_for_consecutive_rounds() -> None:
    w = World()  # consecutiveRounds 2, traffic.minCrossingMbps 10 (1.25 MB/s)
    heavy, trickle = 5e6, 1e6
    hot = w.plugin._traffic_hot
    assert hot(_Crossing({"default/web": heavy, "default/api": trickle})) == set()  # type: ignore[arg-type]
    assert hot(_Crossing({"default/web": heavy, "default/api": trickle})) == {"default/web"}  # type: ignore[arg-type]
    # One round below the minimum starts the count over; a trickle never counts.
    assert hot(_Crossing({"default/web": trickle, "default/api": trickle})) == set()  # type: ignore[arg-type]
    assert hot(_Crossing({"default/web": heavy, "default/api": trickle})) == set()  # type: ignore[arg-type]
    assert hot(_Crossing({"default/web": heavy, "default/api": trickle})) == {"default/web"}  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(6))
def test_a_tie_among_equal_nodes_goes_to_the_planned_target(seed: int) -> None:
    # n1, n2 and n3 are alike: the plan takes the first of them (WhatIf.place), the live cycle
    # picks among equal best totals at random unless the held place decides the tie.
    w = World()
    for search in w.cluster.scheduler.searches.values():
        search.seed(seed)
    w.cluster.add_pods([w.pod("web", 0, "n0"), w.pod("api", 0, "n0")])
    w.tx["n0"] = 0.85 * GBIT  # one move: 65 %
    w.round()
    (move,) = w.round().moves
    workload = move["pod"].split("/")[1].rsplit("-", 1)[0]
    w.cluster.add_pod(w.pod(workload, 9))
    w.cluster.schedule_pending()
    assert w.cluster.placements[f"default/{workload}-9"] == move["to"]


def test_the_debug_page_shows_the_rounds_newest_first(world: World) -> None:
    """/debug/rebalancer (Handle.debug_page; over HTTP in tests/integration/test_rebalancer_http.py):
    hot nodes, each planned move with its figures and result, blocked nodes, skipped rounds."""
    for n in ("n1", "n2", "n3"):
        world.tx[n] = 0.75 * GBIT  # nothing can leave n0 at first
    world.round()
    blocked = world.round()
    for n in ("n1", "n2", "n3"):
        world.tx[n] = 0.1 * GBIT
    moved = world.round()
    status, ctype, body = world.cluster.debug_pages.answer("/debug/rebalancer", {})
    assert (status, ctype) == (200, "application/json")
    page = json.loads(body)["profiles"]["netsched"]
    assert (page["leading"], page["dryRun"], page["consecutiveRounds"]) == (True, False, 2)
    assert [r["round"] for r in page["rounds"]] == [3, 2, 1]
    assert page["rounds"][0]["moves"] == moved.moves and page["rounds"][0]["hot"] == {"n0": ["network"]}
    assert page["rounds"][1]["blocked"] == blocked.blocked and page["rounds"][1]["moves"] == []
    text = world.cluster.debug_pages.answer("/debug/rebalancer", {"format": ["text"]})[2].decode()
    lines = text.splitlines()
    assert lines[:2] == [
        "== profile netsched",
        "leader; acting (evicts); a round every 30s, hot after 2 rounds above high",
    ]
    assert lines[2].startswith("round 3 at ") and lines[2].endswith("2 move(s); hot: n0 (network)")
    move = moved.moves[0]
    assert f"  evicted   {move['pod']} n0 -> {move['to']} [network]: {move['why']}" in lines
    assert any(line.startswith("  blocked   n0: ") for line in lines)
    assert lines[-1].endswith("no hot node")  # round 1: one hot round is not yet hot


def test_a_replacement_placed_before_the_evictions_answer_finds_its_move(world: World) -> None:
    """Over HTTP the ReplicaSet controller can make the replacement, and the scheduler place it,
    before the eviction's answer is back (seen in tests/integration/test_grafana_queries.py): the
    move is in flight, its place held, from before the eviction is asked for."""
    found: list[bool] = []
    evict = world.cluster.api.evict

    def evict_then_a_replacement_comes(pod: Any, dry_run: bool = False) -> Any:
        got = evict(pod, dry_run=dry_run)
        workload = pod.name.rsplit("-", 1)[0]
        twin = (
            make_pod(f"{workload}-new")
            .scheduler("netsched")
            .owner("ReplicaSet", f"{workload}-h1")
            .label("pod-template-hash", "h1")
            .info()
        )
        state = world.cluster.frameworks["netsched"].new_cycle_state()
        status = world.plugin.pre_filter(state, twin, world.cluster.scheduler.snapshot)[1]
        found.append(status.ok and not status.is_skip)
        return got

    world.cluster.api.evict = evict_then_a_replacement_comes  # type: ignore[method-assign]
    world.round()
    report = world.round()
    assert [m["result"] for m in report.moves] == ["evicted", "evicted"] and found == [True, True]


def test_an_eviction_that_does_not_happen_leaves_no_move_in_flight(world: World) -> None:
    world.cluster.api.evict = lambda pod, dry_run=False: (_ for _ in ()).throw(RuntimeError("outage"))  # type: ignore[method-assign]
    world.round()
    report = world.round()
    assert [m["result"] for m in report.moves] == ["error", "error"]
    assert world.plugin._state.moves == {} and world.plugin._state.workloads == {}
