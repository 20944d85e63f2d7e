"""What the simulated Prometheus reads: exact window averages of the true state, per direction.

Every expected figure is worked out by hand in the table: a pod's load counts
in a rate() for the part of [s - W, s] it ran in (s: the last scrape at or
before the query), in a gauge when it runs at s.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from netsched.config import ConfigError
from netsched.framework.parse import parse_pod
from netsched.framework.types import PodInfo
from netsched.metrics.args import ConnectionKey, NodeMappingArgs
from netsched.metrics.ledger import held
from netsched.metrics.queries import POD_LABEL, POD_USAGE
from netsched.metrics.traffic import REQUEST, RESPONSE, pair_key
from netsched.simulate import LoadModel, load_scenario
from netsched.simulate.history import Track, Window
from netsched.simulate.model import SimulatedPrometheus
from netsched.simulate.traffic import Traffic, flows, placement_traffic
from netsched.simulate.units import Curve
from netsched.simulate.workloads import template_hash
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock

GBIT = 125e6  # bytes/s
TX = 12.5e6  # the pod's egress annotation: 100 Mbit/s

ONE_NODE = """
nodes: "2 nodes, 4 cpu, 8Gi, 1 Gbit"
pods: "1 pod"
metrics: {{default: {{cpu: 0.2}}}}
usage: {{cpuOfRequests: 0.8}}
timing: {{podStartSeconds: 5, scrapeIntervalSeconds: {scrape}, rateWindowSeconds: {window}}}
"""


def busy_pod(name: str = "busy") -> PodInfo:
    return (
        make_pod(name).req(cpu="1", memory="2Gi").annotation("kubernetes.io/egress-bandwidth", "100M").info()
    )


# (bound, deleted or None, scrape, window, poll time, share of the window the pod ran in, runs at s)
CASES = [
    # runs [5, inf); poll 35 reads s = 30, window [-30, 30]: 25 s of 60
    (0.0, None, 15, 60, 35.0, 25 / 60, True),
    # the same poll just before the next scrape still reads s = 30
    (0.0, None, 15, 60, 44.9, 25 / 60, True),
    # at 45 the scrape moves: window [-15, 45], 40 s
    (0.0, None, 15, 60, 45.0, 40 / 60, True),
    # long running: all of it
    (0.0, None, 15, 60, 120.0, 1.0, True),
    # deleted at 40: window [30, 90] of a poll at 100 (s = 90) holds 10 s of it, the gauge nothing
    (0.0, 40.0, 15, 60, 100.0, 10 / 60, False),
    # ... until the scrape at 105: window [45, 105]
    (0.0, 40.0, 15, 60, 105.0, 0.0, False),
    # deleted before the window ends but after s: still running at s
    (0.0, 95.0, 15, 60, 100.0, 60 / 60, True),
    # scraped continuously (0): s = t, window [-23, 37], 32 s
    (0.0, None, 0, 60, 37.0, 32 / 60, True),
    # no window: the instantaneous value at s = 30
    (0.0, None, 15, 0, 37.0, 1.0, True),
    # a 30 s window and scrapes every 10 s: s = 40, window [10, 40], runs [5, 20): 10 s
    (0.0, 20.0, 10, 30, 41.0, 10 / 30, False),
    # bound at 10, gone at 20: runs [15, 20), 5 s of [0, 60]
    (10.0, 20.0, 15, 60, 60.0, 5 / 60, False),
    # deleted before it started: never ran
    (10.0, 12.0, 15, 60, 60.0, 0.0, False),
    # not started yet at s = 15 (bound 12, starts 17)
    (12.0, None, 15, 60, 16.0, 0.0, False),
]


@pytest.mark.parametrize(("bound", "deleted", "scrape", "window", "t", "share", "runs"), CASES)
def test_a_reading_is_the_window_average_of_the_true_load(
    bound: float, deleted: float | None, scrape: int, window: int, t: float, share: float, runs: bool
) -> None:
    model = LoadModel(load_scenario(ONE_NODE.format(scrape=scrape, window=window)))
    model.place(busy_pod(), "node-00", bound)
    if deleted is not None:
        model.remove("default/busy", deleted)
    got = model.loads(t, measured=True)
    assert got.tx[0] == pytest.approx(TX * share)
    assert got.rx[0] == pytest.approx(0.0)
    # CPU: background 20 % of 4 cores, plus 0.8 (cpuOfRequests) x 1 core for its share
    assert got.cpu[0] == pytest.approx(0.2 + 0.8 * share / 4)
    # memory is a gauge: all of it while it runs at the scrape, nothing otherwise
    assert got.memory[0] == pytest.approx(0.25 if runs else 0.0)
    assert got.cpu[1] == pytest.approx(0.2) and got.tx[1] == 0.0
    readings = model.pod_readings(t)
    if share > 0 or runs:
        r = readings["default/busy"]
        assert (r.cpu, r.tx) == (pytest.approx(0.8 * share), pytest.approx(TX * share))
        assert (r.memory == pytest.approx(2 * 2**30)) if runs else math.isnan(r.memory)
    else:
        assert readings == {}


def test_settled_load_counts_every_bound_pod_in_full_until_it_is_gone() -> None:
    model = LoadModel(load_scenario(ONE_NODE.format(scrape=15, window=60)))
    model.place(busy_pod(), "node-00", 10.0)
    assert model.loads(9.0).tx[0] == 0.0  # not bound yet
    assert model.loads(11.0).tx[0] == TX  # bound, not started: in full all the same
    assert model.loads(11.0).cpu[0] == pytest.approx(0.2 + 0.8 / 4)
    model.remove("default/busy", 30.0)
    assert model.loads(30.0).tx[0] == 0.0


def test_readings_move_once_per_scrape_and_follow_load_changes() -> None:
    s = load_scenario(
        ONE_NODE.format(scrape=15, window=60)
        + "timeline:\n"
        + "  - {at: 100, load: {node-01: {networkUtilization: 0.5, cpu: [[0, 0.2], [60, 0.8]]}}}\n"
        + "  - {at: 100, podLoad: {pods: [pod-00], egressBandwidth: 400Mbit, cpu: 2}}\n"
    )
    model = LoadModel(s)
    model.place(parse_pod(s.pods[0]), "node-00", 0.0)
    # pod-00 has no annotations: from 100 it sends 400 Mbit/s and uses 2 cores.
    assert model.loads(99.0, measured=True).tx[0] == 0.0
    at_120 = model.loads(120.0, measured=True)  # window [60, 120]: 20 s of the new load
    assert at_120.tx[0] == pytest.approx(50e6 * 20 / 60)
    assert at_120.cpu[0] == pytest.approx(0.2 + 2 * 20 / 60 / 4)
    # node-01: network 0.5 x 1 Gbit from 100, cpu ramps 0.2 -> 0.8 over 100..160 (a series counts from `at`)
    assert at_120.rx[1] == pytest.approx(0.5 * GBIT * 20 / 60)
    # cpu over [60, 120]: 40 s at 0.2, then 20 s rising 0.2 -> 0.4 (mean 0.3)
    assert at_120.cpu[1] == pytest.approx((40 * 0.2 + 20 * 0.3) / 60)
    assert model.loads(170.0).cpu[1] == pytest.approx(0.8)  # settled: the series' last value


def test_track_and_curve_integrate_exactly() -> None:
    c = Curve(((10.0, 0.0), (20.0, 1.0), (20.0, 3.0)))  # a ramp, then a step
    assert c.integral(0, 10) == 0.0
    assert c.integral(10, 20) == pytest.approx(5.0)
    assert c.integral(15, 30) == pytest.approx(0.5 * (0.5 + 1.0) * 5 + 3.0 * 10)
    tr = Track(Curve.constant(1.0))
    tr.change(50.0, Curve.constant(3.0))
    assert tr.mean(Window(60.0, 20.0)) == pytest.approx((10 * 1 + 10 * 3) / 20)
    assert tr.at(49.9) == 1.0 and tr.at(50.0) == 3.0
    assert tr.mean(Window(45.0, 0.0)) == 1.0  # no window: the value at its end


# ---------------------------------------------------------------- direction

PAIR = """
nodes: "3 nodes, 4 cpu, 8Gi, 1 Gbit"
pods:
  - {{count: 1, deployment: cache, cpu: 100m}}
  - {{count: 1, deployment: db, cpu: 100m}}
