"""MetricSource: alignment with snapshot rows, sample age, staleness, self-check, own metrics."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from netsched.framework.snapshot import Snapshot
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, NodeMappingArgs, PrometheusArgs
from netsched.metrics.queries import POD_USAGE
from netsched.testing.builders import make_node
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import fake_hub


def nodes(n: int) -> Snapshot:
    return Snapshot.of([make_node(f"n{i}").address("InternalIP", f"10.0.0.{i + 1}").info() for i in range(n)])


def test_values_follow_snapshot_rows_with_age_from_sample_timestamps() -> None:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    now = clock.wall()
    fake.serve(src, CPU, {"n2": (0.2, now - 5), "n0": (0.4, now - 70), "ghost": (0.9, now)})
    hub.poll_now()
    snap = nodes(3)
    vals, age = src.values(CPU, snap)
    assert vals[0] == 0.4 and np.isnan(vals[1]) and vals[2] == 0.2
    assert age[0] == 70 and np.isnan(age[1]) and age[2] == 5
    clock.step(10)
    _, age = src.values(CPU, snap)
    assert age[2] == 15  # ages grow between polls without any query
    vals, fresh = src.fresh(CPU, snap)
    assert fresh.tolist() == [False, False, True]  # 80 s > maxSampleAge 60 s; n1 missing


def test_instance_mapping_matches_node_addresses() -> None:
    hub, fake = fake_hub()
    args = PrometheusArgs(node_mapping=NodeMappingArgs(by="instance"))
    src = hub.source(args)
    src.require(MEMORY)
    assert src.query(MEMORY).startswith("1 - sum by (instance)")
    fake.serve(src, MEMORY, {"10.0.0.2:9100": 0.5, "10.0.0.9:9100": 0.1}, label="instance")
    hub.poll_now()
    vals, _ = src.values(MEMORY, nodes(3))
    assert np.isnan(vals[0]) and vals[1] == 0.5 and np.isnan(vals[2])


def test_a_node_added_between_polls_resolves_without_a_new_poll() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    fake.serve(src, CPU, {"n0": 0.1, "n1": 0.2, "n2": 0.3})
    hub.poll_now()
    snap = nodes(2)
    assert src.values(CPU, snap)[0].tolist() == [0.1, 0.2]
    snap.rebuild(nodes(3).nodes)
    assert src.values(CPU, snap)[0].tolist() == [0.1, 0.2, 0.3]
    assert fake.calls.count(src.query(CPU)) == 1


def test_self_check_reports_missing_nodes_empty_queries_and_unmapped_series(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reg = CollectorRegistry()
    hub, fake = fake_hub(registry=reg)
    src = hub.source(PrometheusArgs())
    src.require(CPU, MEMORY, LINK_SPEED)
    fake.serve(src, CPU, {"n0": 0.1, "ip-10-0-0-9": 0.2})
    fake.serve(src, MEMORY, {"n0": 0.1, "n1": 0.1, "n2": 0.1})
    fake.set(src.query(LINK_SPEED), {"x": 1.0}, label="instance")  # the series lack the node label
    caplog.set_level(logging.INFO, logger="netsched.metrics")
    hub.poll_now()
    hub.update_nodes(nodes(3).nodes + [make_node("down").not_ready().info()])
    report = src.self_check()
    assert not report.ok and report.nodes == 4 and report.ready_nodes == 3
    by = {m.metric: m for m in report.metrics}
    assert by[CPU].nodes_without_series == ("n1", "n2")
    assert by[CPU].unmapped == ("ip-10-0-0-9",)
    assert by[MEMORY].ok
    assert by[LINK_SPEED].unmapped_count == 1 and by[LINK_SPEED].nodes_without_series_count == 3
    # No per-pod usage in this Prometheus: reported as empty, not as a problem (estimates stand in).
    assert by[POD_USAGE].empty and by[POD_USAGE].ok
    text = str(report)
    assert POD_USAGE not in text
    assert "cpu: 2 Ready node(s) have no series: n1, n2" in text
    assert "'ip-10-0-0-9' are neither a node name nor a node address" in text
    assert "series have no 'node' label: set nodeMapping.label" in text
    assert sample(reg, "netsched_metrics_nodes_without_series", src.name, CPU) == 2
    assert sample(reg, "netsched_metrics_unmapped_series", src.name, CPU) == 1
    assert sample(reg, "netsched_metrics_query_empty", src.name, CPU) == 0
    # Logged once on the relist, not again on later polls with the same outcome.
    hub.poll_now()
    hub.poll_now()
    warnings = [r for r in caplog.records if "metrics self-check" in r.getMessage()]
    assert len(warnings) == 1
    assert f"cpu: PromQL: {src.query(CPU)}" in warnings[0].getMessage()
    assert src.query(MEMORY) not in warnings[0].getMessage()  # memory is fine
    # A query that returns nothing at all names its PromQL.
    fake.results.pop(src.query(MEMORY))
    hub.poll_now()
    assert sample(reg, "netsched_metrics_query_empty", src.name, MEMORY) == 1
    last = [r.getMessage() for r in caplog.records if "metrics self-check" in r.getMessage()][-1]
    assert "memory: query returned no series" in last and src.query(MEMORY) in last


def sample(reg: CollectorRegistry, name: str, source: str, metric: str) -> float | None:
    return reg.get_sample_value(name, {"source": source, "metric": metric})


def test_per_node_gauges_show_what_was_polled() -> None:
    reg = CollectorRegistry()
    clock = FakeClock()
    hub, fake = fake_hub(clock, reg)
    src = hub.source(PrometheusArgs())
    src.require(NETWORK_RX, NETWORK_TX, LINK_SPEED, CPU, MEMORY)
    fake.serve(src, NETWORK_RX, {"n0": 30e6, "n1": 1e6})
    fake.serve(src, NETWORK_TX, {"n0": 60e6, "n1": 2e6})
    fake.serve(src, LINK_SPEED, {"n0": 125e6})
    fake.serve(src, CPU, {"n0": 0.5, "n1": 0.25})
    fake.serve(src, MEMORY, {"n0": 0.75})
    hub.poll_now()
    hub.update_nodes(nodes(2).nodes)
    clock.step(7)
    labels = {"source": src.name, "node": "n0"}
    assert reg.get_sample_value("netsched_node_network_utilisation", labels) == pytest.approx(0.48)
    assert (
        reg.get_sample_value("netsched_node_network_utilisation", {**labels, "node": "n1"}) is None
    )  # no speed
    assert reg.get_sample_value("netsched_node_cpu_utilisation", {**labels, "node": "n1"}) == 0.25
    assert reg.get_sample_value("netsched_node_memory_utilisation", labels) == 0.75
    age = reg.get_sample_value("netsched_node_metric_sample_age_seconds", {**labels, "metric": CPU})
    assert age == 7
    assert reg.get_sample_value("netsched_metrics_estimated_pods", {"source": src.name}) == 0
    assert reg.get_sample_value("netsched_metrics_fallback", {"source": src.name}) == 0
    assert (
        reg.get_sample_value(
            "netsched_prometheus_query_duration_seconds_count", {"source": src.name, "metric": CPU}
        )
        == 1
    )
