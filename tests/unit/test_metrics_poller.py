"""The poller: one query per metric per poll, sharing, retries, fallback logged once, errors."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, PrometheusArgs, QueryError
from netsched.metrics.args import NodeMappingArgs
from netsched.metrics.queries import POD_USAGE
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import fake_hub

ALL = (NETWORK_RX, NETWORK_TX, LINK_SPEED, CPU, MEMORY)


def sample(reg: CollectorRegistry, name: str, **labels: str) -> float | None:
    return reg.get_sample_value(name, labels)


def test_one_query_per_metric_per_poll_whatever_the_node_count() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(*ALL)
    for m in ALL:
        fake.serve(src, m, {f"n{i}": 1.0 for i in range(2000)})
    out = hub.poll_now()
    # One per node metric, and one for the per-pod usage of every pod (perPodUsage).
    assert out[0].queries == 6 and len(fake.calls) == 6
    assert sorted(fake.calls) == sorted(src.query(m) for m in (*ALL, POD_USAGE))
    hub.poll_now()
    assert len(fake.calls) == 12
    off = fake_hub()
    quiet = off[0].source(PrometheusArgs(per_pod_usage=False))
    quiet.require(*ALL)
    assert off[0].poll_now()[0].queries == 5 and not quiet.requires(POD_USAGE)


def test_sources_share_pollers_by_connection_and_queries_by_promql() -> None:
    hub, fake = fake_hub()
    a = hub.source(PrometheusArgs())
    b = hub.source(PrometheusArgs())
    assert a is b  # equal args: one source, one ledger
    c = hub.source(PrometheusArgs(stale_policy="failClosed", rate_window="30s"))
    assert c is not a and c.poller is a.poller  # same connection: one poller
    d = hub.source(PrometheusArgs(node_mapping=NodeMappingArgs(by="instance")))
    assert d.poller is not a.poller
    assert d.poller.name == "http://prometheus-k8s.monitoring.svc:9090#2"
    a.require(CPU, MEMORY)
    b.require(CPU)
    c.require(CPU)  # different $window: a different query on the same poller
    hub.poll_now()
    # a/b: cpu + memory + per-pod usage; c: cpu and per-pod usage over 30s; d requires nothing
    assert len(fake.calls) == 5 + 0
    assert len(set(fake.calls)) == 5


def test_require_query_custom_and_conflicts() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require_query("gpu", "avg by ($by) (DCGM_FI_DEV_GPU_UTIL) / 100")
    assert src.query("gpu") == "avg by (node) (DCGM_FI_DEV_GPU_UTIL) / 100"
    src.require_query("gpu", "avg by ($by) (DCGM_FI_DEV_GPU_UTIL) / 100")  # same again: fine
    with pytest.raises(ValueError, match="already bound"):
        src.require_query("gpu", "max by ($by) (x)")
    with pytest.raises(KeyError, match="was not required"):
        src.query("disk")


def test_transient_errors_are_retried_within_the_poll() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs(per_pod_usage=False))
    src.require(CPU)
    fake.serve(src, CPU, {"n1": 0.5})
    flaky = [QueryError("http_5xx", "HTTP 503", transient=True)] * 2
    real_query = fake.query

    def query(promql: str, timeout: float) -> object:
        if flaky:
            fake.calls.append(promql)
            raise flaky.pop()
        return real_query(promql, timeout)

    fake.query = query  # type: ignore[method-assign]
    out = hub.poll_now()[0]
    assert out.queries == 3
    assert not src.poller.fallback and src.poller.table.errors == {}


def test_unreachable_enters_fallback_once_and_leaves_once(caplog: pytest.LogCaptureFixture) -> None:
    reg = CollectorRegistry()
    clock = FakeClock()
    hub, fake = fake_hub(clock, reg)
    src = hub.source(PrometheusArgs())
    src.require(*ALL)
    for m in ALL:
        fake.serve(src, m, {"n1": 1.0})
    hub.poll_now()
    assert not src.in_fallback
    fake.fail_all = QueryError("unreachable", "ConnectionError: refused", transient=True)
    caplog.set_level(logging.INFO, logger="netsched.metrics")
    for _ in range(4):
        n_before = len(fake.calls)
        clock.step(15)
        hub.poll_now()
        # The first query exhausts its 3 attempts; the other four are not sent.
        assert len(fake.calls) - n_before == 3
    assert src.in_fallback
    assert sample(reg, "netsched_metrics_fallback", source=src.name) == 1
    assert (
        sample(
            reg,
            "netsched_prometheus_query_errors_total",
            source=src.name,
            metric=NETWORK_RX,
            reason="unreachable",
        )
        == 4
    )
    fake.fail_all = None
    for _ in range(3):
        hub.poll_now()
    assert not src.in_fallback
    assert sample(reg, "netsched_metrics_fallback", source=src.name) == 0
    msgs = [r.getMessage() for r in caplog.records]
    assert sum("Prometheus unreachable" in m for m in msgs) == 1
    assert sum("Prometheus answers again" in m for m in msgs) == 1
    assert not any("query failed" in m or "works again" in m for m in msgs)  # no per-query noise


def test_a_bad_query_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    reg = CollectorRegistry()
    hub, fake = fake_hub(registry=reg)
    src = hub.source(PrometheusArgs())
    src.require(CPU, MEMORY)
    fake.serve(src, MEMORY, {"n1": 0.5})
    fake.fail[src.query(CPU)] = QueryError("bad_query", "HTTP Status Code 400 (parse error)", transient=False)
    caplog.set_level(logging.WARNING, logger="netsched.metrics")
    for _ in range(3):
        hub.poll_now()
    table = src.poller.table
    assert table.errors == {src.poller.keys()[0]: "bad_query"}
    assert not src.in_fallback  # memory still answers
    assert (
        sample(reg, "netsched_prometheus_query_errors_total", source=src.name, metric=CPU, reason="bad_query")
        == 3
    )
    failed = [r.getMessage() for r in caplog.records if "Prometheus query failed" in r.getMessage()]
    assert len(failed) == 1 and src.query(CPU) in failed[0]


def test_nan_samples_are_dropped_and_counted() -> None:
    reg = CollectorRegistry()
    hub, fake = fake_hub(registry=reg)
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    fake.serve(src, CPU, {"n1": float("nan"), "n2": float("inf"), "n3": -2.0, "n4": 0.4})
    hub.poll_now()
    for reason in ("nan", "inf", "negative"):
        assert (
            sample(reg, "netsched_metrics_dropped_samples_total", source=src.name, metric=CPU, reason=reason)
            == 1
        )
    assert src.poller.table.series[src.poller.keys()[0]].keys == ("n4",)


def test_all_permanent_failures_mean_fallback_too() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    fake.fail_all = QueryError("auth", "HTTP 401: check bearerTokenFile", transient=False)
    hub.poll_now()
    assert src.in_fallback


def test_not_polled_yet_counts_as_fallback() -> None:
    hub, _ = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    assert src.in_fallback and not src.polled
    hub.poll_now()
    assert not src.in_fallback and src.polled


def test_poll_stops_at_its_deadline() -> None:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    src = hub.source(PrometheusArgs(per_pod_usage=False))
    src.require(*ALL)
    real_query = fake.query

    def slow(promql: str, timeout: float) -> object:
        clock.step(5)  # each answer takes 5 s of a 15 s interval
        return real_query(promql, timeout)

    fake.query = slow  # type: ignore[method-assign]
    hub.poll_now()
    errors = src.poller.table.errors
    assert len(fake.calls) == 3  # 0 s, 5 s, 10 s; at 15 s > 12 s budget the rest are skipped
    assert set(errors.values()) == {"deadline"} and len(errors) == 2


def test_a_crashing_poll_is_logged_once_not_every_interval(caplog: pytest.LogCaptureFixture) -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(CPU)

    def broken(promql: str, timeout: float) -> object:
        raise RuntimeError("bug")

    fake.query = broken  # type: ignore[method-assign]
    caplog.set_level(logging.ERROR, logger="netsched.metrics")
    for _ in range(3):
        src.poller.scheduled_poll()  # what the APScheduler job runs: never raises
    assert [r.getMessage() for r in caplog.records].count(f"Metrics poll crashed source={src.name}") == 1
