"""ObservabilityServer over real HTTP on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from netsched.observability.health import PING, Check
from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.server import ObservabilityServer, parse_bind_address


class State:
    def __init__(self) -> None:
        self.healthy = True
        self.synced = False
        self.leader = False

    def loop(self) -> str | None:
        return None if self.healthy else "scheduling loop stuck"

    def ready(self) -> tuple[bool, dict[str, object]]:
        role = "leader" if self.leader else "standby"
        if not self.synced:
            return False, {"reason": "caches not synced", "role": role}
        return True, {"role": role, "caches": "synced"}


@pytest.fixture
def state() -> State:
    return State()


@pytest.fixture
def metrics() -> SchedulerMetrics:
    return SchedulerMetrics(CollectorRegistry())


@pytest.fixture
def server(state: State, metrics: SchedulerMetrics) -> Iterator[ObservabilityServer]:
    def explain(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        if "pod" not in query:
            return 400, "text/plain", b"pod is required\n"
        return 200, "application/json", json.dumps({"pod": query["pod"][0]}).encode()

    def broken(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        raise RuntimeError("boom")

    srv = ObservabilityServer(
        "127.0.0.1",
        0,
        registry=metrics.registry,
        checks=[PING, Check("schedulingLoop", state.loop)],
        ready=state.ready,
        debug_handlers={"/debug/explain": explain, "/debug/broken": broken},
    )
    with srv:
        yield srv


def get(server: ObservabilityServer, path: str, method: str = "GET") -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read().decode()
    finally:
        conn.close()


def test_metrics_serve_the_injected_registry(server: ObservabilityServer, metrics: SchedulerMetrics) -> None:
    metrics.schedule_attempts.labels(result="scheduled", profile="netsched").inc(3)
    metrics.leader.set(1)
    status, content_type, body = get(server, "/metrics")
    assert status == 200
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"  # no Accept: the text format
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }
    assert (
        samples[("scheduler_schedule_attempts_total", (("profile", "netsched"), ("result", "scheduled")))]
        == 3
    )
    assert samples[("netsched_leader", ())] == 1
    # Only the injected registry: no process or platform collectors of the global one.
    assert "process_cpu_seconds_total" not in body


@pytest.mark.parametrize("path", ["/healthz", "/livez"])
def test_liveness(server: ObservabilityServer, state: State, path: str) -> None:
    assert get(server, path)[::2] == (200, "ok\n")
    state.healthy = False
    status, _, body = get(server, path)
    assert status == 500 and "scheduling loop stuck" in body


@pytest.mark.parametrize("path", ["/healthz", "/livez"])
def test_health_in_kubes_format(server: ObservabilityServer, state: State, path: str) -> None:
    kind = path[1:]
    assert get(server, f"{path}?verbose")[::2] == (
        200,
        f"[+]ping ok\n[+]schedulingLoop ok\n{kind} check passed\n",
    )
    state.healthy = False
    # A failure lists every check, whether or not verbose was asked for, with the reason.
    failed = f"[+]ping ok\n[-]schedulingLoop failed: scheduling loop stuck\n{kind} check failed\n"
    assert get(server, path)[::2] == (500, failed)
    assert get(server, f"{path}?verbose=1")[::2] == (500, failed)
    # ?exclude= skips a check, as kube's does.
    excluded = f"[+]ping ok\n[+]schedulingLoop excluded: ok\n{kind} check passed\n"
    assert get(server, f"{path}?exclude=schedulingLoop")[::2] == (200, "ok\n")
    assert get(server, f"{path}?exclude=schedulingLoop&verbose")[::2] == (200, excluded)


def test_a_check_that_raises_fails(metrics: SchedulerMetrics) -> None:
    def broken() -> str | None:
        raise KeyError("gone")

    with ObservabilityServer("127.0.0.1", 0, registry=metrics.registry, checks=[Check("x", broken)]) as srv:
        status, _, body = get(srv, "/livez")
    assert status == 500 and "[-]x failed: check raised KeyError: 'gone'" in body


def test_readyz_reports_the_reason_until_caches_sync(server: ObservabilityServer, state: State) -> None:
    status, _, body = get(server, "/readyz")
    assert status == 503
    assert body.splitlines()[0] == "not ready: caches not synced"


def test_readyz_without_a_reason_still_says_not_ready(metrics: SchedulerMetrics) -> None:
    def ready() -> tuple[bool, dict[str, object]]:
        return False, {"synced": False, "role": "standby"}

    with ObservabilityServer("127.0.0.1", 0, registry=metrics.registry, ready=ready) as srv:
        status, _, body = get(srv, "/readyz")
    assert status == 503
    assert body.splitlines() == ["not ready", "synced=False", "role=standby"]


def test_a_synced_standby_is_ready(server: ObservabilityServer, state: State) -> None:
    state.synced = True
    status, _, body = get(server, "/readyz")
    assert status == 200
    assert body.splitlines() == ["ok", "role=standby", "caches=synced"]
    state.leader = True
    assert "role=leader" in get(server, "/readyz")[2]


def test_debug_handlers_get_the_query(server: ObservabilityServer) -> None:
    status, content_type, body = get(server, "/debug/explain?pod=default/web-1")
    assert (status, content_type, json.loads(body)) == (200, "application/json", {"pod": "default/web-1"})
    assert get(server, "/debug/explain")[0] == 400


def test_failing_handler_is_a_500_and_the_server_keeps_serving(server: ObservabilityServer) -> None:
    status, _, body = get(server, "/debug/broken")
    assert status == 500 and "RuntimeError" in body
    assert get(server, "/healthz")[0] == 200


def test_unknown_paths_and_methods(server: ObservabilityServer) -> None:
    assert get(server, "/nope")[0] == 404
    assert get(server, "/debug/other")[0] == 404
    assert get(server, "/metrics", method="POST")[0] == 405


def test_keep_alive_serves_several_requests_on_one_connection(server: ObservabilityServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        for path in ("/metrics", "/healthz", "/metrics"):
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
    finally:
        conn.close()


def test_binds_exactly_the_given_address(metrics: SchedulerMetrics) -> None:
    with ObservabilityServer("127.0.0.1", 0, registry=metrics.registry) as srv:
        assert srv._httpd is not None
        assert srv._httpd.server_address[0] == "127.0.0.1"
        assert srv.url == f"http://127.0.0.1:{srv.port}"
        # Without a ready check, a live server is ready.
        assert get(srv, "/readyz")[0] == 200


def test_default_address_is_loopback(metrics: SchedulerMetrics) -> None:
    srv = ObservabilityServer(registry=metrics.registry)
    assert (srv.address, srv.port) == ("127.0.0.1", 10259)


def test_stop_closes_the_port(metrics: SchedulerMetrics) -> None:
    srv = ObservabilityServer("127.0.0.1", 0, registry=metrics.registry).start()
    port = srv.port
    srv.stop()
    srv.stop()  # idempotent
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_debug_paths_must_be_under_debug(metrics: SchedulerMetrics) -> None:
    with pytest.raises(ValueError, match="/debug/"):
        ObservabilityServer(
            registry=metrics.registry, debug_handlers={"/explain": lambda q: (200, "text/plain", b"")}
        )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.0.0.0:10259", ("0.0.0.0", 10259)),
        ("127.0.0.1", ("127.0.0.1", 10259)),
        (":9000", ("127.0.0.1", 9000)),
        ("[::]:10259", ("::", 10259)),
        ("[::1]", ("::1", 10259)),
    ],
)
def test_parse_bind_address(value: str, expected: tuple[str, int]) -> None:
    assert parse_bind_address(value) == expected


def test_parse_bind_address_rejects_bad_ports() -> None:
    with pytest.raises(ValueError):
        parse_bind_address("1.2.3.4:70000")
    with pytest.raises(ValueError):
        parse_bind_address("1.2.3.4:http")
