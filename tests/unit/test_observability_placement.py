"""Placement effects: the chosen node against the median, placements over the threshold, and the
gauges computed at scrape time (unschedulable pods per plugin, weights, thresholds, requested)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from netsched.framework.cycle_state import CycleState
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, QueryError
from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.placement import PlacementCollector, PlacementEffects
from netsched.plugins.load_aware import LoadAware
from netsched.plugins.load_threshold import LoadThreshold
from netsched.testing.builders import make_node
from netsched.testing.metric_rig import MetricRig

GBIT = 125_000_000.0
# n0..n4: cpu 0.12 0.2 0.3 0.5 0.9 (median 0.3, LoadThreshold's default limit 0.65); memory 0.4 on
# every node; network: n4's busier direction at 0.9 of its link, the others idle (median 0).
CPU_LOAD = {"n0": 0.12, "n1": 0.2, "n2": 0.3, "n3": 0.5, "n4": 0.9}
BUCKETS = (-0.5, -0.3, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
TX = {"n0": 0.0, "n1": 0.0, "n2": 0.0, "n3": 0.0, "n4": 0.9 * GBIT}


def rig() -> MetricRig[LoadThreshold]:
    r = MetricRig(
        LoadThreshold,
        5,
        capacity={"cpu": "4", "memory": "8Gi"},
        defaults={NETWORK_RX: 0.0, LINK_SPEED: GBIT, MEMORY: 0.4},
    )
    r.load(**{CPU: CPU_LOAD, NETWORK_TX: TX})
    return r


def value(reg: CollectorRegistry, name: str, **labels: str) -> float:
    got = reg.get_sample_value(name, labels)
    return 0.0 if got is None else got


@pytest.mark.parametrize(
    ("node", "above", "over"),
    [
        ("n0", {"cpu": -0.18, "memory": 0.0, "network": 0.0}, set()),
        ("n2", {"cpu": 0.0, "memory": 0.0, "network": 0.0}, set()),
        ("n4", {"cpu": 0.6, "memory": 0.0, "network": 0.9}, {"cpu", "network"}),
    ],
)
def test_chosen_node_against_the_median_and_the_threshold(
    node: str, above: dict[str, float], over: set[str]
) -> None:
    r = rig()
    metrics = SchedulerMetrics(CollectorRegistry())
    effects = PlacementEffects(metrics)
    state = CycleState()
    effects.decided(r.framework, state, r.snap, node)
    reg = metrics.registry
    profile = r.framework.profile_name
    # Nothing is counted before the binding succeeds.
    assert (
        value(reg, "netsched_placement_utilisation_above_median_count", profile=profile, resource="cpu") == 0
    )
    effects.bound(r.framework, state)
    for res, diff in above.items():
        labels = {"profile": profile, "resource": res}
        assert value(reg, "netsched_placement_utilisation_above_median_count", **labels) == 1, res
        # The histogram has negative buckets, so no _sum (OpenMetrics): the buckets place it.
        for le in BUCKETS:
            got = value(reg, "netsched_placement_utilisation_above_median_bucket", le=str(le), **labels)
            assert got == (1.0 if diff <= le else 0.0), (res, le)
        expected = 1.0 if res in over else 0.0
        assert value(reg, "netsched_placements_over_threshold_total", **labels) == expected, res


def test_no_figures_while_prometheus_is_down() -> None:
    """In fallback the plugins read requests, not measurements: nothing to compare."""
    r = rig()
    r.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    r.hub.poll_now()
    metrics = SchedulerMetrics(CollectorRegistry())
    effects = PlacementEffects(metrics)
    state = CycleState()
    effects.decided(r.framework, state, r.snap, "n4")
    effects.bound(r.framework, state)
    samples = [
        s
        for fam in metrics.registry.collect()
        if fam.name == "netsched_placement_utilisation_above_median"
        for s in fam.samples
    ]
    assert samples == []


def test_the_figures_cache_does_not_keep_a_replaced_source_alive() -> None:
    """A reload that changes the metric args builds new sources; the old one (and its per-node
    arrays) must go with the frameworks that read it, not stay in the effects' cache."""
    import gc
    import weakref

    metrics = SchedulerMetrics(CollectorRegistry())
    effects = PlacementEffects(metrics)
    r = rig()
    effects.decided(r.framework, CycleState(), r.snap, "n4")
    gone = weakref.ref(r.plugin.source)
    del r
    gc.collect()
    assert gone() is None
    r = rig()  # the new generation's source is cached in its place
    state = CycleState()
    effects.decided(r.framework, state, r.snap, "n4")
    effects.bound(r.framework, state)
    labels = {"profile": r.framework.profile_name, "resource": "cpu"}
    assert value(metrics.registry, "netsched_placements_over_threshold_total", **labels) == 1


