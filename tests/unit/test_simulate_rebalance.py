"""The Rebalancer in `netsched simulate`: the scenario sections it needs (budgets, a podLoad on
the pods of some nodes, jitter) and one run of each shipped rebalance example, checked for the
safety properties (no replacement back on its source, never more than one pod of a Deployment
unavailable, nothing evicted in the control and the dry run)."""

from __future__ import annotations

import numpy as np
import pytest

from netsched.app import build_registry
from netsched.config import ConfigError, load_config
from netsched.simulate import Report, Run, Scenario, load_scenario, lower_bounds, simulate
from netsched.simulate.configs import example_text
from netsched.simulate.moves import EVICTED, Rebalancing, figures
from netsched.simulate.timeline import PodLoadChange

REGISTRY = build_registry()

BASE = """
nodes: "3 nodes, 8 cpu, 16Gi, 1 Gbit"
pods:
  - {count: 3, deployment: web, cpu: 200m, labels: {app: web}}
  - {count: 2, deployment: bare, cpu: 200m}
"""


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_scenario(text)
    return [str(x) for x in e.value.errors]


def test_budgets_generated_per_deployment_or_as_written() -> None:
    s = load_scenario(
        BASE
        + """
podDisruptionBudgets:
  - {deployment: web, maxUnavailable: 1}
  - kind: PodDisruptionBudget
    metadata: {name: other}
    spec: {minAvailable: 50%, selector: {matchLabels: {app: web}}}
"""
    )
    web, other = s.budgets
    assert web["metadata"] == {"name": "web", "namespace": "default", "generation": 1}
    assert web["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    assert other["spec"]["minAvailable"] == "50%" and other["apiVersion"] == "policy/v1"


def test_budget_errors_carry_their_paths() -> None:
    got = errors(
        BASE
        + """
podDisruptionBudgets:
  - {deployments: all, maxUnavailable: 1, minAvailable: 2}
  - {deployment: nope, maxUnavailable: -1}
  - {deployments: [bare], maxUnavailable: 1}
  - {kind: PodDisruptionBudget, metadata: {}, spec: {maxUnavailable: 1}}
"""
    )
    assert got == [
        "podDisruptionBudgets[0].minAvailable: Forbidden: one of maxUnavailable, minAvailable, not maxUnavailable too",
        'podDisruptionBudgets[1].deployment: Invalid value: "nope": no such Deployment among the scenario\'s pods',
        'podDisruptionBudgets[1].maxUnavailable: Invalid value: -1: must be a number of pods (>= 0) or a percentage such as "10%"',
        'podDisruptionBudgets[2]: Invalid value: "bare": the Deployment\'s pods carry no labels for a budget to select: give its pods labels',
        "podDisruptionBudgets[3].metadata.name: Required value",
        "podDisruptionBudgets[3].spec.selector: Required value: which pods the budget covers (matchLabels)",
    ]


def test_jitter_is_drawn_per_step_within_its_band_with_single_step_spikes() -> None:
    s = load_scenario(
        BASE
        + """
metrics:
  node-00: {networkUtilization: {around: 70%, plusMinus: 15%, forSeconds: 600, spikeTo: 90%, spikeEverySeconds: 120}}
"""
    )
    curve, speed = s.background["node-00"].network, s.link_speed["node-00"]
    steps = np.array([curve.at(15 * k + 7.5) / speed for k in range(40)])  # mid-step values
    spikes = np.flatnonzero(np.isclose(steps, 0.9))
    assert list(spikes) == [7, 15, 23, 31, 39]  # one 15 s step every 120 s
    rest = np.delete(steps, spikes)
    assert rest.min() >= 0.55 and rest.max() <= 0.85 and rest.std() > 0.03  # drawn, not constant
    assert curve.at(601) / speed == pytest.approx(0.7) and curve.at(5000) / speed == pytest.approx(0.7)


def test_pod_load_on_the_pods_of_some_nodes() -> None:
    s = load_scenario(
        BASE + "timeline: [{at: 60, podLoad: {nodes: [node-01], perNode: 2, egressBandwidth: 200Mbit}}]"
    )
    (entry,) = s.timeline
    assert isinstance(entry.action, PodLoadChange)
    assert entry.action.nodes == ("node-01",) and entry.action.per_node == 2 and entry.action.tx == 25e6
    got = errors(BASE + "timeline: [{at: 60, podLoad: {nodes: [node-09], workload: web, cpu: 1}}]")
    assert got == [
        "timeline[0].podLoad.workload: Required value: one of a workload, pods: [names] or nodes: [names]"
    ]
    got = errors(BASE + "timeline: [{at: 60, podLoad: {nodes: [node-09], cpu: 1}}]")
    assert got == ['timeline[0].podLoad.nodes[0]: Invalid value: "node-09": no such node in nodes']


def run(name: str) -> tuple[Scenario, Run, Rebalancing]:
    scenario = load_scenario(example_text(name), name)
    cfg = load_config(example_text(scenario.config), REGISTRY)
    got = simulate(scenario, cfg, REGISTRY)
    assert got.rebalancing is not None
    return scenario, got, got.rebalancing


def safe(rb: Rebalancing) -> None:
    f = figures(rb)
    assert f.back_on_source == 0
    assert f.most_unavailable <= 1
    assert all(m.landed for m in rb.moves if m.result == EVICTED)  # every evicted pod was replaced


def test_hot_links_are_relieved_by_the_fewest_moves() -> None:
    scenario, got, rb = run("rebalance-hot-links.yaml")
    safe(rb)
    f = figures(rb)
    # Two NICs at 95.5 %, three 23.5 % pods on each: one move each brings them to 72 %.
    assert f.evictions == 2 and {m.source for m in rb.moves} == {"node-00", "node-01"}
    assert len({m.round for m in rb.moves}) == 1  # planned in one round from the estimates
    assert f.on_target == 2 and f.over_target_after == 0
    # The ReplicaSets recreate the evicted pods in the round's second, and they are placed then
    # (not after the next round has run).
    assert all(got.bound_at[m.replacement] == m.at for m in rb.moves)
    assert f.max_network_end <= 0.8
    assert "Moves (the Rebalancer's rounds" in Report(scenario, [got], ["x"], lower_bounds(scenario)).text()


def test_a_dry_run_plans_the_same_moves_and_evicts_nothing() -> None:
    _, got, rb = run("rebalance-dry-run.yaml")
    assert rb.moves and {m.result for m in rb.moves} == {"dryRun"}
    assert figures(rb).evictions == 0 and not got.deleted_at
    assert figures(rb).max_network_end > 0.9  # nothing moved: the links stay hot


def test_the_control_jitter_moves_nothing() -> None:
    _, got, rb = run("rebalance-control.yaml")
    f = figures(rb)
    assert f.read_over > 0  # single readings above 80 % happened ...
    assert rb.moves == [] and f.evictions == 0 and not got.deleted_at  # ... and moved nothing


def test_traffic_drift_moves_pods_next_to_their_new_peers() -> None:
    _, got, rb = run("rebalance-traffic-drift.yaml")
    safe(rb)
    f = figures(rb)
    assert 0 < f.evictions <= 4 and {m.trigger for m in rb.moves} == {"traffic"}
    # Every replacement where the plan said: a round never moves both ends of a pair (the
    # second would take the first's target away), and replacements are placed before the
    # next round plans.
    assert f.on_target == f.replacements == f.evictions
    at_change = next(s.cross_node for s in rb.samples if s.at >= 150)
    assert rb.samples[-1].cross_node <= 0.6 * at_change
