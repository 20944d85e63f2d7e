"""MetricsHub with its APScheduler loop: first poll at start, on-demand polls, stop; node updates."""

from __future__ import annotations

import logging
import threading

import pytest

from netsched.framework.snapshot import Snapshot
from netsched.metrics import CPU, FAIL_CLOSED, MetricsHub, PrometheusArgs, QueryError
from netsched.metrics.args import NodeMappingArgs
from netsched.testing.builders import make_node
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import FakePrometheus, fake_hub


def test_start_waits_for_the_first_poll_and_trigger_polls_on_demand() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    fake.serve(src, CPU, {"n0": 0.5})
    hub.start(first_poll_timeout=10)
    try:
        assert src.polled and src.poller.polls >= 1
        before = src.poller.polls
        assert hub.trigger(timeout=10)
        assert src.poller.polls >= before + 1
        assert hub.trigger(timeout=10)
        assert src.poller.polls >= before + 2
        # A source created after start gets its own job on the running scheduler.
        late = hub.source(PrometheusArgs(node_mapping=NodeMappingArgs(by="instance")))
        late.require(CPU)
        assert hub.trigger(timeout=10) and late.polled
    finally:
        hub.stop()
    assert fake.closed


def test_trigger_while_a_poll_is_running_waits_for_a_fresh_one() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    hub.start(first_poll_timeout=10)
    entered, release = threading.Event(), threading.Event()
    real_query = fake.query

    def blocking(promql: str, timeout: float) -> object:
        entered.set()
        release.wait(10)
        return real_query(promql, timeout)

    try:
        fake.query = blocking  # type: ignore[method-assign]
        started = threading.Thread(target=hub.trigger, kwargs={"timeout": 10})
        started.start()
        assert entered.wait(10)  # a poll is in progress
        done: list[bool] = []
        second = threading.Thread(target=lambda: done.append(hub.trigger(timeout=10)))
        second.start()
        fake.query = real_query  # type: ignore[method-assign]
        seen = src.poller.polls
        release.set()
        second.join(10)
        started.join(10)
        assert done == [True]
        assert src.poller.polls >= seen + 2  # the blocked poll, then one started after the trigger
    finally:
        release.set()
        hub.stop()


