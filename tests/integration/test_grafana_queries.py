"""Every query in grafana/ is valid PromQL and returns data from a real Prometheus.

No Grafana server can run here, so the dashboards are checked the way Grafana
would use them: every "expr" (panel targets, annotations) and every template
variable query is taken from the JSON, Grafana's variables are substituted,
promtool checks the syntax, and a real Prometheus (the distribution's
/usr/bin/prometheus, on 127.0.0.1) runs each query against an exporter serving
netsched's metrics: SchedulerMetrics and the metrics pipeline's Instruments on
one registry behind an ObservabilityServer, plus synthetic netsched_node_*
gauges, kept moving by a thread. (Later this exporter can be a running netsched.)

Without /usr/bin/prometheus the Prometheus tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, Gauge

from netsched.metrics.instruments import Instruments
from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.server import ObservabilityServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
SCRAPE_INTERVAL = "1s"
# What Grafana would put in; rate windows cover several scrapes of SCRAPE_INTERVAL.
GRAFANA_VARIABLES = {
    "__rate_interval": "10s",
    "__interval": "5s",
    "__range": "1m",
    "datasource": "prometheus",
    "profile": ".*",
    "node": ".*",
    "threshold": "0.8",
}
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
_LABEL_VALUES = re.compile(r"^label_values\((?P<metric>[^,]+),\s*(?P<label>\w+)\)$")
NODES = ("node-a", "node-b", "node-c", "node-d")
SOURCE = "http://prometheus.test:9090"


def substitute(expr: str) -> str:
    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in GRAFANA_VARIABLES:
            raise KeyError(f"unknown Grafana variable ${name} in {expr!r}")
        return GRAFANA_VARIABLES[name]

    return _VARIABLE.sub(value, expr)


def walk(node: Any, title: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every dict with an "expr", with the title of the panel (or annotation) it belongs to."""
    if isinstance(node, dict):
        title = str(node.get("title") or node.get("name") or title)
        if "expr" in node:
            yield title, node
        for child in node.values():
            yield from walk(child, title)
    elif isinstance(node, list):
        for child in node:
            yield from walk(child, title)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def queries() -> list[tuple[str, str, bool]]:
    """(where, PromQL after substitution, instant) for every expr in every dashboard."""
    found = []
    for path in DASHBOARDS:
        for title, target in walk(load(path)):
            found.append((f"{path.name}: {title}", substitute(target["expr"]), bool(target.get("instant"))))
    return found


def variable_queries() -> list[tuple[str, str, str]]:
    """(where, metric selector, label) of every label_values() template variable."""
    found = []
    for path in DASHBOARDS:
        for var in load(path)["templating"]["list"]:
            if var["type"] != "query":
                continue
            m = _LABEL_VALUES.match(var["definition"])
            assert m, f"{path.name}: variable {var['name']} is not label_values(metric, label)"
            found.append((f"{path.name}: ${var['name']}", m["metric"].strip(), m["label"]))
    return found


# --- structure: no Prometheus needed -------------------------------------------------


def test_dashboards_exist_and_are_grafana_11_json() -> None:
    assert {p.name for p in DASHBOARDS} == {"netsched-placement.json", "netsched-health.json"}
    uids = set()
    for path in DASHBOARDS:
        d = load(path)
        assert d["schemaVersion"] >= 39 and d["uid"] and d["uid"] not in uids, path.name
        uids.add(d["uid"])
        names = [v["name"] for v in d["templating"]["list"]]
        assert names[0] == "datasource" and d["templating"]["list"][0]["query"] == "prometheus"
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids)), f"{path.name}: duplicate panel ids"
        for panel in d["panels"]:
            pos = panel["gridPos"]
            assert pos["x"] + pos["w"] <= 24, f"{path.name}: {panel['title']} overflows the grid"
            if panel["type"] == "row":
                continue
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
            assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"]), panel["title"]
            assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"]), panel["title"]


def test_provisioning_points_at_the_dashboards() -> None:
    provider = yaml.safe_load((ROOT / "grafana/provisioning/dashboards/netsched.yaml").read_text())
    assert provider["apiVersion"] == 1
    assert provider["providers"][0]["type"] == "file"
    datasources = yaml.safe_load((ROOT / "grafana/provisioning/datasources/prometheus.yaml").read_text())
    assert datasources["datasources"][0]["type"] == "prometheus"


def test_dashboards_cover_the_metrics_operators_need() -> None:
    text = " ".join(expr for _, expr, _ in queries())
    for metric in (
        "netsched_placements_total",
        "netsched_node_network_utilisation",
        "netsched_node_cpu_utilisation",
        "netsched_node_memory_utilisation",
        "scheduler_schedule_attempts_total",
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_pending_pods",
        "netsched_bind_errors_total",
        "netsched_prometheus_query_errors_total",
        "netsched_prometheus_query_duration_seconds_bucket",
        "netsched_node_metric_sample_age_seconds",
        "netsched_metrics_fallback",
        "netsched_leader",
    ):
        assert metric in text, metric
    assert "stddev(" in text and "histogram_quantile(" in text


def test_substitution_leaves_no_variable() -> None:
    for where, expr, _ in queries():
        assert "$" not in expr, where
        assert '=~".*"' in expr or "=~" not in expr, where


# --- against promtool and a real Prometheus -------------------------------------------


def binary(name: str) -> str:
    path = shutil.which(name) or f"/usr/bin/{name}"
    if not os.access(path, os.X_OK):
        message = f"{name} not found (apt-get install prometheus)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def test_promtool_accepts_every_query(tmp_path: Path) -> None:
    promtool = binary("promtool")
    exprs = sorted({expr for _, expr, _ in queries()})
    rules = {
        "groups": [
            {
                "name": "dashboards",
                "rules": [{"record": f"dashboard:expr_{i}", "expr": e} for i, e in enumerate(exprs)],
            }
        ]
    }
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    result = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(exprs)} rules found" in result.stdout


