"""The event path against a faulty API server: throttling, 5xx, resets, and SIGTERM mid-burst."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netsched.framework.parse import parse_pod
from netsched.kube import EventBroadcaster, KubeClient, RetrySettings, build_api_client
from netsched.kube.events import EventRetry, new_event_broadcaster
from netsched.kube.kubeconfig import derived_client
from netsched.testing.builders import make_node, make_pod
from netsched.testing.cli import killed_if_left, sigterm, start_netsched
from netsched.testing.configs import NETSCHED_PROFILE
from netsched.testing.fakeapi import FakeAPIServer

pytestmark = pytest.mark.integration

EVENT_WRITES = r"^/apis/events\.k8s\.io/v1/namespaces/[^/]+/events"


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[KubeClient]:
    c = build_api_client(str(kubeconfig), qps=5, burst=1, retry=RetrySettings(backoff=0.01, max_backoff=0.05))
    yield c
    c.close()


@pytest.fixture
def broadcaster(client: KubeClient) -> Iterator[EventBroadcaster]:
    events = derived_client(client, qps=1000, burst=1000, pool_size=4)
    b = new_event_broadcaster(
        events, instance="netsched-0", workers=4, retry=EventRetry(backoff=0.01, max_backoff=0.05)
    )
    yield b
    b.stop()
    events.close()


def scheduled(server: FakeAPIServer) -> set[str]:
    return {e["regarding"]["name"] for e in server.list("events.k8s.io/events") if e["reason"] == "Scheduled"}


def record(server: FakeAPIServer, b: EventBroadcaster, n: int) -> None:
    rec = b.new_recorder("netsched")
    for i in range(n):
        pod = parse_pod(server.create("pods", make_pod(f"p{i}").obj()))
        rec.event(pod, "Normal", "Scheduled", "Binding", f"Successfully assigned default/p{i} to n1")


def test_event_client_has_its_own_rate_budget_and_pool(client: KubeClient) -> None:
    events = derived_client(client, qps=1000, burst=1000, pool_size=4)
    try:
        assert events.limiter is not client.limiter
        assert (events.limiter.qps, events.limiter.burst) == (1000, 1000)
        assert events.api_client is not client.api_client
        assert events.api_client.configuration.connection_pool_maxsize == 4
        assert events.host == client.host
        # The binding client's only token is still there: events took none of it.
        assert client.limiter.reserve() == 0.0
    finally:
        events.close()


def test_throttled_event_writes_wait_for_retry_after_and_are_all_written(
    server: FakeAPIServer, broadcaster: EventBroadcaster
) -> None:
    fault = server.inject_fault("POST", EVENT_WRITES, status=429, count=2, retry_after=1)
    record(server, broadcaster, 20)
    assert broadcaster.flush(15)
    assert fault.hits == 2
    assert scheduled(server) == {f"p{i}" for i in range(20)}
    assert (broadcaster.dropped, broadcaster.failed) == (0, 0)
    # The failed members of a batch are retried together after one wait: the two 429s cost two
    # waits when they hit two rounds, one when they hit two events of one pipelined batch.
    assert broadcaster.retries in (1, 2)


def test_server_errors_longer_than_any_retry_budget_drop_nothing(
    server: FakeAPIServer, broadcaster: EventBroadcaster
) -> None:
    # Fails until cleared: far more attempts than the API client's 5 per request.
    fault = server.inject_fault("POST", EVENT_WRITES, status=503, count=-1)
    record(server, broadcaster, 20)
    server.wait_for(lambda: fault.hits >= 40, timeout=20)
    assert scheduled(server) == set()
    server.clear_faults()
    assert broadcaster.flush(15)
    assert scheduled(server) == {f"p{i}" for i in range(20)}
    assert (broadcaster.dropped, broadcaster.failed) == (0, 0)


def test_reset_connections_are_retried(server: FakeAPIServer, broadcaster: EventBroadcaster) -> None:
    fault = server.inject_fault("POST", EVENT_WRITES, reset=True, count=6)
    record(server, broadcaster, 20)
    assert broadcaster.flush(15)
    assert fault.hits == 6
    assert scheduled(server) == {f"p{i}" for i in range(20)}
    assert (broadcaster.dropped, broadcaster.failed) == (0, 0)


CONFIG = NETSCHED_PROFILE


def scheduling_a_burst(
    server: FakeAPIServer, tmp_path: Path, pods: int, event_delay: float
) -> tuple[subprocess.Popen[str], Callable[[], set[str]]]:
    """The real netsched process scheduling `pods` pods, each event write taking `event_delay`
    seconds (events trail the bindings, as on a busy API server); and the pods bound so far."""
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    for i in range(4):
        server.create("nodes", make_node(f"n{i}").capacity(cpu="64", pods="110").obj())
    for i in range(pods):
        server.create("pods", make_pod(f"p{i:03d}").scheduler("netsched").req(cpu="100m").obj())
    server.inject_fault("POST", EVENT_WRITES, status=None, delay=event_delay, count=-1)

    def bound() -> set[str]:
        return {p["metadata"]["name"] for p in server.list("pods") if p["spec"].get("nodeName")}

    return start_netsched(cfg, kubeconfig), bound


def test_sigterm_during_a_burst_writes_every_pending_event(server: FakeAPIServer, tmp_path: Path) -> None:
    pods = 300
    # Each event write takes 50 ms: events fall far behind bindings, as on a busy API server.
    proc, bound = scheduling_a_burst(server, tmp_path, pods, event_delay=0.05)
    with killed_if_left(proc):
        server.wait_for(lambda: len(bound()) >= pods // 3, timeout=60)
        proc.send_signal(signal.SIGTERM)
        pending_at_sigterm = len(bound()) - len(scheduled(server))
        out, _ = proc.communicate(timeout=40)
    assert proc.returncode == 0, out
    assert pending_at_sigterm > 0  # the burst was still being reported when SIGTERM came
    assert bound() and scheduled(server) == bound()


def test_sigterm_as_a_restarted_api_server_comes_back_writes_every_scheduled_event(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    """Issue 29 item 8a, in the real process: the API server restarts mid-backlog (wedged, then
    killed, then back on the same port) and the scheduler is stopped as soon as it answers."""
    pods = 150
    proc, bound = scheduling_a_burst(server, tmp_path, pods, event_delay=0.01)
    with killed_if_left(proc):
        server.wait_for(lambda: len(bound()) >= pods // 3, timeout=60)
        server.outage("hang")  # SIGTERM to the API server: wedged
        server.wait_for(lambda: server.held_requests > 0, timeout=30)
        server.outage("refuse")  # SIGKILL: connections reset
        server.recover()
        out = sigterm(proc, 60)
    assert proc.returncode == 0, out
    assert "unwritten at shutdown" not in out
    assert bound() and scheduled(server) == bound()
