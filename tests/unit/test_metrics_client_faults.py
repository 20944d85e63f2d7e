"""A misbehaving Prometheus (hangs, trickles, huge bodies) and the poll budget."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import urllib3
from prometheus_client import CollectorRegistry

from netsched.metrics import CPU, MEMORY, MetricsHub, PrometheusArgs, QueryError
from netsched.metrics.client import PrometheusHTTPClient
from netsched.metrics.poller import POLL_BUDGET_FRACTION
from netsched.metrics.transport import CappedBody, ResponseDeadline, Watchdog
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import FakePrometheus, FaultyPrometheus


@pytest.fixture
def prom() -> Iterator[FaultyPrometheus]:
    with FaultyPrometheus() as p:
        yield p


def client(address: str, **kw: object) -> PrometheusHTTPClient:
    return PrometheusHTTPClient(PrometheusArgs(prometheus_address=address, **kw).connection)  # type: ignore[arg-type]


def test_the_fake_answers_normally(prom: FaultyPrometheus) -> None:
    assert client(prom.url).query("up", 2.0) == [{"metric": {"node": "n1"}, "value": [1700000000, "0.5"]}]


def test_a_hung_prometheus_is_a_transient_timeout(prom: FaultyPrometheus) -> None:
    prom.mode = "hang"
    with pytest.raises(QueryError) as e:
        client(prom.url).query("up", 0.3)
    assert (e.value.reason, e.value.transient) == ("timeout", True)


def test_a_trickling_answer_is_cut_at_the_deadline(prom: FaultyPrometheus) -> None:
    # The whole answer would take ~4 s to arrive, each byte well within the read timeout:
    # only a deadline on the whole exchange stops it.
    prom.mode, prom.trickle_interval = "trickle", 0.05
    with pytest.raises(QueryError) as e:
        client(prom.url).query("up", 0.5)
    assert (e.value.reason, e.value.transient) == ("timeout", True)
    assert "not complete within 0.5s" in e.value.detail


@pytest.mark.parametrize("mode", ["huge", "huge_chunked"])
def test_a_huge_answer_is_refused_naming_query_limit_and_address(prom: FaultyPrometheus, mode: str) -> None:
    prom.mode = mode
    c = client(f"http://user:pw@127.0.0.1:{prom.url.rsplit(':', 1)[1]}", max_response_bytes=1 << 20)
    with pytest.raises(QueryError) as e:
        c.query("sum by (node) (rate(x[1m]))", 10.0)
    err = e.value
    assert (err.reason, err.transient) == ("too_large", False)
    assert "'sum by (node) (rate(x[1m]))'" in err.detail
    assert "maxResponseBytes (1048576 bytes" in err.detail
    assert f"from http://127.0.0.1:{prom.url.rsplit(':', 1)[1]}" in err.detail
    assert "pw" not in str(err)


def test_a_stalled_answer_is_a_transient_timeout(prom: FaultyPrometheus) -> None:
    prom.mode = "stall"
    with pytest.raises(QueryError) as e:
        client(prom.url).query("up", 0.3)
    assert (e.value.reason, e.value.transient) == ("timeout", True)
    assert "not complete within 0.3s" in e.value.detail


def test_the_watchdog_cuts_a_read_that_would_wait_past_the_deadline(prom: FaultyPrometheus) -> None:
    # The socket may wait 60 s per read: only the watchdog can end the stalled read at the
    # 0.2 s deadline, and the reader gives up well within the 30 s this test waits.
    prom.mode = "stall"
    pool = urllib3.PoolManager(timeout=urllib3.Timeout(connect=5, read=60), retries=False)
    raw = pool.request("GET", f"{prom.url}/api/v1/query?query=up", preload_content=False)
    watchdog = Watchdog()
    body = CappedBody(raw, 1 << 20, time.monotonic() + 0.2, 0.2, watchdog)
    failures: list[BaseException] = []
    done = threading.Event()

    def read_all() -> None:
        try:
            while body.read(1024):
                pass
        except BaseException as e:  # the outcome under test, handed to the main thread
            failures.append(e)
        done.set()

    threading.Thread(target=read_all, daemon=True).start()
    try:
        assert done.wait(30), "the stalled read was not cut"
    finally:
        watchdog.close()
        pool.clear()
    assert [type(e) for e in failures] == [ResponseDeadline]
    assert "not complete within 0.2s" in str(failures[0])


def test_a_query_after_a_refused_one_gets_a_fresh_answer(prom: FaultyPrometheus) -> None:
    # The refused body is unread: its connection must not go back to the pool for the next query.
    c = client(prom.url, max_response_bytes=1 << 20)
    prom.mode = "huge_chunked"
    with pytest.raises(QueryError):
        c.query("up", 10.0)
    prom.mode = "ok"
    assert c.query("up", 10.0) == [{"metric": {"node": "n1"}, "value": [1700000000, "0.5"]}]
    c.close()


def test_an_answer_under_the_cap_is_read_whole(prom: FaultyPrometheus) -> None:
    prom.mode, prom.huge_bytes = "huge_chunked", 200_000
    got = client(prom.url, max_response_bytes=1 << 20).query("up", 10.0)
    assert len(got) > 1000 and got[-1]["metric"] == {"node": "n1"}


def test_a_huge_answer_fails_that_query_then_fallback_as_any_failure(prom: FaultyPrometheus) -> None:
    prom.mode = "huge"
    reg = CollectorRegistry()
    hub = MetricsHub(registry=reg, clock=FakeClock(), sleep=lambda _s: None)
    src = hub.source(
        PrometheusArgs(prometheus_address=prom.url, max_response_bytes=4096, per_pod_usage=False)
    )
    src.require(CPU)
    hub.poll_now()
    assert prom.queries == 1  # permanent: never retried
    assert src.in_fallback
    assert src.poller.table.errors == {src.poller.keys()[0]: "too_large"}
    labels = {"source": prom.url, "metric": CPU, "reason": "too_large"}
    assert reg.get_sample_value("netsched_prometheus_query_errors_total", labels) == 1


def hub_on(clock: FakeClock) -> tuple[MetricsHub, FakePrometheus]:
    """A hub whose waits between retries take (fake) time, as real ones do."""
    fake = FakePrometheus(clock.wall)
    return MetricsHub(clock=clock, client_factory=fake.factory, sleep=clock.sleep), fake


def test_every_attempt_gets_only_what_is_left_of_the_poll_budget() -> None:
    clock = FakeClock()
    hub, fake = hub_on(clock)
    src = hub.source(PrometheusArgs(poll_interval_seconds=15, timeout_seconds=5))
    src.require(CPU, MEMORY)
    timeouts: list[float] = []

    def hang(promql: str, timeout: float) -> object:
        timeouts.append(timeout)
        clock.step(timeout)  # a hung server: every attempt uses all the time it is given
        raise QueryError("timeout", f"no answer within {timeout:g}s", transient=True)

    fake.query = hang  # type: ignore[method-assign]
    start = clock.now()
    out = hub.poll_now()[0]
    budget = POLL_BUDGET_FRACTION * 15
    assert clock.now() - start <= budget  # before: 3 x 5 s + waits = ~16 s > the 15 s interval
    assert len(timeouts) == 3 and timeouts[:2] == [5, 5] and timeouts[2] < 5
    assert out.queries == 3
    assert src.in_fallback  # the poll ended as a failed poll, not a skipped one
    assert set(src.poller.table.errors.values()) == {"timeout"}  # memory skipped: server not answering


def test_retries_stop_when_the_budget_is_spent() -> None:
    clock = FakeClock()
    hub, fake = hub_on(clock)
    src = hub.source(PrometheusArgs(poll_interval_seconds=10, timeout_seconds=5, per_pod_usage=False))
    src.require(CPU)
    timeouts: list[float] = []

    def slow_503(promql: str, timeout: float) -> object:
        timeouts.append(timeout)
        clock.step(4)  # an error after 4 s
        raise QueryError("http_5xx", "HTTP 503", transient=True)

    fake.query = slow_503  # type: ignore[method-assign]
    hub.poll_now()
    # 0 s: 5 s allowed; ~4.3 s: min(5, ~3.7) allowed; then ~8.3 s > 8 s budget: no third attempt.
    assert len(timeouts) == 2 and timeouts[0] == 5 and timeouts[1] < 4
    # It ends with its own error (the same every poll: logged once), not a "deadline" one.
    assert list(src.poller.table.errors.values()) == ["http_5xx"]
