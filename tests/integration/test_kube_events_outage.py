"""Events across an API server outage, over real HTTP: nothing dropped, and flowing again within
one retry wait of the server answering (issue 29 item 8).

The fake API server goes down as a restarted kube-apiserver does: wedged first (SIGTERM: requests
accepted and never answered), then killed (connections reset, connects refused), then back on the
same port (test_kube_events_faults puts the real process through it). The bounds are counts from
the writer's own state (retry waits, their lengths), never wall-clock time: after recovery at
most the one attempt already under way fails, and every wait is at most the configured cap plus
its jitter, so events flow again within one capped wait (and one write timeout) of the server
answering.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import pytest

from netsched.framework.parse import parse_pod
from netsched.kube import EventBroadcaster, KubeClient
from netsched.kube.events import EventRetry, KubeEventSink
from netsched.kube.kubeconfig import derived_client
from netsched.kube.transport import Transport
from netsched.testing.builders import make_pod
from netsched.testing.fakeapi import FakeAPIServer

pytestmark = pytest.mark.integration

RETRY = EventRetry(backoff=0.05, max_backoff=0.4)
WRITE_TIMEOUT = (1.0, 1.0)  # a write held by a wedged server fails after 1 s, not the default 5


class Waits:
    """The writer's sleeps between retries, recorded (and slept: the server must get time to
    come back)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._never = threading.Event()

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        self._never.wait(seconds)


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def broadcaster(client: KubeClient, waits: Waits) -> Iterator[EventBroadcaster]:
    events = derived_client(client, qps=1000, burst=1000, pool_size=4)
    b = EventBroadcaster(
        KubeEventSink(events, timeout=WRITE_TIMEOUT), instance="netsched-0", retry=RETRY, sleep=waits
    )
    yield b
    b.stop()
    events.close()


def scheduled(server: FakeAPIServer) -> set[str]:
    return {e["regarding"]["name"] for e in server.list("events.k8s.io/events") if e["reason"] == "Scheduled"}


def record(server: FakeAPIServer, b: EventBroadcaster, first: int, last: int) -> set[str]:
    """Scheduled events for pods p<first>..p<last-1>, recorded in one go (as a burst of bindings
    does: the writer takes them in batches)."""
    rec = b.new_recorder("netsched")
    pods = [parse_pod(server.create("pods", make_pod(f"p{i}").obj())) for i in range(first, last)]
    for pod in pods:
        rec.event(pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {pod.key} to n1")
    return {pod.name for pod in pods}


def test_a_restarted_api_server_gets_the_whole_backlog_after_one_wait_and_nothing_is_dropped(
    server: FakeAPIServer, broadcaster: EventBroadcaster, waits: Waits
) -> None:
    before = record(server, broadcaster, 0, 10)
    assert broadcaster.flush(10)
    server.outage("hang")  # SIGTERM: the server stops answering
    backlog = record(server, broadcaster, 10, 310)
    server.wait_for(lambda: server.held_requests > 0, timeout=10)
    server.outage("refuse")  # SIGKILL: connections reset, connects refused
    server.wait_for(lambda: broadcaster.retries >= 3, timeout=20)
    assert scheduled(server) == before
    server.recover()
    retries_at_recovery = broadcaster.retries
    assert broadcaster.stop(timeout=30)  # shutdown soon after: the backlog is all written
    assert scheduled(server) == before | backlog
    assert (broadcaster.dropped, broadcaster.failed) == (0, 0)
    # Only the attempt under way when the server came back can fail: one more wait at most,
    # then the 300 queued events go a batch per round trip, not a wait per event.
    assert broadcaster.retries - retries_at_recovery <= 1
    assert len(waits.seconds) == broadcaster.retries
    assert max(waits.seconds) <= RETRY.max_backoff + RETRY.backoff  # the cap, plus its jitter


def test_writes_left_hanging_by_a_wedged_server_time_out_and_flow_after_recovery(
    server: FakeAPIServer, broadcaster: EventBroadcaster, waits: Waits
) -> None:
    server.outage("hang")  # never answers what it caught: half-open connections
    names = record(server, broadcaster, 0, 100)
    server.wait_for(lambda: broadcaster.retries >= 2, timeout=20)  # held writes timed out
    held = server.held_requests
    assert held >= 2 and scheduled(server) == set()
    server.recover()
    retries_at_recovery = broadcaster.retries
    assert broadcaster.flush(30)
    assert scheduled(server) == names
    assert (broadcaster.dropped, broadcaster.failed) == (0, 0)
    assert broadcaster.retries - retries_at_recovery <= 1
    assert max(waits.seconds) <= RETRY.max_backoff + RETRY.backoff


# ---------------------------------------------------------------- the transport and the fake


def test_a_request_that_fails_empties_the_idle_pool(server: FakeAPIServer) -> None:
    t = Transport("127.0.0.1", server.port, tls=None, pool_size=4)
    replies = t.request_many([("GET", "/version", {}, None)] * 3, (5, 5), lanes=3)
    assert all(not isinstance(r, Exception) and r.status == 200 for r in replies)
    assert t.idle_connections == 3
    server.outage("hang")
    with pytest.raises(TimeoutError):
        t.request("GET", "/version", {}, None, (1, 0.3))
    # The other connections lead to the same wedged server: none is tried again.
    assert t.idle_connections == 0
    server.recover()
    assert t.request("GET", "/version", {}, None, (1, 5)).status == 200
    assert t.connections_opened == 4
    t.close()


def test_a_pipelined_batch_to_a_wedged_server_fails_every_lane_and_empties_the_pool(
    server: FakeAPIServer,
) -> None:
    t = Transport("127.0.0.1", server.port, tls=None, pool_size=4)
    t.request_many([("GET", "/version", {}, None)] * 4, (5, 5), lanes=4)
    server.outage("hang")
    results = t.request_many([("GET", "/version", {}, None)] * 4, (1, 0.3), lanes=4)
    assert all(isinstance(r, TimeoutError) for r in results)
    assert t.idle_connections == 0
    server.wait_for(lambda: server.held_requests == 4)  # every lane reached the server
    t.close()


def test_an_outage_refuses_connections_and_recovery_serves_the_same_objects_on_the_same_port(
    server: FakeAPIServer,
) -> None:
    server.create("pods", make_pod("p").obj())
    port = server.port
    t = Transport("127.0.0.1", port, tls=None, pool_size=1)
    assert t.request("GET", "/api/v1/namespaces/default/pods/p", {}, None, (1, 5)).status == 200
    server.outage("refuse")
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
        t.request("GET", "/api/v1/namespaces/default/pods/p", {}, None, (1, 5))
    with pytest.raises(ConnectionRefusedError):
        t.request("GET", "/api/v1/namespaces/default/pods/p", {}, None, (1, 5))
    server.recover()
    assert server.port == port
    assert t.request("GET", "/api/v1/namespaces/default/pods/p", {}, None, (1, 5)).status == 200
    t.close()


def test_an_unknown_outage_mode_is_refused(server: FakeAPIServer) -> None:
    with pytest.raises(ValueError, match="outage mode"):
        server.outage("flaky")
