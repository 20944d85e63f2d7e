"""Placement quality at small scale (benchmarks/quality.py runs the full-size versions).

netsched (netsched/examples/config.yaml, the deployed profile) against kube's
default profile and the water-filling bound, through the real scheduler and
the real metrics pipeline.  Asserts where pods go, never how fast.
"""

from __future__ import annotations

from collections import Counter

from netsched.app import build_registry
from netsched.config import load_config
from netsched.simulate import Run, Scenario, Spread, load_scenario, lower_bounds, simulate
from netsched.simulate.configs import default_profile, example_config

REGISTRY = build_registry()

SKEWED = """
nodes: "20 nodes, 32 cpu, 128Gi, 1 Gbit"
pods: "100 pods of 500m cpu, 1Gi, 50-100 Mbit"
metrics: "4 hot nodes at 60-80% network"
timing: {arrivalRatePerSecond: 20, pollIntervalSeconds: 15}
"""


def both(s: Scenario) -> tuple[Run, Run]:
    ours = simulate(s, example_config(REGISTRY), REGISTRY, label="netsched")
    base = simulate(s, default_profile(ours.profile, REGISTRY), REGISTRY, label="default")
    return ours, base


def max_network(run: Run) -> float:
    assert run.after is not None
    return Spread.of(run.after.network).max


def hot_nodes(s: Scenario) -> set[str]:
    return {n for n, b in s.background.items() if b.network.at(0) > 0}


def test_skewed_background_avoids_busy_links_and_reaches_the_bound() -> None:
    s = load_scenario(SKEWED)
    ours, base = both(s)
    bound = lower_bounds(s)["network"]
    assert len(ours.placements) == len(base.placements) == 100
    assert max_network(ours) <= 1.10 * bound  # the documented margin
    assert max_network(ours) <= 0.70 * max_network(base)
    assert not hot_nodes(s) & set(ours.placements.values())
    assert hot_nodes(s) & set(base.placements.values())  # the default profile cannot see the load
    # Five node metrics and the per-pod usage, every poll; none while scheduling.
    assert ours.queries_while_scheduling == 0 and ours.queries == 6 * ours.polls


def test_slow_arrivals_across_many_polls_stay_near_the_bound() -> None:
    """Estimates hand over to samples poll after poll (pods start late and ramp up)."""
    s = load_scenario(SKEWED.replace("arrivalRatePerSecond: 20", "arrivalRatePerSecond: 1"))
    ours, base = both(s)
    assert ours.polls == 7
    assert max_network(ours) <= 1.10 * lower_bounds(s)["network"]
    assert max_network(ours) < max_network(base)


# NetworkTraffic alone decides: on equal nodes and one sample only its estimates
# of just-placed pods can tell the nodes apart (kube's score plugins would spread
# the pods by requests on their own).
NETWORK_ONLY = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
  plugins:
    multiPoint:
      enabled: [{name: NetworkTraffic, weight: 1}]
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NetworkTraffic, weight: 1}]
"""


def test_burst_within_one_poll_spreads_over_equal_nodes() -> None:
    s = load_scenario(
        """
nodes: "20 nodes, 32 cpu, 128Gi, 1 Gbit"
pods: "80 pods of 500m cpu, 1Gi, 50 Mbit"
timing: {arrivalRatePerSecond: 100, pollIntervalSeconds: 15}
"""
    )
    fair = len(s.pods) / len(s.nodes)
    ours, _ = both(s)
    assert ours.polls == 1  # every pod placed on the same, single sample
    assert max(Counter(ours.placements.values()).values()) <= 1.5 * fair
    alone = simulate(s, load_config(NETWORK_ONLY, REGISTRY), REGISTRY)
    assert alone.polls == 1 and len(alone.placements) == 80
    assert max(Counter(alone.placements.values()).values()) <= 1.5 * fair


def test_prometheus_down_falls_back_to_requests() -> None:
    s = load_scenario(SKEWED + "prometheus: {down: true}\n")
    ours, base = both(s)
    assert len(ours.placements) == 100 and ours.queries_while_scheduling == 0
    # Blind to the background, netsched spreads the pods' requested bandwidth like the default does.
    assert hot_nodes(s) & set(ours.placements.values())
    assert max_network(ours) <= max_network(base) + 0.02
    assert max(Counter(ours.placements.values()).values()) <= 1.5 * len(s.pods) / len(s.nodes)
