"""Prometheus for tests: a real server from the distribution package, or a fake client.

`PrometheusServer` starts the `prometheus` binary on 127.0.0.1 with a temp
data dir and a 1 s scrape interval over the given targets (usually a
netsched.testing.exporter.SyntheticExporter), waits for /-/ready, and can be
stopped and restarted on the same port and data dir (outage tests).  With
`tls=True` it serves HTTPS (`--web.config.file` with a generated self-signed
certificate for 127.0.0.1, which is also the CA to trust: `ca_file`).

`FakePrometheus` is a QueryClient for unit tests: canned instant vectors per
PromQL, a query log, and injectable failures.  Pass `fake.factory` as
MetricsHub(client_factory=...).

`FaultyPrometheus` is a real HTTP endpoint on 127.0.0.1 that misbehaves on
purpose (hangs, trickles, sends a huge body) for fault tests and benchmarks
of the real HTTP client.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from netsched.metrics.args import ConnectionKey
from netsched.metrics.client import QueryError
from netsched.metrics.hub import MetricsHub
from netsched.metrics.source import MetricSource
from netsched.observability.tls import serving_cert

BINARY_CANDIDATES = ("prometheus", "/usr/bin/prometheus")


def prometheus_binary() -> str | None:
    """Path of the prometheus binary, or None when it is not installed."""
    for c in BINARY_CANDIDATES:
        found = shutil.which(c)
        if found:
            return found
    return None


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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PrometheusServer:
    def __init__(
        self,
        targets: Sequence[str],
        *,
        scrape_interval: str = "1s",
        binary: str | None = None,
        workdir: str | Path | None = None,
        honor_labels: bool = True,
        extra_args: Sequence[str] = (),
        tls: bool = False,
        rule_files: Sequence[str | Path] = (),
    ) -> None:
        """`rule_files`: Prometheus rule files (groups) evaluated every scrape interval."""
        self.binary = binary or prometheus_binary() or "prometheus"
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="netsched-prom-"))
        self.data_dir = self.workdir / "data"
        self.config_file = self.workdir / "prometheus.yml"
        self.log_file = self.workdir / "prometheus.log"
        self.port = free_port()
        self.extra_args = list(extra_args)
        self._proc: subprocess.Popen[bytes] | None = None
        self.config_file.write_text(scrape_config(targets, scrape_interval, honor_labels, rule_files))
        self.ca_file = ""  # the certificate a client must trust, with tls=True
        self._ssl: ssl.SSLContext | None = None
        if tls:
            cert = serving_cert(cert_dir=str(self.workdir / "tls"))
            self.ca_file = cert.cert_file
            web_config = self.workdir / "web.yml"
            web_config.write_text(
                json.dumps({"tls_server_config": {"cert_file": cert.cert_file, "key_file": cert.key_file}})
            )
            self.extra_args.append(f"--web.config.file={web_config}")
            self._ssl = ssl.create_default_context(cafile=self.ca_file)

    @property
    def url(self) -> str:
        return f"{'https' if self._ssl else 'http'}://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 15.0) -> PrometheusServer:
        if self.running:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            self.binary,
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
            # Discovery hands targets to the scrape manager every 5 s by default: the
            # first scrape would come 5 s after start.
            "--scrape.discovery-reload-interval=100ms",
            *self.extra_args,
        ]
        with open(self.log_file, "ab") as log:
            self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self._proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1, context=self._ssl) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"prometheus not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def kill(self) -> None:
        """Stop abruptly (SIGKILL), as a crash would."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)

    def restart(self, timeout: float = 15.0) -> PrometheusServer:
        """Stop if running, then start again on the same port and data dir."""
        self.stop()
        return self.start(timeout)

    def close(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------ assertions helpers

    def query(self, promql: str) -> list[dict[str, Any]]:
        """data.result of an instant query (direct HTTP; not counted by the poller's client)."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5, context=self._ssl) as r:
            body = json.load(r)
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for(
        self, promql: str, ok: Callable[[list[dict[str, Any]]], bool] = bool, timeout: float = 20.0
    ) -> list[dict[str, Any]]:
        """Poll the query until ok(result) (scrapes and rate windows take real time)."""
        deadline = time.monotonic() + timeout
        last: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                last = self.query(promql)
                if ok(last):
                    return last
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"query {promql!r} not satisfied after {timeout}s; last result: {last!r}")

    def api_query_count(self) -> float:
        """Instant queries this server has answered: its own prometheus_http_requests_total."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=5, context=self._ssl) as r:
            text = r.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith("prometheus_http_requests_total{") and 'handler="/api/v1/query"' in line:
                total += float(line.rsplit(" ", 1)[1])
        return total


def scrape_config(
    targets: Sequence[str], interval: str, honor_labels: bool, rule_files: Sequence[str | Path] = ()
) -> str:
    """prometheus.yml scraping `targets` (host:port) every `interval`, evaluating `rule_files`."""
    cfg: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
        "scrape_configs": [
            {
                "job_name": "node",
                "honor_labels": honor_labels,
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }
    if rule_files:
        cfg["rule_files"] = [str(f) for f in rule_files]
    return json.dumps(cfg, indent=2)  # JSON is YAML


class FakePrometheus:
    """A QueryClient answering from canned instant vectors."""

    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self._wall = wall
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[str] = []
        self.fail_all: QueryError | None = None
        self.fail: dict[str, QueryError] = {}
        self.closed = False

    def factory(self, conn: ConnectionKey) -> FakePrometheus:
        return self

    def set(
        self,
        promql: str,
        values: Mapping[str, float | tuple[float, float]],
        *,
        label: str = "node",
    ) -> None:
        """Serve one series per key: {key: value} or {key: (value, timestamp)}; default ts = now at query time."""
        out = []
        for key, v in values.items():
            value, ts = v if isinstance(v, tuple) else (v, None)
            out.append({"metric": {label: key}, "value": [ts, _fmt(value)]})
        self.results[promql] = out

    def serve(
        self, source: MetricSource, metric: str, values: Mapping[str, float | tuple[float, float]], **kw: Any
    ) -> None:
        """set() for the PromQL `source` polls for `metric`."""
        self.set(source.query(metric), values, **kw)

    def query(self, promql: str, timeout: float) -> Any:
        self.calls.append(promql)
        if self.fail_all is not None:
            raise self.fail_all
        if promql in self.fail:
            raise self.fail[promql]
        now = self._wall()
        return [
            {"metric": s["metric"], "value": [now if s["value"][0] is None else s["value"][0], s["value"][1]]}
            for s in self.results.get(promql, [])
        ]

    def close(self) -> None:
        self.closed = True


def _fmt(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


FAULT_MODES = ("ok", "hang", "trickle", "huge", "huge_chunked")
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
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultyPrometheus:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="faulty-prom", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # ends hanging and trickling answers
        self._server.shutdown()
        self._server.server_close()

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