def test_polls_run_on_apscheduler_and_read_time_from_the_injected_clock(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    src = hub.source(PrometheusArgs(max_sample_age_seconds=60, stale_policy=FAIL_CLOSED, per_pod_usage=False))
    src.require(CPU)
    fake.serve(src, CPU, {"n0": 0.5})  # stamped with the clock's wall time when queried
    snap = Snapshot.of([make_node("n0").info()])
    threads: list[str] = []
    real_query = fake.query

    def query(promql: str, timeout: float) -> object:
        threads.append(threading.current_thread().name)
        return real_query(promql, timeout)

    fake.query = query  # type: ignore[method-assign]
    caplog.set_level(logging.INFO, logger="netsched.metrics")
    hub.start(first_poll_timeout=10)
    try:
        assert src.values(CPU, snap)[1].tolist() == [0.0]
        clock.step(61)  # no poll in between: the sample ages on the injected clock alone
        assert src.values(CPU, snap)[1].tolist() == [61.0]
        assert src.fresh(CPU, snap)[1].tolist() == [False]  # older than maxSampleAgeSeconds

        fake.fail_all = QueryError("unreachable", "ConnectionError: refused", transient=True)
        assert hub.trigger(timeout=10)
        assert src.in_fallback
        clock.step(120)
        fake.fail_all = None
        assert hub.trigger(timeout=10)
        assert not src.in_fallback
        assert src.values(CPU, snap)[1].tolist() == [0.0]  # a new sample, stamped at the new time
        assert src.fresh(CPU, snap)[1].tolist() == [True]
    finally:
        hub.stop()
    # Three polls, each run by the scheduled job on its own named executor thread, none by the test.
    assert len(threads) == 1 + 3 + 1  # start, three attempts of the failing query, recovery
    assert all(t.startswith("netsched-poll-0") for t in threads), threads
    # How long the fallback lasted is the injected clock's measure, not the real one.
    assert any("down_for=120s" in r.getMessage() for r in caplog.records)


def test_trigger_without_scheduler_polls_inline() -> None:
    hub, fake = fake_hub()
    hub.source(PrometheusArgs(per_pod_usage=False)).require(CPU)
    assert hub.trigger()
    assert len(fake.calls) == 1


def test_update_nodes_accepts_node_infos_refs_and_tuples() -> None:
    hub = MetricsHub(clock=FakeClock(), client_factory=FakePrometheus().factory)
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    hub.update_nodes([make_node("a").info(), ("b", [("InternalIP", "10.0.0.2")], {})])
    assert src.poller.directory is not None and src.poller.directory.names == ["a", "b"]
    assert hub.self_check()[0].nodes == 2


def test_prune_before_stops_the_pollers_a_reload_no_longer_uses() -> None:
    hub, _fake = fake_hub()
    old = hub.source(PrometheusArgs(prometheus_address="http://old:9090"))
    kept = hub.source(PrometheusArgs())
    hub.start(first_poll_timeout=10)
    try:
        gen = hub.new_generation()
        # The reloaded plugins ask again for the unchanged source, and for a new one.
        assert hub.source(PrometheusArgs()) is kept
        new = hub.source(PrometheusArgs(prometheus_address="http://new:9090"))
        assert hub.prune_before(gen) == [old.poller.name]
        assert {p.name for p in hub.pollers} == {kept.poller.name, new.poller.name}
        assert set(hub.sources) == {kept, new}
        assert hub.trigger(timeout=10)  # the removed job is gone from the running scheduler
        assert hub.prune_before(gen) == []  # nothing else to drop
    finally:
        hub.stop()


REJECT = "stalePolicy failClosed: load filters reject every node, pods wait"
SCORE = "metrics plugins score by requests until it answers"


@pytest.mark.parametrize(
    ("sources", "says", "policies_field"),
    [
        # (stalePolicy, read by a filter plugin) per source on one connection
        ((("failOpen", False),), SCORE, "failOpen"),
        ((("failOpen", True),), SCORE, "failOpen"),
        ((("failClosed", True),), REJECT, "failClosed"),
        # A scorer's failClosed falls back to requests like failOpen: nothing is rejected.
        ((("failClosed", False),), SCORE, "failClosed"),
        # Mixed: one failClosed source a filter reads is enough for pods to wait ...
        ((("failOpen", False), ("failClosed", True)), REJECT, "failClosed,failOpen"),
        # ... but a failClosed scorer next to a failOpen filter blocks nothing.
        ((("failOpen", True), ("failClosed", False)), SCORE, "failClosed,failOpen"),
    ],
)
def test_an_unreachable_prometheus_is_logged_as_what_its_policies_do(
    caplog: pytest.LogCaptureFixture, sources: tuple[tuple[str, bool], ...], says: str, policies_field: str
) -> None:
    caplog.set_level(logging.INFO, logger="netsched.metrics")
    hub, fake = fake_hub()
    for i, (policy, filters) in enumerate(sources):  # one connection, one source each
        args = PrometheusArgs(stale_policy=policy, max_sample_age_seconds=60.0 + i)
        hub.source(args, filters=filters).require(CPU)
    assert len(hub.pollers) == 1
    fake.fail_all = QueryError("unreachable", "ConnectionError: refused", transient=True)
    assert hub.trigger()
    (line,) = [r.getMessage() for r in caplog.records if "Prometheus unreachable" in r.getMessage()]
    assert says in line and f"stalePolicies={policies_field}" in line
    if says == SCORE:
        assert "reject" not in line


def test_a_filter_asking_later_for_a_scorers_failclosed_source_changes_the_line() -> None:
    hub, _fake = fake_hub()
    args = PrometheusArgs(stale_policy=FAIL_CLOSED)
    src = hub.source(args)
    (poller,) = hub.pollers
    assert not poller.filters_fail_closed
    assert hub.source(args, filters=True) is src
    assert poller.filters_fail_closed
    gen = hub.new_generation()
    hub.source(args)  # the reloaded config keeps the scorer, drops the filter
    hub.prune_before(gen)
    assert not poller.filters_fail_closed and poller.stale_policies == ("failClosed",)


def test_a_reload_that_drops_the_failclosed_source_changes_the_line() -> None:
    hub, _fake = fake_hub()
    hub.source(PrometheusArgs(stale_policy=FAIL_CLOSED), filters=True)
    (poller,) = hub.pollers
    assert poller.stale_policies == ("failClosed",) and poller.filters_fail_closed
    gen = hub.new_generation()
    hub.source(PrometheusArgs(), filters=True)
    hub.prune_before(gen)
    assert poller.stale_policies == ("failOpen",) and not poller.filters_fail_closed