def test_collector_reports_rejections_weights_thresholds_and_requests() -> None:
    r = rig()
    nodes = [
        make_node("a").capacity(cpu="4", memory="8Gi").info(),
        make_node("b").capacity(cpu="2", memory="4Gi").info(),
    ]
    nodes[0].requested = {"cpu": 1000, "memory": 2 * 2**30}
    reg = CollectorRegistry()
    aware = MetricRig(LoadAware, 1, capacity={"cpu": "4", "memory": "8Gi"})
    reg.register(
        PlacementCollector(
            lambda: {"threshold": r.framework, "aware": aware.framework},
            lambda: {("LoadThreshold", "netsched"): 3, ("NodeResourcesFit", "netsched"): 1},
            lambda: nodes,
        )
    )
    assert value(reg, "scheduler_unschedulable_pods", plugin="LoadThreshold", profile="netsched") == 3
    assert value(reg, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile="netsched") == 1
    assert value(reg, "netsched_plugin_weight", profile="aware", plugin="LoadAware") == 1
    assert (
        reg.get_sample_value("netsched_plugin_weight", {"profile": "threshold", "plugin": "LoadThreshold"})
        is None
    )
    limits = {"network": 0.8, "cpu": 0.65, "memory": 0.95}  # LoadThreshold's defaults
    for res, limit in limits.items():
        labels = {"profile": "threshold", "plugin": "LoadThreshold", "resource": res}
        assert value(reg, "netsched_load_threshold", **labels) == pytest.approx(limit)
    assert value(reg, "netsched_node_requested_ratio", node="a", resource="cpu") == 0.25
    assert value(reg, "netsched_node_requested_ratio", node="a", resource="memory") == 0.25
    assert value(reg, "netsched_node_requested_ratio", node="b", resource="cpu") == 0.0
    # The load threshold is LoadThreshold's only: LoadAware has none to export.
    assert (
        reg.get_sample_value(
            "netsched_load_threshold", {"profile": "aware", "plugin": "LoadAware", "resource": "cpu"}
        )
        is None
    )


def test_figures_follow_each_poll() -> None:
    """Computed once per poll: the next poll's values replace them."""
    r = rig()
    metrics = SchedulerMetrics(CollectorRegistry())
    effects = PlacementEffects(metrics)
    profile = r.framework.profile_name
    labels = {"profile": profile, "resource": "cpu"}
    for load, over in ((CPU_LOAD, 1.0), ({**CPU_LOAD, "n4": 0.3}, 1.0)):
        r.load(**{CPU: load, NETWORK_TX: TX})
        state = CycleState()
        effects.decided(r.framework, state, r.snap, "n4")
        effects.bound(r.framework, state)
        assert value(reg := metrics.registry, "netsched_placements_over_threshold_total", **labels) == over
    # n4 at 0.3 after the second poll: the median (0.3), not above it, and not over the limit.
    assert value(reg, "netsched_placement_utilisation_above_median_bucket", le="0.0", **labels) == 1
    assert value(reg, "netsched_placement_utilisation_above_median_count", **labels) == 2
