"""Prometheus for tests: netsched.fakemetrics' servers under the kit's name, and test-only helpers.

`PrometheusServer`, `FakePrometheus`, `FakePrometheusServer` and friends live in
netsched.fakemetrics.prometheus (`netsched demo` uses them too).  Here:

- `require_prometheus()`: the binary's path, or skip (fail under CI);
- `FaultyPrometheus`: a real HTTP endpoint on 127.0.0.1 that misbehaves on
  purpose (hangs, trickles, sends a huge body) for fault tests and benchmarks
  of the real HTTP client;
- `fake_hub()`: a MetricsHub answering from a FakePrometheus on a FakeClock.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from netsched.fakemetrics.loopback import LoopbackServer
from netsched.fakemetrics.prometheus import (
    BINARY_CANDIDATES,
    FakePrometheus,
    FakePrometheusServer,
    PrometheusServer,
    free_port,
    prometheus_binary,
    scrape_config,
)
from netsched.metrics.hub import MetricsHub

__all__ = [
    "BINARY_CANDIDATES",
    "FakePrometheus",
    "FakePrometheusServer",
    "FaultyPrometheus",
    "PrometheusServer",
    "fake_hub",
    "free_port",
    "prometheus_binary",
    "require_prometheus",
    "scrape_config",
]


def require_prometheus() -> str:
    """The binary path; otherwise fail the test under CI (env CI set), skip elsewhere."""
    import pytest

    path = prometheus_binary()
    if path is None:
        msg = (
            "the `prometheus` binary is not installed (apt-get install prometheus); integration tests need it"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


FAULT_MODES = ("ok", "hang", "trickle", "huge", "huge_chunked", "stall")
_SERIES = b'{"metric":{"node":"n1"},"value":[1700000000,"0.5"]}'
_HEAD = b'{"status":"success","data":{"resultType":"vector","result":['
_TAIL = b"]}}"


class FaultyPrometheus:
    """An HTTP Prometheus on 127.0.0.1 answering every query according to `mode`.

    - "ok": a one-series vector.
    - "hang": accepts the connection and the request, never answers (until stop()).
    - "trickle": a valid one-series answer, `trickle_bytes` every `trickle_interval` s.
    - "huge": a valid vector of about `huge_bytes`, with Content-Length.
    - "huge_chunked": the same without Content-Length (chunked), so only reading finds its size.
    - "stall": a valid answer's headers and first half, then nothing (until stop()).

    Huge bodies are generated as they are sent: the fake never holds them in memory.
    `mode` may be changed while running; `queries` counts requests.
    """

    def __init__(
        self,
        mode: str = "ok",
        *,
        huge_bytes: int = 50 * 1024 * 1024,
        trickle_interval: float = 0.05,
        trickle_bytes: int = 1,
    ) -> None:
        if mode not in FAULT_MODES:
            raise ValueError(f"mode must be one of {FAULT_MODES}")
        self.mode = mode
        self.huge_bytes = huge_bytes
        self.trickle_interval = trickle_interval
        self.trickle_bytes = max(1, trickle_bytes)
        self.queries = 0
        self._release = threading.Event()
        self._server = LoopbackServer(self._handler(), "faulty-prom")

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> FaultyPrometheus:
        self._server.start()
        return self

    def stop(self) -> None:
        self._release.set()  # ends hanging and trickling answers
        self._server.stop()

    def __enter__(self) -> FaultyPrometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _huge_parts(self) -> tuple[int, Iterator[bytes]]:
        item = _SERIES + b","
        n = max(1, (self.huge_bytes - len(_HEAD) - len(_TAIL)) // len(item))
        length = len(_HEAD) + n * len(item) - 1 + len(_TAIL)
        per_chunk = max(1, 65536 // len(item))

        def parts() -> Iterator[bytes]:
            yield _HEAD
            left = n
            while left > 0:
                k = min(per_chunk, left)
                left -= k
                yield item * k if left else item * (k - 1) + _SERIES
            yield _TAIL

        return length, parts()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: with Nagle on, each keep-alive
            # answer would wait ~40 ms for the client's delayed ACK (a real server does not).
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
                fake.queries += 1
                with contextlib.suppress(OSError):  # the client gave up and left
                    self._answer(fake.mode)

            def _answer(self, mode: str) -> None:
                if mode == "hang":
                    fake._release.wait()
                    self.close_connection = True
                    return
                if mode in ("huge", "huge_chunked"):
                    length, parts = fake._huge_parts()
                    self._begin(None if mode == "huge_chunked" else length)
                    for part in parts:
                        self._write(part, chunked=mode == "huge_chunked")
                    if mode == "huge_chunked":
                        self.wfile.write(b"0\r\n\r\n")
                    return
                body = _HEAD + _SERIES + _TAIL
                self._begin(len(body))
                if mode == "ok":
                    self.wfile.write(body)
                    return
                if mode == "stall":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    fake._release.wait()
                    self.close_connection = True
                    return
                for i in range(0, len(body), fake.trickle_bytes):  # trickle
                    self.wfile.write(body[i : i + fake.trickle_bytes])
                    self.wfile.flush()
                    if fake._release.wait(fake.trickle_interval):
                        self.close_connection = True
                        return

            def _begin(self, length: int | None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if length is None:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(length))
                self.end_headers()

            def _write(self, data: bytes, *, chunked: bool) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

        return Handler


def fake_hub(clock: Any = None, registry: Any = None) -> tuple[MetricsHub, FakePrometheus]:
    """A MetricsHub answering from a FakePrometheus, on a FakeClock (retries do not sleep)."""
    from netsched.testing.clock import FakeClock

    clock = clock if clock is not None else FakeClock()
    fake = FakePrometheus(clock.wall)
    hub = MetricsHub(registry=registry, clock=clock, client_factory=fake.factory, sleep=lambda _s: None)
    return hub, fake
