"""The simulation's load model, its Prometheus, and the time loop around the real scheduler."""

from __future__ import annotations

import pytest

from netsched.app import build_registry
from netsched.config import load_config
from netsched.framework.parse import parse_pod
from netsched.metrics import CPU, LINK_SPEED, NETWORK_RX, QueryError
from netsched.metrics.args import ConnectionKey, NodeMappingArgs
from netsched.simulate import LoadModel, load_scenario, simulate
from netsched.simulate.configs import default_profile, example_config
from netsched.simulate.engine import retarget
from netsched.simulate.model import SimulatedPrometheus
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock

GBIT_BYTES = 125_000_000.0
REGISTRY = build_registry()

LABEL_MAPPED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
  plugins:
    multiPoint:
      enabled:
      - {name: NetworkTraffic, weight: 3}
"""

TWO_NODES = """
nodes: "2 nodes, 4 cpu, 8Gi, 1 Gbit"
pods: "1 pod"
metrics: {node-00: {networkUtilization: 0.1, cpu: 0.5}}
timing: {podStartSeconds: 5, rateWindowSeconds: 60}
"""


def heavy_pod() -> object:
    return (
        make_pod("heavy")
        .req(cpu="1", memory="1Gi")
        .annotation("kubernetes.io/ingress-bandwidth", "100M")
        .annotation("kubernetes.io/egress-bandwidth", "50M")
        .info()
    )


def conn(mapping: NodeMappingArgs) -> ConnectionKey:
    return ConnectionKey("http://prom:9090", "", "", False, 5.0, 15.0, mapping)


# ---------------------------------------------------------------- load model


def test_true_load_is_background_plus_pods() -> None:
    model = LoadModel(load_scenario(TWO_NODES))
    model.place(heavy_pod(), "node-00", 0.0)  # type: ignore[arg-type]
    now = model.loads(0.0)
    # rx: 10 % of 1 Gbit + 100 Mbit = 20 %; tx: 10 % + 50 Mbit = 15 %; the busier direction counts.
    assert now.network.tolist() == pytest.approx([0.2, 0.0])
    assert now.cpu.tolist() == pytest.approx([0.5 + 0.25, 0.0])
    assert now.memory.tolist() == pytest.approx([0.125, 0.0])


def test_measured_load_lags_pod_start_and_ramps_over_the_rate_window() -> None:
    # test_simulate_window.py has the table; here the shape: nothing before the pod starts, a
    # share of it while the window fills, all of it after.
    model = LoadModel(load_scenario(TWO_NODES))
    model.place(heavy_pod(), "node-00", 0.0)  # type: ignore[arg-type]
    assert model.loads(4.0, measured=True).network[0] == pytest.approx(0.1)  # not started yet
    half = model.loads(35.0, measured=True)  # scraped at 30: started at 5, 25 s of the 60 s window
    assert half.network[0] == pytest.approx(0.1 + 0.1 * 25 / 60)
    assert half.cpu[0] == pytest.approx(0.5 + 0.25 * 25 / 60)
    assert half.memory[0] == pytest.approx(0.125)  # a gauge: all of it once running
    assert model.loads(75.0, measured=True).network[0] == pytest.approx(0.2)


def test_existing_pods_are_load_from_the_start() -> None:
    s = load_scenario(TWO_NODES + 'existingPods: "1 pod per node of 2 cpu, 250 Mbit"\n')
    model = LoadModel(s)
    assert model.loads(0.0, measured=True).cpu.tolist() == pytest.approx([1.0, 0.5])
    assert model.loads(0.0).network.tolist() == pytest.approx([0.35, 0.25])


def test_simulated_prometheus_answers_with_the_mapping_label() -> None:
    model = LoadModel(load_scenario(TWO_NODES))
    clock = FakeClock()
    prom = SimulatedPrometheus(
        model, conn(NodeMappingArgs()), clock, lambda: 0.0, {"q-rx": (NETWORK_RX, 60.0)}.get
    )
    got = prom.query("q-rx", 5.0)
    assert got == [
        {"metric": {"node": "node-00"}, "value": [clock.wall(), repr(0.1 * GBIT_BYTES)]},
        {"metric": {"node": "node-01"}, "value": [clock.wall(), "0.0"]},
    ]
    assert prom.query("custom_plugin_query", 5.0) == []
    by_instance = SimulatedPrometheus(
        model, conn(NodeMappingArgs(by="instance")), clock, lambda: 0.0, {"q": (LINK_SPEED, 60.0)}.get
    )
    assert [s["metric"] for s in by_instance.query("q", 5.0)] == [
        {"instance": "node-00:9100"},
        {"instance": "node-01:9100"},
    ]
    assert model.queries == 3


def test_simulated_outage_is_an_unreachable_prometheus() -> None:
    model = LoadModel(load_scenario(TWO_NODES + "prometheus: {outages: [[10, 20]]}\n"))
    t = [15.0]
    prom = SimulatedPrometheus(
        model, conn(NodeMappingArgs()), FakeClock(), lambda: t[0], {"q": (CPU, 60.0)}.get
    )
    with pytest.raises(QueryError) as e:
        prom.query("q", 5.0)
    assert e.value.reason == "unreachable" and e.value.transient
    t[0] = 20.0
    assert len(prom.query("q", 5.0)) == 2


# ---------------------------------------------------------------- the time loop


def test_polls_follow_simulated_time_and_no_query_comes_from_scheduling() -> None:
    s = load_scenario(
        'nodes: "3 nodes, 1 Gbit"\npods: "10 pods of 100m cpu"\ntiming: {arrivalRatePerSecond: 1}'
    )
    cfg = load_config(LABEL_MAPPED, REGISTRY)
    run = simulate(s, cfg, REGISTRY)
    # Arrivals at 0..9 s, polls every 15 s (the config's interval): one, at 0 s.
    # rx, tx and link speed, and the per-pod usage that corrects rx and tx: 4 a poll.
    assert run.polls == 1 and run.queries == 4 and run.queries_while_scheduling == 0
    s.timing = type(s.timing)(arrival_rate=1, poll_interval=4)
    run = simulate(s, cfg, REGISTRY)
    assert run.polls == 3 and run.queries == 12  # at 0, 4 and 8 s
    assert len(run.placements) == 10 and not run.unscheduled


def test_unplaceable_pods_are_reported_with_the_scheduler_message() -> None:
    s = load_scenario('nodes: "2 nodes, 4 cpu"\npods: ["1 pod of 1 cpu", "1 pod of 64 cpu, prefix huge"]')
    run = simulate(s, default_profile("netsched", REGISTRY), REGISTRY, label="default")
    assert list(run.placements) == ["default/pod-00"]
    assert "Insufficient cpu" in run.unscheduled["default/huge-00"]


def test_pods_of_another_scheduler_are_retargeted_to_the_simulated_profile() -> None:
    raw = [make_pod("a").scheduler("netsched").obj(), make_pod("b").scheduler("elsewhere").obj()]
    got = retarget(raw, ["netsched"], "netsched")
    assert [p["spec"]["schedulerName"] for p in got] == ["netsched", "netsched"]
    assert raw[1]["spec"]["schedulerName"] == "elsewhere"  # copies


def test_explain_is_taken_from_the_cycle_that_placed_the_pod() -> None:
    s = load_scenario(
        """
