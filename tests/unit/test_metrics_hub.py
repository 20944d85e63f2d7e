"""MetricsHub with its APScheduler loop: first poll at start, on-demand polls, stop; node updates."""

from __future__ import annotations

import threading

from netsched.metrics import CPU, MetricsHub, PrometheusArgs
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


def test_trigger_without_scheduler_polls_inline() -> None:
    hub, fake = fake_hub()
    hub.source(PrometheusArgs()).require(CPU)
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