traffic:
  pairs: [{{source: cache, destination: db, {rates}}}]
timing: {{rateWindowSeconds: 60}}
"""


def placed_pair(rates: str, db_node: str = "node-01") -> LoadModel:
    s = load_scenario(PAIR.format(rates=rates))
    model = LoadModel(s)
    model.place(parse_pod(s.pods[0]), "node-00", -100.0)
    model.place(parse_pod(s.pods[1]), db_node, -100.0)
    return model


def test_a_one_way_flow_loads_one_direction_only() -> None:
    # db answers cache with 40 MB/s (response: destination -> source); nothing goes the other way.
    model = placed_pair("response: 40MB/s")
    for got in (model.loads(0.0), model.loads(0.0, measured=True)):
        assert got.rx.tolist() == pytest.approx([40e6, 0.0, 0.0])  # cache's node receives
        assert got.tx.tolist() == pytest.approx([0.0, 40e6, 0.0])  # db's node sends
        assert got.network.tolist() == pytest.approx([0.32, 0.32, 0.0])  # the busier direction
    cache = next(iter(model.history.keys))
    assert model.pairs(0.0) == [(pair_key("default/cache", "default/db", RESPONSE), pytest.approx(40e6))]
    readings = model.pod_readings(0.0)
    assert (readings[cache].rx, readings[cache].tx) == (pytest.approx(40e6), 0.0)


def test_a_rate_is_half_each_way_and_one_node_crosses_no_nic() -> None:
    model = placed_pair("rate: 80MB/s")
    assert model.loads(0.0).rx.tolist() == pytest.approx([40e6, 40e6, 0.0])
    assert sorted(model.pairs(0.0)) == [
        (pair_key("default/cache", "default/db", REQUEST), pytest.approx(40e6)),
        (pair_key("default/cache", "default/db", RESPONSE), pytest.approx(40e6)),
    ]
    together = placed_pair("request: 1MB/s, response: 20MB/s", db_node="node-00")
    assert together.loads(0.0).network.tolist() == [0.0, 0.0, 0.0]
    # pod-level counters count same-node traffic too
    readings = together.pod_readings(0.0)
    assert sorted((r.rx, r.tx) for r in readings.values()) == [
        (pytest.approx(1e6), pytest.approx(20e6)),
        (pytest.approx(20e6), pytest.approx(1e6)),
    ]


def test_a_pair_is_measured_while_both_ends_run_averaged_over_the_window() -> None:
    s = load_scenario(PAIR.format(rates="response: 40MB/s"))
    model = LoadModel(s)
    model.place(parse_pod(s.pods[0]), "node-00", 0.0)  # runs from 5
    model.place(parse_pod(s.pods[1]), "node-01", 10.0)  # runs from 15: the pair flows from 15
    assert model.pairs(14.0) == []  # s = 0
    assert model.pairs(30.0)[0][1] == pytest.approx(40e6 * 15 / 60)  # window [-30, 30]
    model.remove(parse_pod(s.pods[1]).key, 70.0)
    assert model.pairs(90.0)[0][1] == pytest.approx(40e6 * 40 / 60)  # [30, 90]: 30..70
    assert model.pairs(135.0) == []  # [75, 135]: gone


def test_flows_split_each_direction_over_pod_pairs() -> None:
    # source pods on nodes 0 and 1, one destination pod on node 1; 20 B/s request, 60 B/s response
    rx, tx, active = flows(np.array([[1.0, 1.0]]), np.array([[0.0, 1.0]]), np.array([20.0]), np.array([60.0]))
    # the pod pair (node 0, node 1) crosses: 10 B/s to node 1, 30 B/s back to node 0
    assert rx.tolist() == [30.0, 10.0] and tx.tolist() == [10.0, 30.0] and active.tolist() == [True]
    got = placement_traffic(
        load_scenario(PAIR.format(rates="request: 20B/s, response: 60B/s")).traffic,
        {"default/cache": [1, 1, 0], "default/db": [0, 1, 0]},
        {"rack": ["a", "a", "b"]},
    )
    assert got.rx.tolist() == [30.0, 10.0, 0.0] and got.tx.tolist() == [10.0, 30.0, 0.0]
    assert got.shares.cross_node == 0.5 and got.shares.cross_level["rack"] == 0.0
    with pytest.raises(ValueError, match="one entry per node"):
        placement_traffic(Traffic(), {"default/cache": [1, 1], "default/db": [0, 1, 0]})


def test_template_hash_uses_the_replica_set_alphabet_and_follows_the_template() -> None:
    a = template_hash({"spec": {"containers": [{"name": "c"}]}})
    assert a == template_hash({"spec": {"containers": [{"name": "c"}]}})
    assert a != template_hash({"spec": {"containers": [{"name": "d"}]}})
    assert set(a) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(a) <= 10


def test_timing_and_usage_fields() -> None:
    s = load_scenario(ONE_NODE.format(scrape=10, window=30))
    assert (s.timing.scrape_interval, s.timing.window(60.0), s.usage.cpu_of_requests) == (10, 30, 0.8)
    plain = load_scenario('nodes: "1 node"\npods: "1 pod"')
    assert plain.timing.rate_window_seconds is None and plain.timing.window(120.0) == 120.0
    assert plain.timing.window() == 60.0 and plain.usage.cpu_of_requests == 1.0
    with pytest.raises(ConfigError) as e:
        load_scenario(
            'nodes: "1 node"\npods: "1 pod"\nusage: {cpuOfRequests: -1, memory: 1}\n'
            "timing: {scrapeIntervalSeconds: -5}"
        )
    got = [str(err) for err in e.value.errors]
    assert any(g.startswith("usage.cpuOfRequests: Invalid value: -1") for g in got)
    assert any(g.startswith("usage.memory: Unknown field") for g in got)
    assert any(g.startswith("timing.scrapeIntervalSeconds: Invalid value: -5") for g in got)


def test_the_per_pod_usage_query_is_answered_with_the_pod_readings() -> None:
    model = LoadModel(load_scenario(ONE_NODE.format(scrape=15, window=60)))
    model.place(busy_pod(), "node-00", 0.0)
    model.place(busy_pod("gone"), "node-01", 0.0)
    model.remove("default/gone", 20.0)
    t = [35.0]
    prom = SimulatedPrometheus(
        model,
        ConnectionKey("http://prom:9090", "", "", False, 5.0, 15.0, NodeMappingArgs()),
        FakeClock(),
        lambda: t[0],
        {"q": (POD_USAGE, 60.0)}.get,
    )
    got = {s["metric"][POD_LABEL]: float(s["value"][1]) for s in prom.query("q", 5.0)}
    # s = 30: busy ran 25 s of the window, gone 15 s (5..20) and has no memory series any more
    assert got == {
        "default/busy/cpu": pytest.approx(0.8 * 25 / 60),
        "default/busy/memory": 2 * 2**30,
        "default/busy/network_rx": 0.0,
        "default/busy/network_tx": pytest.approx(TX * 25 / 60),
        "default/gone/cpu": pytest.approx(0.8 * 15 / 60),
        "default/gone/network_rx": 0.0,
        "default/gone/network_tx": pytest.approx(TX * 15 / 60),
    }
    t[0] = 90.0  # [30, 90]: gone is out of the window
    assert {s["metric"][POD_LABEL].rsplit("/", 1)[0] for s in prom.query("q", 5.0)} == {"default/busy"}


@pytest.mark.parametrize(("bound", "deleted", "scrape", "window", "t", "share", "runs"), CASES)
def test_the_window_share_is_the_ledgers_held(
    bound: float, deleted: float | None, scrape: int, window: int, t: float, share: float, runs: bool
) -> None:
    # One definition of what a reading holds of a pod, in the simulator and in the scheduler's ledger.
    w = Window.at(t, scrape, window)
    start, end = bound + 5, math.inf if deleted is None else deleted
    got = w.share(np.array([start]), np.array([end]))[0]
    assert got == pytest.approx(held(start, end, w.end, window)) == pytest.approx(share)
    assert bool(w.holds(np.array([start]), np.array([end]))[0]) == (held(start, end, w.end, 0) == 1.0) == runs
