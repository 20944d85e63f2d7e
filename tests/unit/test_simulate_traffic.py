"""The traffic model of `netsched simulate` and issue 30's targets on the shipped example.

Placements go through the real scheduler and metrics pipeline; the figures are
traffic shares and link utilisations, never time.  The targets, on
traffic-scenario.yaml's initial placement (before its rollout): TrafficAffinity's
cross-node traffic <= 0.5x kube's default profile's and <= 0.6x the load-aware
profile's, cross-rack <= 0.5x the default's, highest link <= 80 % and <= the
load-aware profile's + 5 points; with no edges known, placements identical
with and without TrafficAffinity, rollout included.  The placement after the
rollout is issue 39's to improve: its figures are printed, not asserted.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml

from netsched.app import build_registry
from netsched.config import ConfigError, SchedulerConfig, load_config
from netsched.framework.parse import parse_pod
from netsched.simulate import Run, load_scenario, simulate
from netsched.simulate.configs import default_profile, example_config, example_text
from netsched.simulate.phases import Figures
from netsched.simulate.report import Report, configured_thresholds, lower_bounds
from netsched.simulate.traffic import Pair, Traffic, counts, nic_loads, shares

REGISTRY = build_registry()
RACK = "example.com/rack"


def traffic_config() -> SchedulerConfig:
    return load_config(example_text("traffic-config.yaml"), REGISTRY, default_scheduler_name="netsched")


def initial(run: Run) -> Figures:
    """The placement before the example's rollout."""
    assert run.phases[0].label == "initial placement"
    return run.phases[0].figures


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    s = load_scenario(example_text("traffic-scenario.yaml"))
    ours = simulate(s, traffic_config(), REGISTRY, label="netsched")
    return {
        "ours": ours,
        "default": simulate(s, default_profile(ours.profile, REGISTRY), REGISTRY, label="default"),
        "load-aware": simulate(s, example_config(REGISTRY), REGISTRY, label="config"),
    }


def test_example_meets_the_traffic_targets(runs: dict[str, Run]) -> None:
    first = {k: initial(r) for k, r in runs.items()}
    ours, default, current = (first[k].traffic for k in ("ours", "default", "load-aware"))
    assert ours is not None and default is not None and current is not None
    for when, pick in (("initial", 0), ("after the rollout", -1)):
        figures = {
            k: (t.cross_node, t.cross_level[RACK], f.max_network)
            for k, r in runs.items()
            if (t := (f := r.phases[pick].figures).traffic) is not None
        }
        print(f"{when}: cross-node, cross-rack, highest link:", figures)
    assert all(f.placed == 27 for f in first.values())
    # With weight 5 it was 0.517x once estimates lasted a whole rate window (node-08 stops taking
    # pods at LoadThreshold's CPU limit sooner): the shipped weight is 10 (0.35x here, on the
    # ledger's readings and per-pod usage), with the same highest CPU as weight 5.
    assert ours.cross_node <= 0.5 * default.cross_node
    assert ours.cross_node <= 0.6 * current.cross_node
    assert ours.cross_level[RACK] <= 0.5 * default.cross_level[RACK]
    assert first["ours"].max_network <= 0.80
    assert first["ours"].max_network <= first["load-aware"].max_network + 0.05
    assert runs["ours"].queries_while_scheduling == 0


def test_example_keeps_the_busiest_node_near_the_cpu_limit(runs: dict[str, Run]) -> None:
    # LoadThreshold keeps a node's reading, corrected by the ledger, plus the pod's estimate at or
    # below 65 %.  The estimate counts 0.85 of a pod's request (cpuFactor) while the simulated
    # pods use all of it, and the ledger takes a pod's load to begin at its reservation while
    # the simulated one begins podStartSeconds (5 s) later, so a reading taken during a pod's
    # ramp holds 5 s less of it than the ledger thinks: the pods' share of the node may reach
    # 15 % + 0.85 x 5/60 over the limit, never more.  On the initial placement (before the rollout).
    ours = runs["ours"]
    scenario = load_scenario(example_text("traffic-scenario.yaml"))
    cpu = {parse_pod(p).key: parse_pod(p).requests.get("cpu", 0) for p in scenario.pods}
    first = {k: n for k, n in ours.placements.items() if k in cpu}
    used = {}
    for node in set(first.values()):
        share = sum(cpu[k] for k, n in first.items() if n == node) / 16_000
        used[node] = (scenario.background[node].cpu.at(0) + share, share)
    busiest, share = max(used.values())
    assert initial(ours).max_cpu == pytest.approx(busiest)
    assert busiest <= 0.65 + (0.15 + 0.85 * 5 / 60) * share + 1e-9


def test_example_rolls_every_pod_out(runs: dict[str, Run]) -> None:
    for run in runs.values():
        rollout = run.phases[-1]
        assert rollout.complete and rollout.deleted == rollout.created == 27 and not run.unscheduled
        assert len(run.live()) == 27 and set(run.live()) == set(run.created_at)