nodes: "4 nodes, 8 cpu, 32Gi, 10 Gbit"
pods: "6 pods of 500m cpu, 1Gi, 100 Mbit"
metrics: {default: {networkUtilization: 0.7}, node-02: {networkUtilization: 0.05}}
"""
    )
    run = simulate(s, example_config(REGISTRY), REGISTRY, explain_pod="default/pod-03")
    ex = run.explanation
    assert ex is not None and ex.pod == "default/pod-03"
    assert ex.winner == run.placements["default/pod-03"] == "node-02"
    assert run.explained_at == pytest.approx(3 / 20)
    assert {n.node for n in ex.nodes} == set(s.node_names)
    assert "NetworkTraffic" in ex.weights


def test_same_seed_same_placements() -> None:
    s = load_scenario('nodes: "8 nodes"\npods: "40 pods of 100m cpu, 10-90 Mbit"')
    cfg = example_config(REGISTRY)
    first = simulate(s, cfg, REGISTRY, seed=3).placements
    assert simulate(s, example_config(REGISTRY), REGISTRY, seed=3).placements == first
    assert set(first) == {parse_pod(p).key for p in s.pods}


def test_explained_winner_is_the_placement_when_totals_tie() -> None:
    s = load_scenario('nodes: "4 nodes"\npods: "1 pod of 100m cpu"')
    for seed in range(5):
        run = simulate(
            s, default_profile("netsched", REGISTRY), REGISTRY, explain_pod="default/pod-00", seed=seed
        )
        assert run.explanation is not None
        assert len({n.total for n in run.explanation.nodes}) == 1  # four equal nodes
        assert run.explanation.winner == run.placements["default/pod-00"]
