"""Prometheus without a monitoring stack: the real binary on 127.0.0.1, or an in-process fake.

`PrometheusServer` starts the `prometheus` binary (the distribution's
package) on 127.0.0.1 with a temp data dir and a 1 s scrape interval over the
given targets (usually netsched.fakemetrics.SyntheticExporter), waits for
/-/ready, and can be stopped and restarted on the same port and data dir
(outage tests).  With `tls=True` it serves HTTPS (`--web.config.file` with a
generated self-signed certificate for 127.0.0.1, which is also the CA to
trust: `ca_file`).  `rule_files` are evaluated every scrape interval.

`FakePrometheus` is a QueryClient answering canned instant vectors per PromQL,
with a query log and injectable failures: pass `fake.factory` as
MetricsHub(client_factory=...), or serve it over HTTP with
`FakePrometheusServer` to a whole process.

Not a test-only thing: `netsched demo` uses them (tests reach them as
netsched.testing.prometheus, with the test-only helpers).
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TypedDict

from netsched.fakemetrics.loopback import LoopbackServer
from netsched.metrics.args import ConnectionKey
from netsched.metrics.client import QueryError
from netsched.metrics.source import MetricSource
from netsched.observability.tls import serving_cert

BINARY_CANDIDATES = ("prometheus", "/usr/bin/prometheus")


class VectorSample(TypedDict):
    """One series of an instant query's data.result, as Prometheus' JSON has it."""

    metric: dict[str, str]  # the series' labels
    value: list[float | str]  # [timestamp, the value as text]


# A canned series: its labels, its value as text, its timestamp (None: "now" at query time).
Canned = tuple[dict[str, str], str, float | None]


def prometheus_binary() -> str | None:
    """Path of the prometheus binary, or None when it is not installed."""
    for c in BINARY_CANDIDATES:
        found = shutil.which(c)
        if found:
            return found
    return None


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

    def query(self, promql: str) -> list[VectorSample]:
        """data.result of an instant query (direct HTTP; not counted by the poller's client)."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5, context=self._ssl) as r:
            body = json.load(r)
        result: list[VectorSample] = body["data"]["result"]
        return result

    def wait_for(
        self, promql: str, ok: Callable[[list[VectorSample]], bool] = bool, timeout: float = 20.0
    ) -> list[VectorSample]:
        """Poll the query until ok(result) (scrapes and rate windows take real time)."""
        deadline = time.monotonic() + timeout
        last: list[VectorSample] = []
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
    cfg: dict[str, object] = {
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
        self.results: dict[str, list[Canned]] = {}
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
        out: list[Canned] = []
        for key, v in values.items():
            value, ts = v if isinstance(v, tuple) else (v, None)
            out.append(({label: key}, _fmt(value), ts))
        self.results[promql] = out

    def serve(
        self,
        source: MetricSource,
        metric: str,
        values: Mapping[str, float | tuple[float, float]],
        *,
        label: str = "node",
    ) -> None:
        """set() for the PromQL `source` polls for `metric`."""
        self.set(source.query(metric), values, label=label)

    def query(self, promql: str, timeout: float) -> list[VectorSample]:
        self.calls.append(promql)
        if self.fail_all is not None:
            raise self.fail_all
        if promql in self.fail:
            raise self.fail[promql]
        now = self._wall()
        return [
            VectorSample(metric=labels, value=[now if ts is None else ts, value])
            for labels, value, ts in self.results.get(promql, [])
        ]

    def close(self) -> None:
        self.closed = True


def _fmt(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


class FakePrometheusServer:
    """A FakePrometheus behind Prometheus' HTTP query API on 127.0.0.1 (`/api/v1/query`), for
    whole processes (`netsched demo` without a prometheus binary) rather than one MetricsHub."""

    def __init__(self, fake: FakePrometheus) -> None:
        self.fake = fake
        self._server = LoopbackServer(self._handler(), "fake-prom")

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> FakePrometheusServer:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self.fake

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # see FaultyPrometheus

            def log_message(self, format: str, *args: object) -> None:
                return None

            def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query).get("query", [""])[0]
                if url.path != "/api/v1/query" or not query:
                    self.send_error(400, "only /api/v1/query?query=... is served")
                    return
                result = fake.query(query, timeout=0)
                body = json.dumps(
                    {"status": "success", "data": {"resultType": "vector", "result": result}}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
