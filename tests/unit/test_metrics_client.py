"""PrometheusHTTPClient against a local HTTP stub: through prometheus-api-client, auth, error classes,
no hidden retries."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from prometheus_api_client.exceptions import PrometheusApiClientException
from prometheus_api_client.prometheus_connect import PrometheusConnect

from netsched.metrics import CPU, MEMORY, MetricsHub, PrometheusArgs, QueryError
from netsched.metrics.client import PrometheusHTTPClient, classify, classify_status
from netsched.metrics.transport import ResponseDeadline, ResponseTooLarge
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import FaultyPrometheus, free_port


@dataclass
class Stub:
    status: int = 200
    body: object = field(
        default_factory=lambda: {"status": "success", "data": {"resultType": "vector", "result": []}}
    )
    delay: threading.Event | None = None  # block answers until set
    auth: list[str | None] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    location: str = ""  # a Location header to send (redirects)


@pytest.fixture
def stub() -> Iterator[tuple[Stub, str]]:
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            state.auth.append(self.headers.get("Authorization"))
            state.paths.append(self.path)
            if state.delay is not None:
                state.delay.wait(5)
            body = json.dumps(state.body).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if state.location:
                self.send_header("Location", state.location)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # the client timed out and left
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        if state.delay is not None:
            state.delay.set()
        server.shutdown()
        server.server_close()


def client(address: str, **kw: object) -> PrometheusHTTPClient:
    return PrometheusHTTPClient(PrometheusArgs(prometheus_address=address, **kw).connection)  # type: ignore[arg-type]


def test_every_query_goes_through_prometheus_api_client(
    stub: tuple[Stub, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = stub
    real = PrometheusConnect.custom_query
    calls: list[tuple[str, float]] = []

    def spy(self: PrometheusConnect, query: str, params: object = None, timeout: float = 0) -> object:
        calls.append((query, timeout))
        return real(self, query, params, timeout)  # type: ignore[arg-type]

    monkeypatch.setattr(PrometheusConnect, "custom_query", spy)
    hub = MetricsHub(clock=FakeClock(), sleep=lambda _s: None)
    src = hub.source(PrometheusArgs(prometheus_address=url, timeout_seconds=2, per_pod_usage=False))
    src.require(CPU, MEMORY)
    hub.poll_now()
    # Each query the server saw was one custom_query call, with the poll's per-call timeout.
    assert sorted(calls) == sorted([(src.query(CPU), 2), (src.query(MEMORY), 2)])
    assert len(state.paths) == 2 and all(p.startswith("/api/v1/query?query=") for p in state.paths)


def test_a_redirect_is_read_by_the_same_capped_transport(stub: tuple[Stub, str]) -> None:
    with FaultyPrometheus("huge", huge_bytes=1 << 20) as prom:
        state, url = stub
        state.status, state.location = 302, prom.url + "/api/v1/query?query=up"
        with pytest.raises(QueryError) as e:
            client(url, max_response_bytes=4096).query("up", 5.0)
    assert e.value.reason == "too_large" and prom.queries == 1


def test_vector_answer_and_no_auth_header_by_default(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.body = {"status": "success", "data": {"result": [{"metric": {"node": "a"}, "value": [1.0, "2"]}]}}
    got = client(url).query("up", 1.0)
    assert got == [{"metric": {"node": "a"}, "value": [1.0, "2"]}]
    assert state.auth == [None] and state.paths[0].startswith("/api/v1/query?query=up")


def test_bearer_token_rotates_and_is_never_logged(
    stub: tuple[Stub, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state, url = stub
    token = tmp_path / "token"
    token.write_text("s3cret-one\n")
    clock = FakeClock()
    hub = MetricsHub(clock=clock, sleep=lambda _s: None)
    src = hub.source(
        PrometheusArgs(prometheus_address=url, bearer_token_file=str(token), per_pod_usage=False)
    )
    src.require(CPU)
    caplog.set_level(logging.DEBUG)
    hub.poll_now()
    token.write_text("s3cret-two-rotated\n")
    os.utime(token, ns=(1, 1))  # a different mtime even on coarse filesystems
    hub.poll_now()
    assert state.auth == ["Bearer s3cret-one", "Bearer s3cret-two-rotated"]
    state.status, state.body = 401, {"status": "error", "error": "unauthorized"}
    hub.poll_now()
    token.unlink()
    hub.poll_now()
    assert src.in_fallback
    text = caplog.text + str(src.self_check())
    assert "s3cret" not in text
    assert "bearerTokenFile" in text  # the operator is told where to look


@pytest.mark.parametrize(
    ("status", "reason", "transient"),
    [
        (503, "http_5xx", True),
        (429, "http_429", True),
        (400, "bad_query", False),
        (401, "auth", False),
        (404, "bad_query", False),
    ],
)
def test_status_classes(stub: tuple[Stub, str], status: int, reason: str, transient: bool) -> None:
    state, url = stub
    state.status, state.body = status, {"status": "error", "error": "nope"}
    with pytest.raises(QueryError) as e:
        client(url).query("up", 1.0)
    assert (e.value.reason, e.value.transient) == (reason, transient)
    assert len(state.paths) == 1  # urllib3's own retry is off: retries happen in one place


def test_transient_status_retried_three_times_by_the_poller(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.status = 503
    hub = MetricsHub(clock=FakeClock(), sleep=lambda _s: None)
    src = hub.source(PrometheusArgs(prometheus_address=url))
    src.require(CPU)
    hub.poll_now()
    assert len(state.paths) == 3 and src.in_fallback


def test_connection_refused_and_timeout(stub: tuple[Stub, str]) -> None:
    with pytest.raises(QueryError) as e:
        client(f"http://127.0.0.1:{free_port()}").query("up", 1.0)
    assert e.value.reason == "unreachable" and e.value.transient
    state, url = stub
    state.delay = threading.Event()
    with pytest.raises(QueryError) as e:
        client(url).query("up", 0.2)
    assert e.value.reason == "timeout" and e.value.transient


def test_non_json_answer(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.body = "not an object"
    with pytest.raises(QueryError) as e:
        client(url).query("up", 1.0)
    assert e.value.reason == "bad_response"


def test_tls_settings_go_on_the_session() -> None:
    c = client("https://prom:9090", ca_file="/etc/ca.pem")
    assert c.session.verify == "/etc/ca.pem"
    c = client("https://prom:9090", insecure_skip_verify=True)
    assert c.session.verify is False
    assert client("https://prom:9090").session.verify is True


def test_classify_unknown_message() -> None:
    assert classify_status("weird").reason == "bad_query"


@pytest.mark.parametrize(
    ("error", "reason", "transient"),
    [
        (PrometheusApiClientException("HTTP Status Code 503 (b'down')"), "http_5xx", True),
        (PrometheusApiClientException("HTTP Status Code 400 (b'parse error')"), "bad_query", False),
        (PrometheusApiClientException("HTTP Status Code 403 (b'')"), "auth", False),
        (ResponseTooLarge(4096, "Content-Length 9999"), "too_large", False),
        (requests.JSONDecodeError("Expecting value", "<html>", 0), "bad_response", False),
        (KeyError("data"), "bad_response", False),
        (TypeError("string indices must be integers"), "bad_response", False),
        (ResponseDeadline("answer not complete within 1s (10 bytes read)"), "timeout", True),
        (requests.ConnectTimeout("connect timed out"), "timeout", True),
        (requests.ReadTimeout("read timed out"), "timeout", True),
        (requests.exceptions.SSLError("certificate verify failed"), "unreachable", True),
        (requests.ConnectionError("refused"), "unreachable", True),
        (requests.exceptions.ChunkedEncodingError("IncompleteRead"), "http", True),
        (requests.RequestException("other"), "http", True),
    ],
)
def test_library_and_requests_errors_map_to_the_error_classes(
    error: Exception, reason: str, transient: bool
) -> None:
    got = classify(error, "up", "http://prom:9090", 1.0)
    assert (got.reason, got.transient) == (reason, transient)