def test_no_edges_known_places_exactly_as_without_the_plugin() -> None:
    s = load_scenario(example_text("traffic-scenario.yaml"))
    s.traffic = Traffic()  # no pair is measured...
    for obj in [*s.pods, *(d.template for d in s.deployments)]:
        obj["metadata"].pop("annotations", None)  # ...and none is declared (nor by the rollout's pods)
    assert not s.traffic and "netsched.io/traffic-peers" not in str([s.pods, s.deployments])
    with_plugin = simulate(s, traffic_config(), REGISTRY)
    without = simulate(s, example_config(REGISTRY), REGISTRY)
    assert len(with_plugin.placements) == 54  # 27, then 27 more in the rollout
    assert with_plugin.placements == without.placements  # 100 % agreement


def test_a_rate_crosses_the_nics_of_both_ends_half_each_way() -> None:
    t = Traffic((Pair.both_ways("default/a", "default/b", 100.0),))
    # a on node 0, b on nodes 0 and 1: half of the pair's traffic stays on node 0.
    c = counts(["default/a", "default/b", "default/b"], [0, 0, 1], np.ones(3), 3)
    rx, tx = nic_loads(t, c, 3)
    assert rx.tolist() == tx.tolist() == [25.0, 25.0, 0.0]
    got = shares(t, c, 3, {RACK: ["r0", "r0", "r1"]})
    assert got.cross_node == 0.5 and got.cross_level[RACK] == 0.0
    assert math.isnan(shares(t, counts([], [], np.ones(0), 3), 3, {}).cross_node)


@pytest.mark.parametrize(
    ("pairs", "path"),
    [
        ([{"source": "a", "destination": "a", "rate": "1Mbit"}], "traffic.pairs[0].destination"),
        ([{"source": "A", "destination": "b", "rate": "1Mbit"}], "traffic.pairs[0].source"),
        ([{"source": "a", "destination": "b", "rate": "fast"}], "traffic.pairs[0].rate"),
        ([{"source": "a", "destination": "b", "rate": 0}], "traffic.pairs[0].rate"),
        (["a-b"], "traffic.pairs[0]"),
    ],
)
def test_traffic_section_errors_name_the_field(pairs: list[object], path: str) -> None:
    doc = {"nodes": "2 nodes, 4 cpu, 8Gi", "pods": "2 pods of 100m cpu", "traffic": {"pairs": pairs}}
    with pytest.raises(ConfigError) as e:
        load_scenario(json.dumps(doc))
    assert path in str(e.value)


def test_explain_shows_the_pods_edges_peers_and_costs() -> None:
    s = load_scenario(example_text("traffic-scenario.yaml"))
    api = next(d for d in s.deployments if d.name == "api")
    run = simulate(s, traffic_config(), REGISTRY, explain_pod=api.pods[2])
    ex = run.explanation
    assert ex is not None
    note = ex.notes["TrafficAffinity"].to_dict()
    assert note["workload"] == "default/api" and note["origin"] == "measured"
    edges = note["edges"]
    assert isinstance(edges, list) and edges[0]["peer"] == "default/frontend"  # the heaviest first
    # api's third pod arrives at 44 s; the poll before it (30 s) reads the mesh's rate over [-30, 30]:
    # 40 MB/s since frontend's and api's first pods both ran (9 s), 21 s of the 60.
    assert edges[0]["bytesPerSecond"] == pytest.approx(40e6 * 21 / 60) and edges[0]["peerNodes"]
    cheapest = note["cheapestNodes"]
    assert isinstance(cheapest, list) and cheapest[0]["cost"] <= cheapest[-1]["cost"]
    text = ex.table()
    assert "traffic of workload default/api (measured edges):" in text
    assert "default/frontend: 14 MB/s with pods on" in text


@pytest.mark.parametrize("file", ["rollout-scenario.yaml", "rollout-rolling-scenario.yaml"])
def test_without_traffic_series_traffic_affinity_places_as_the_load_aware_profile(file: str) -> None:
    # Issue 39's rollouts with no pair traffic at all (nothing measured, nothing declared):
    # deploy/'s profile (TrafficAffinity weight 10) and the load-aware one without it make the
    # same placements, pod for pod, through the rollout.
    raw = yaml.safe_load(example_text(file))
    del raw["traffic"]
    scenario = load_scenario(yaml.safe_dump(raw), file)
    registry = build_registry()
    runs = [
        simulate(scenario, load_config(example_text(name), registry), registry, label=name)
        for name in ("traffic-config.yaml", "config.yaml")
    ]
    assert runs[0].placements == runs[1].placements
    assert len(runs[0].placements) == 56  # 36 pods and the rollout's 20 new ones


def test_the_report_says_why_a_node_ends_above_the_cpu_limit(runs: dict[str, Run]) -> None:
    # Issue 42: the example's busiest node ends its initial placement above the 65 % its config
    # sets; the report says so plainly, how far, and why (decisions against estimates).
    s = load_scenario(example_text("traffic-scenario.yaml"))
    ours = runs["ours"]
    report = Report(
        s,
        [ours],
        ["traffic-config.yaml"],
        lower_bounds(s),
        configured_thresholds(traffic_config(), ours.profile),
    )
    text = report.text(placements=False)
    over = initial(ours).max_cpu - 0.65
    assert over > 0
    assert f"Above LoadThreshold's CPU limit (65.0%) in {ours.label}: initial placement" in text
    assert f"(at most {over * 100:.1f} points over)" in text and "usage.cpuOfRequests" in text
    # A run that stays under its limits gets no such line.
    assert "Above LoadThreshold" not in Report(s, [ours], ["x"], lower_bounds(s), {"cpu": 0.99}).text(
        placements=False
    )