class Exporter:
    """netsched's metrics with some life in them, served over HTTP."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.metrics = SchedulerMetrics(self.registry)
        self.instruments = Instruments(self.registry)
        util = ["source", "node"]
        self.network = Gauge("netsched_node_network_utilisation", "synthetic", util, registry=self.registry)
        self.cpu = Gauge("netsched_node_cpu_utilisation", "synthetic", util, registry=self.registry)
        self.memory = Gauge("netsched_node_memory_utilisation", "synthetic", util, registry=self.registry)
        self.age = Gauge(
            "netsched_node_metric_sample_age_seconds", "synthetic", [*util, "metric"], registry=self.registry
        )
        self.server = ObservabilityServer("127.0.0.1", 0, registry=self.registry)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="exporter", daemon=True)
        self.rng = random.Random(7)
        self.started = time.monotonic()

    def __enter__(self) -> Exporter:
        self.tick()
        self.server.start()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.server.stop()

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            self.tick()

    def tick(self) -> None:
        m, inst, r = self.metrics, self.instruments, self.rng
        for result, share in (("scheduled", 5), ("unschedulable", 1), ("error", 1)):
            m.schedule_attempts.labels(result=result, profile="netsched").inc(share)
            m.scheduling_attempt_duration.labels(result=result, profile="netsched").observe(
                r.uniform(0.001, 0.05)
            )
        for point in ("PreFilter", "Filter", "Score", "Bind"):
            m.framework_extension_point_duration.labels(
                extension_point=point, status="Success", profile="netsched"
            ).observe(r.uniform(0.0001, 0.01))
        m.placements.labels(node=r.choice(NODES), profile="netsched").inc()
        m.bind_errors.labels(stage="bind", profile="netsched").inc()
        m.preemption_attempts.inc()
        for queue, count in (("active", 3), ("backoff", 1), ("unschedulable", 2), ("gated", 0)):
            m.set_pending(queue, count)
        # Leadership lapses for 1 s in every 6, so the "Leader changes" annotation has data.
        m.leader.set(0 if int(time.monotonic() - self.started) % 6 == 5 else 1)
        m.cache_nodes.set(len(NODES))
        m.cache_assumed_pods.set(r.randint(0, 3))
        for metric in ("cpu", "memory", "networkReceive"):
            inst.query_duration.labels(source=SOURCE, metric=metric).observe(r.uniform(0.005, 0.2))
            inst.query_errors.labels(source=SOURCE, metric=metric, reason="timeout").inc()
            inst.nodes_without_series.labels(source=SOURCE, metric=metric).set(0)
        inst.fallback.labels(source=SOURCE).set(0)
        for i, node in enumerate(NODES):
            base = 0.2 * (i + 1)  # node-d is above 0.8 on every resource
            self.network.labels(source=SOURCE, node=node).set(min(1.0, base + r.uniform(0, 0.05)))
            self.cpu.labels(source=SOURCE, node=node).set(min(1.0, base + r.uniform(0, 0.05)))
            self.memory.labels(source=SOURCE, node=node).set(min(1.0, base + r.uniform(0, 0.05)))
            for metric in ("cpu", "memory"):
                self.age.labels(source=SOURCE, node=node, metric=metric).set(r.uniform(0, 30))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Prometheus:
    def __init__(self, exe: str, workdir: Path, target: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
            "scrape_configs": [{"job_name": "netsched", "static_configs": [{"targets": [target]}]}],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = (workdir / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [
                exe,
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.workdir = workdir

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if http_get(f"{self.url}/-/ready", timeout=1)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(
            "Prometheus did not become ready:\n" + (self.workdir / "prometheus.log").read_text()
        )

    def api(self, endpoint: str, **params: str) -> dict[str, Any]:
        url = f"{self.url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
        status, body = http_get(url)
        data: dict[str, Any] = json.loads(body)
        assert status == 200 and data["status"] == "success", f"{params}: {data}"
        result: dict[str, Any] = data["data"]
        return result

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Prometheus, float]]:
    exe = binary("prometheus")
    with Exporter() as exporter:
        prom = Prometheus(exe, tmp_path_factory.mktemp("prometheus"), f"127.0.0.1:{exporter.server.port}")
        try:
            prom.wait_ready()
            yield prom, time.time()
        finally:
            prom.close()


def run(prom: Prometheus, start: float, expr: str, instant: bool) -> list[Any]:
    if instant:
        result: list[Any] = prom.api("query", query=expr)["result"]
        return result
    now = time.time()
    return list(prom.api("query_range", query=expr, start=str(start), end=str(now), step="1")["result"])


def test_every_query_runs_and_returns_data(prometheus: tuple[Prometheus, float]) -> None:
    prom, start = prometheus
    pending = queries()
    assert pending
    deadline = time.monotonic() + 40
    # Rates need a few scrapes; wait until each query has data (or give up and report).
    while True:
        pending = [
            (where, expr, instant) for where, expr, instant in pending if not run(prom, start, expr, instant)
        ]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not pending, "queries without data:\n" + "\n".join(f"  {w}: {e}" for w, e, _ in pending)


def test_template_variables_find_values(prometheus: tuple[Prometheus, float]) -> None:
    prom, _ = prometheus
    for where, metric, label in variable_queries():
        deadline = time.monotonic() + 20
        values = prom.api(f"label/{label}/values", **{"match[]": metric})
        while not values and time.monotonic() < deadline:
            time.sleep(0.2)
            values = prom.api(f"label/{label}/values", **{"match[]": metric})
        assert values, f"{where}: no {label} values for {metric}"
