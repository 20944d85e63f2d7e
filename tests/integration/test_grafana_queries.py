"""Every query in grafana/ is valid PromQL and returns data from a real Prometheus scraping a running netsched.

No Grafana server can run here, so the dashboards are checked the way Grafana
would use them: every "expr" (panel targets, annotations) and every template
variable query is taken from the JSON, Grafana's variables are substituted,
promtool checks the syntax, and a real Prometheus (the distribution's
/usr/bin/prometheus, on 127.0.0.1) runs each query.

What it scrapes is the real thing: a SchedulerApp (leader election on, its
/metrics endpoint served as in production) scheduling pods from a fake API
server, with NetworkTraffic, LoadAware and LoadThreshold polling that same
Prometheus, which also scrapes a synthetic node_exporter for thirteen nodes.
Nothing is written into netsched's metrics by the test; each panel has data
because the scheduler did something:

- a thread creates pods all the time (placements, attempts, latencies);
  some ask for more CPU than any node has (result="unschedulable",
  preemption attempts), some have their binding POST fail with 500 more times
  than the client retries (netsched_bind_errors_total, result="error");
- node-d is above 0.8 on network, CPU and memory ("Nodes above threshold");
- a second profile, netsched-dead, points its plugins at an address where
  nothing listens: that source fails every poll (query errors, fallback = 1)
  while the first one works (query latency, sample ages, nodes without series);
- the replica is scraped on standby (netsched_leader 0) before it campaigns,
  so acquiring the lease shows up in the "Leader changes" annotation;
- the Rebalancer runs in both profiles: the dead one skips every round
  (fallback); the live one finds node-d's link hot, where two ReplicaSets have
  a pod each (bound there by the test: LoadThreshold keeps the scheduler's own
  pods off node-d): "mover" is evicted, and its replacement (the kit's
  ReplicaSet controller) placed where the plan said; "pinned" is under a
  PodDisruptionBudget that allows no disruption, so every later round's
  eviction of it is refused.

Without /usr/bin/prometheus the Prometheus tests skip locally and fail in CI.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import logging
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.config.reload import SUCCESS, ConfigReloader
from netsched.kube import KubeAPI, build_api_client
from netsched.kube.client import RetrySettings
from netsched.metrics.estimation import INGRESS_BANDWIDTH
from netsched.serve import start_election, start_server
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import COSCHEDULING_PLUGINS
from netsched.testing.exporter import FakeNode, SyntheticExporter
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.kustomize import find_object
from netsched.testing.prometheus import PrometheusServer, free_port, require_prometheus
from netsched.testing.workloads import FakeReplicaSetController, pod_disruption_budget, replica_set

pytestmark = pytest.mark.integration

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
# What Grafana would put in; rate windows cover several of PrometheusServer's 1 s scrapes.
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

LIVE_PROFILE = "netsched"
DEAD_PROFILE = "netsched-dead"
DATA_DEADLINE = 40.0  # seconds for every query to have data, counted from the first query


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


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside (collapsed) rows too."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels") or ()


def panel(dashboard: str, title: str) -> dict[str, Any]:
    (found,) = [p for p in panels(load(ROOT / "grafana" / "dashboards" / dashboard)) if p["title"] == title]
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
        "netsched_placement_utilisation_above_median_bucket",
        "netsched_placements_over_threshold_total",
        "scheduler_unschedulable_pods",
        "netsched_load_threshold",
        "netsched_plugin_weight",
        "netsched_node_requested_ratio",
        "netsched_shadow_placements_total",
        "netsched_config_reloads_total",
        "netsched_events_dropped_total",
        "netsched_traffic_cross_node_ratio",
        "netsched_traffic_cross_level_ratio",
        "netsched_rebalancer_rounds_total",
        "netsched_rebalancer_skipped_rounds_total",
        "netsched_rebalancer_planned_moves_total",
        "netsched_rebalancer_evictions_total",
        "netsched_rebalancer_replacements_total",
        "netsched_rebalancer_hot_nodes",
    ):
        assert metric in text, metric
    assert "stddev(" in text and "histogram_quantile(" in text


def readme_exemptions() -> dict[str, str]:
    """deploy/README.md's "Metrics not on a dashboard" table: metric -> why."""
    text = (ROOT / "deploy" / "README.md").read_text()
    section = text.split("#### Metrics not on a dashboard", 1)[1].split("\n#", 1)[0]
    return dict(re.findall(r"^\| `(\w+)` \| (.+?) \|$", section, re.MULTILINE))


# A plugin family registers its metrics when its plugins are built: a gang profile brings them.
GANG_CONFIG = (
    """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: gangs
"""
    + COSCHEDULING_PLUGINS
)


def exported_families(scheduler_app: Any) -> set[str]:
    """Every family on a SchedulerApp's /metrics registry: the core's, the metric plugins' (this
    module's CONFIG) and the gang plugins' (GANG_CONFIG; its QueueSort differs, so another app)."""
    cfg = CONFIG.format(
        live_profile=LIVE_PROFILE,
        dead_profile=DEAD_PROFILE,
        live_url="http://127.0.0.1:9",
        dead_url="http://127.0.0.1:9",
        rate_window=RATE_WINDOW,
    )
    return {family.name for c in (cfg, GANG_CONFIG) for family in scheduler_app(c).metrics_registry.collect()}


def test_every_exported_family_is_on_a_panel_or_says_why_not(scheduler_app: Any) -> None:
    families = exported_families(scheduler_app)
    assert {"scheduler_unschedulable_pods", "netsched_load_threshold", "netsched_placements"} <= families
    text = " ".join(expr for _, expr, _ in queries())
    missing = {f for f in families if not re.search(rf"\b{f}(_total|_bucket|_sum|_count)?\b", text)}
    exempt = readme_exemptions()
    assert exempt and all(why.strip() for why in exempt.values())
    assert missing == set(exempt), (
        f"on no panel and not in deploy/README.md: {sorted(missing - set(exempt))}; "
        f"listed in deploy/README.md but on a panel or not exported: {sorted(set(exempt) - missing)}"
    )


# Grafana's unit ids for rates (packages/grafana-data/src/valueFormats/categories.ts, "Throughput").
PER_MINUTE_UNITS = {"cpm", "opm", "rpm", "wpm"}
PER_SECOND_UNITS = {"cps", "ops", "reqps", "rps", "wps", "iops"}


def test_rate_panels_have_a_unit_per_second_or_per_minute() -> None:
    """A panel plotting 60 * rate(...) shows events per minute: its unit says so ("short" did not)."""
    checked = 0
    for path in DASHBOARDS:
        for p in panels(load(path)):
            exprs = [t["expr"] for t in p.get("targets") or () if "rate(" in t["expr"]]
            if not exprs:
                continue
            unit = p["fieldConfig"]["defaults"].get("unit")
            per_minute = [e.replace(" ", "").startswith("60*") for e in exprs]
            where = f"{path.name}: {p['title']}"
            if any(per_minute):
                assert all(per_minute), f"{where}: per-minute and per-second series in one panel"
                assert unit in PER_MINUTE_UNITS, f"{where}: per-minute series with unit {unit!r}"
                checked += 1
            else:
                assert unit not in PER_MINUTE_UNITS, f"{where}: per-second series with unit {unit!r}"
    assert checked, "no per-minute panel found"


def test_substitution_leaves_no_variable() -> None:
    for where, expr, _ in queries():
        assert "$" not in expr, where
        assert '=~".*"' in expr or "=~" not in expr, where


# --- against promtool ------------------------------------------------------------------


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


# --- a running netsched and the Prometheus that scrapes it --------------------------------

# Utilisation per node (network = busier direction / the exporter's 1 Gb/s link): node-d is
# above the dashboards' 0.8 on every resource, and above LoadThreshold's limits below.
# Thirteen nodes, more than the ten "Busiest nodes now" lists, each with its own network level.
LOAD = {
    "node-a": {"rx": 10e6, "tx": 5e6, "cpu": 0.10, "memory": 0.20},
    "node-b": {"rx": 30e6, "tx": 10e6, "cpu": 0.30, "memory": 0.30},
    "node-c": {"rx": 60e6, "tx": 20e6, "cpu": 0.50, "memory": 0.50},
    "node-d": {"rx": 110e6, "tx": 40e6, "cpu": 0.90, "memory": 0.90},
    "node-e": {"rx": 5e6, "tx": 2e6, "cpu": 0.15, "memory": 0.25},
    "node-f": {"rx": 10e6, "tx": 15e6, "cpu": 0.20, "memory": 0.35},
    "node-g": {"rx": 20e6, "tx": 5e6, "cpu": 0.25, "memory": 0.40},
    "node-h": {"rx": 25e6, "tx": 5e6, "cpu": 0.35, "memory": 0.45},
    "node-i": {"rx": 35e6, "tx": 10e6, "cpu": 0.40, "memory": 0.55},
    "node-j": {"rx": 20e6, "tx": 40e6, "cpu": 0.45, "memory": 0.60},
    "node-k": {"rx": 45e6, "tx": 10e6, "cpu": 0.55, "memory": 0.65},
    "node-l": {"rx": 55e6, "tx": 10e6, "cpu": 0.60, "memory": 0.70},
    "node-m": {"rx": 70e6, "tx": 30e6, "cpu": 0.65, "memory": 0.75},
}
NODES = {name: f"10.0.0.{i}" for i, name in enumerate(LOAD, start=1)}
LINK = 125e6  # the exporter's link speed, bytes/s
RATE_WINDOW = 4  # seconds: the pollers' rateWindow, four of PrometheusServer's 1 s scrapes
# The API client tries a request this many times; a binding fault that outlasts them fails the bind.
RETRY = RetrySettings(max_attempts=3, backoff=0.1, max_backoff=0.5)

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 3s
  renewDeadline: 2s
  retryPeriod: 500ms
  resourceNamespace: kube-system
  resourceName: netsched
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
profiles:
- schedulerName: {live_profile}
  plugins: &plugins
    multiPoint:
      enabled:
      - name: NetworkTraffic
        weight: 5
      - name: LoadAware
        weight: 3
      - name: LoadThreshold
      - name: TrafficAffinity
        weight: 4
      - name: Rebalancer
  pluginConfig:
  - name: NetworkTraffic
    args:
      prometheus: &live
        prometheusAddress: {live_url}
        pollIntervalSeconds: 1
        timeoutSeconds: 0.5
        maxSampleAgeSeconds: 5
        rateWindow: {rate_window}s
        estimation:
          coverMarginSeconds: 2
  - name: LoadAware
    args:
      prometheus: *live
  - name: TrafficAffinity
    args:
      prometheus: *live
  - name: LoadThreshold
    args:
      networkUtilizationPercent: 80
      cpuUtilizationPercent: 85
      memoryUtilizationPercent: 85
      prometheus: *live
  - name: Rebalancer
    args:
      dryRun: false
      intervalSeconds: 1
      consecutiveRounds: 2
      cooldownSeconds: {{node: 0}}
      prometheus: *live
- schedulerName: {dead_profile}
  plugins: *plugins
  pluginConfig:
  - name: NetworkTraffic
    args:
      prometheus: &dead
        prometheusAddress: {dead_url}
        pollIntervalSeconds: 1
        timeoutSeconds: 0.5
        maxSampleAgeSeconds: 5
        rateWindow: {rate_window}s
  - name: LoadAware
    args:
      prometheus: *dead
  - name: TrafficAffinity
    args:
      prometheus: *dead
  - name: LoadThreshold
    args:
      networkUtilizationPercent: 80
      cpuUtilizationPercent: 85
      memoryUtilizationPercent: 85
      prometheus: *dead
  - name: Rebalancer
    args:
      intervalSeconds: 1
      prometheus: *dead
"""


def wait_until(pred: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class PodFeeder:
    """Creates pods for both profiles every `tick` seconds and deletes old ones, as a busy cluster would.

    Per 10 ticks: 10 ordinary pods for the live profile, 2 for the dead one, one
    pod whose binding fails (its POST answers 500 more often than the client
    retries; the next attempt binds it) and one that fits no node. At most
    `keep` ordinary and `keep_huge` unschedulable pods exist at a time: the
    oldest are deleted, so the nodes never fill up.
    """

    def __init__(
        self, server: FakeAPIServer, *, tick: float = 0.2, keep: int = 100, keep_huge: int = 3
    ) -> None:
        self.server = server
        self.tick = tick
        self.keep = keep
        self.keep_huge = keep_huge
        self.created = 0
        self.errors: list[str] = []
        self._pods: collections.deque[str] = collections.deque()
        self._huge: collections.deque[str] = collections.deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-feeder", daemon=True)

    def start(self) -> PodFeeder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(self.tick):
            i += 1
            try:
                self.step(i)
            except Exception as e:  # reported by the tests; the feeder keeps going
                log.exception("Pod feeder step %d failed", i)
                self.errors.append(f"step {i}: {e!r}")

    def step(self, i: int) -> None:
        self._create(self._pods, make_pod(f"p-{i}").scheduler(LIVE_PROFILE).req(cpu="50m", memory="64Mi"))
        if i % 5 == 0:
            self._create(
                self._pods, make_pod(f"dead-{i}").scheduler(DEAD_PROFILE).req(cpu="50m", memory="64Mi")
            )
        if i % 10 == 3:
            name = f"flaky-{i}"
            self.server.inject_fault(
                "POST",
                rf"/namespaces/default/pods/{name}/binding(?:\?|$)",
                status=500,
                count=RETRY.max_attempts,
            )
            self._create(self._pods, make_pod(name).scheduler(LIVE_PROFILE).req(cpu="50m", memory="64Mi"))
        if i % 10 == 7:
            self._create(self._huge, make_pod(f"huge-{i}").scheduler(LIVE_PROFILE).req(cpu="64"))
        self._trim(self._pods, self.keep)
        self._trim(self._huge, self.keep_huge)

    def _create(self, into: collections.deque[str], pod: Any) -> None:
        obj = pod.obj()
        self.server.create("pods", obj)
        into.append(obj["metadata"]["name"])
        self.created += 1

    def _trim(self, pods: collections.deque[str], keep: int) -> None:
        while len(pods) > keep:
            self.server.delete("pods", pods.popleft(), "default")


@dataclass
class Stack:
    prom: PrometheusServer
    app: SchedulerApp
    server: FakeAPIServer
    feeder: PodFeeder
    start: float  # wall time Prometheus started: range queries begin here
    live_source: str
    dead_source: str
    reloader: ConfigReloader


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    exe = require_prometheus()
    workdir = tmp_path_factory.mktemp("grafana")
    nodes = [FakeNode(name, ip) for name, ip in NODES.items()]
    with SyntheticExporter(nodes) as exporter, FakeAPIServer(watch_timeout=5.0) as server:
        for name, ip in NODES.items():
            exporter.set_load(name, **LOAD[name])
            server.create(
                "nodes",
                make_node(name).capacity(cpu="8", memory="16Gi", pods="250").address("InternalIP", ip).obj(),
            )
        kubeconfig = workdir / "kubeconfig"
        server.write_kubeconfig(kubeconfig)
        server.create("configmaps", find_object(ROOT / "deploy", "ConfigMap", "netsched-rebalancer"))
        _pods_on_node_d(server)
        controllers = contextlib.ExitStack()
        # Prometheus must know netsched's port before either starts; nothing ever listens on dead_port.
        metrics_port, dead_port = free_port(), free_port()
        prom = PrometheusServer([exporter.target, f"127.0.0.1:{metrics_port}"], binary=exe, workdir=workdir)
        dead_url = f"http://127.0.0.1:{dead_port}"
        registry = build_registry()
        config_path = workdir / "config.yaml"
        config_path.write_text(
            CONFIG.format(
                live_profile=LIVE_PROFILE,
                dead_profile=DEAD_PROFILE,
                live_url=prom.url,
                dead_url=dead_url,
                rate_window=RATE_WINDOW,
            )
        )
        cfg = load_config(config_path.read_text(), registry)
        app = SchedulerApp(
            cfg,
            registry,
            KubeAPI(build_api_client(str(kubeconfig), qps=500, burst=1000, pool_size=24, retry=RETRY)),
            options=AppOptions(metrics_bind_address=f"127.0.0.1:{metrics_port}", watch_timeout=5),
        )
        # As `netsched --config` runs it: the file's hash is exported, a changed file reloads.
        reloader = ConfigReloader(
            str(config_path),
            cfg,
            lambda text: load_config(text, registry),
            app.apply_config,
            metrics=app.metrics,
        )
        feeder = PodFeeder(server)
        metrics_server = elector = None
        try:
            controllers.enter_context(FakeReplicaSetController(server))
            metrics_server = start_server(app)
            assert app.start_informers(sync_timeout=10)
            start = time.time()
            prom.start()
            # rate() over a window the series does not fill yet reads low: Prometheus extrapolates
            # at most half a scrape past the first sample but divides by the whole window (0.4-0.7
            # of the load set for the first scrapes). The pollers start once every node's counters
            # (all scraped together) have a sample a rate window old: each value they poll, and the
            # netsched_node_* gauges the dashboards show, is then the load the test set.
            prom.wait_for(
                f'count(node_network_receive_bytes_total{{device="eth0"}} offset {RATE_WINDOW}s) == {len(NODES)}',
                timeout=15,
            )
            app.start_background()  # the pollers' first query finds Prometheus up, its rates whole
            # A standby replica first (scraped with netsched_leader 0), then it campaigns and leads.
            prom.wait_for("netsched_leader == 0", timeout=15)
            feeder.start()
            elector = start_election(app, app.stop_event)
            assert elector is not None
            wait_until(lambda: app.leading, 10, "netsched to acquire the lease")
            sources = {p.name for p in app.hub.pollers}
            assert len(sources) == 2, sources
            yield Stack(
                prom=prom,
                app=app,
                server=server,
                feeder=feeder,
                start=start,
                live_source=next(s for s in sources if str(prom.port) in s),
                dead_source=next(s for s in sources if str(dead_port) in s),
                reloader=reloader,
            )
        finally:
            feeder.stop()
            controllers.close()
            server.clear_faults()  # bindings still retrying succeed at once
            app.stop_scheduling(timeout=5)
            if elector is not None:
                elector.stop(release=True)
            app.shutdown(timeout=5)
            if metrics_server is not None:
                metrics_server.stop()
            prom.close()


def _pods_on_node_d(server: FakeAPIServer) -> None:
    """Two ReplicaSets with their one pod each already Running on node-d, receiving 300 and 150
    Mbit/s (the busier direction there): the rebalancer tries the heavier first. "pinned" has a
    budget allowing no disruption (its status as written: no disruption controller runs here)."""
    for name, ingress in (("mover", "300M"), ("pinned", "150M")):
        template = (
            make_pod("t")
            .scheduler(LIVE_PROFILE)
            .label("app", name)
            .req(cpu="50m", memory="64Mi")
            .annotation(INGRESS_BANDWIDTH, ingress)
            .obj()
        )
        rs = server.create("apps/replicasets", replica_set(name, template))
        pod = template | {"metadata": {**template["metadata"], "name": f"{name}-0"}}
        pod["metadata"]["labels"] = dict(rs["spec"]["selector"]["matchLabels"])
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": rs["metadata"]["name"],
                "uid": rs["metadata"]["uid"],
                "controller": True,
            }
        ]
        pod["spec"] = {**template["spec"], "nodeName": "node-d"}
        pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        server.create("pods", pod)
    server.create(
        "policy/poddisruptionbudgets",
        pod_disruption_budget(
            "pinned",
            {"app": "pinned"},
            max_unavailable=0,
            status={"disruptionsAllowed": 0, "observedGeneration": 1},
        ),
    )


def api(prom: PrometheusServer, endpoint: str, **params: str) -> Any:
    url = f"{prom.url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            status, body = int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    data: dict[str, Any] = json.loads(body)
    assert status == 200 and data["status"] == "success", f"{endpoint} {params}: {data}"
    return data["data"]


def run(stack: Stack, expr: str, instant: bool) -> list[Any]:
    if instant:
        return list(api(stack.prom, "query", query=expr)["result"])
    now = time.time()
    return list(
        api(stack.prom, "query_range", query=expr, start=str(stack.start), end=str(now), step="1")["result"]
    )


# Panels whose series only a mode this stack does not run produces: their queries must still run.
NO_DATA_HERE = {"netsched-health.json: Shadow agreement"}  # --dry-run: test_scheduler_e2e.py


def test_every_query_runs_and_returns_data(stack: Stack) -> None:
    pending = queries()
    assert pending
    for where, expr, instant in pending:
        if where in NO_DATA_HERE:
            run(stack, expr, instant)  # asserts Prometheus accepted and evaluated it
    pending = [q for q in pending if q[0] not in NO_DATA_HERE]
    deadline = time.monotonic() + DATA_DEADLINE
    # Rates need a few scrapes of what the scheduler did: wait until each query has data.
    while True:
        pending = [
            (where, expr, instant) for where, expr, instant in pending if not run(stack, expr, instant)
        ]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not pending, (
        "queries without data:\n"
        + "\n".join(f"  {w}: {e}" for w, e, _ in pending)
        + f"\npod feeder errors: {stack.feeder.errors}"
    )
    assert not stack.feeder.errors


def label_values(stack: Stack, metric: str, label: str) -> list[str]:
    values: list[str] = api(stack.prom, f"label/{label}/values", **{"match[]": metric})
    return values


def test_template_variables_find_values(stack: Stack) -> None:
    for where, metric, label in variable_queries():
        values = wait_until(
            functools.partial(label_values, stack, metric, label),
            DATA_DEADLINE,
            f"{where}: {label} values of {metric}",
        )
        assert values, where


def vector(stack: Stack, expr: str, label: str) -> dict[str, float]:
    """An instant query's result as {value of `label`: sample}."""
    return {s["metric"].get(label, ""): float(s["value"][1]) for s in run(stack, expr, instant=True)}


def eventually(
    stack: Stack, expr: str, label: str, ok: Callable[[dict[str, float]], bool], what: str
) -> dict[str, float]:
    """The vector once ok(vector) holds (series need a scrape or two to show up)."""

    def check() -> dict[str, float] | None:
        got = vector(stack, expr, label)
        return got if got and ok(got) else None

    result: dict[str, float] = wait_until(check, DATA_DEADLINE, what)
    return result


def test_the_data_is_the_running_schedulers(stack: Stack) -> None:
    """The series behind the panels say what this netsched did, not merely that something exists."""
    eventually(
        stack,
        "sum by (profile) (scheduler_schedule_attempts_total)",
        "profile",
        lambda v: set(v) == {LIVE_PROFILE, DEAD_PROFILE},
        "attempts of both profiles",
    )
    eventually(
        stack,
        f'sum by (result) (scheduler_schedule_attempts_total{{profile="{LIVE_PROFILE}"}})',
        "result",
        lambda v: set(v) == {"scheduled", "unschedulable", "error"},
        "scheduled, unschedulable and error attempts",
    )
    eventually(
        stack,
        "sum by (stage) (netsched_bind_errors_total)",
        "stage",
        lambda v: set(v) == {"bind"},
        "bind errors",
    )
    both = {stack.live_source: 0.0, stack.dead_source: 1.0}
    eventually(
        stack,
        "max by (source) (netsched_metrics_fallback)",
        "source",
        lambda v: v == both,
        "fallback per source",
    )
    # Where nothing listens every poll fails (the live source's errors, if a loaded machine made
    # a query time out, are not asserted on).
    eventually(
        stack,
        f'sum by (reason) (netsched_prometheus_query_errors_total{{source="{stack.dead_source}"}})',
        "reason",
        lambda v: "unreachable" in v,
        "unreachable errors of the dead source",
    )
    for resource in ("network", "cpu", "memory"):
        eventually(
            stack,
            f"max by (node) (netsched_node_{resource}_utilisation) > 0.8",
            "node",
            lambda v: set(v) == {"node-d"},
            f"{resource} utilisation above 0.8 on node-d only",
        )
    eventually(stack, "sum(netsched_leader)", "", lambda v: v == {"": 1.0}, "one leader")
    # The pods that fit no node wait, counted under the plugin that rejected them (on node-d too:
    # a node's filters stop at the first rejection, and NodeResourcesFit runs before LoadThreshold).
    eventually(
        stack,
        f'max by (plugin) (scheduler_unschedulable_pods{{profile="{LIVE_PROFILE}"}})',
        "plugin",
        lambda v: v.get("NodeResourcesFit", 0) >= 1,
        "unschedulable pods per rejecting plugin",
    )
    # LoadThreshold filters node-d, so no placement lands over a limit, and every resource has a series.
    eventually(
        stack,
        f'sum by (resource) (netsched_placements_over_threshold_total{{profile="{LIVE_PROFILE}"}})',
        "resource",
        lambda v: v == {"network": 0.0, "cpu": 0.0, "memory": 0.0},
        "no placement over the threshold",
    )
    eventually(
        stack,
        f'max by (resource) (netsched_load_threshold{{profile="{LIVE_PROFILE}"}})',
        "resource",
        lambda v: v == {"network": 0.8, "cpu": 0.85, "memory": 0.85},
        "the configured thresholds",
    )
    placed = eventually(stack, "sum by (node) (netsched_placements_total)", "node", bool, "placements")
    assert set(placed) <= set(NODES), placed
    # The Rebalancer: node-d's link hot; "mover" evicted and replaced where the plan said,
    # "pinned" refused by its budget round after round; the dead profile skips every round.
    eventually(
        stack,
        f'max by (kind) (netsched_rebalancer_hot_nodes{{profile="{LIVE_PROFILE}"}})',
        "kind",
        lambda v: v.get("network") == 1.0,
        "node-d's link hot for the rebalancer",
    )
    eventually(
        stack,
        f'sum by (result) (netsched_rebalancer_evictions_total{{profile="{LIVE_PROFILE}", trigger="network"}})',
        "result",
        lambda v: v.get("evicted") == 1.0 and v.get("refused", 0) >= 2,
        "one eviction and refusals by the budget",
    )
    eventually(
        stack,
        f'sum by (on_target) (netsched_rebalancer_replacements_total{{profile="{LIVE_PROFILE}"}})',
        "on_target",
        lambda v: v == {"True": 1.0},
        "the replacement placed where the plan said",
    )
    eventually(
        stack,
        "sum by (profile, cause) (netsched_rebalancer_skipped_rounds_total)",
        "cause",
        lambda v: set(v) == {"fallback"},
        "the dead profile's rounds skipped, its source in fallback",
    )


# --- "Busiest nodes now": the table Grafana builds from three instant queries ------------------


def table_frame(stack: Stack, target: dict[str, Any], at: float) -> list[dict[str, Any]]:
    """An instant query as the table frame Grafana's Prometheus data source makes of it: per series
    a row of Time, its labels and "Value #<refId>" (the name when a panel has several queries)."""
    data = api(stack.prom, "query", query=substitute(target["expr"]), time=str(at))
    assert data["resultType"] == "vector", data
    return [
        {
            "Time": float(s["value"][0]) * 1000,
            **s["metric"],
            f"Value #{target['refId']}": float(s["value"][1]),
        }
        for s in data["result"]
    ]


def grafana_merge(frames: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Grafana's "merge" transformation (packages/grafana-data/.../transformers/merge.ts): rows are
    joined on the fields every frame has (here Time and node); a row only one query returned
    stays, with the other queries' columns empty."""
    frames = [f for f in frames if f]
    keys = sorted(set.intersection(*(set(row) for f in frames for row in f[:1])))
    merged: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    order: list[dict[str, Any]] = []
    for frame in frames:
        for row in frame:
            rows = merged.setdefault(tuple(row[k] for k in keys), [])
            match = next((r for r in rows if all(r.get(k) in (None, v) for k, v in row.items())), None)
            if match is None:
                rows.append(dict(row))
                order.append(rows[-1])
            else:
                match.update(row)
    return order


def transform(panel: dict[str, Any], frames: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The panel's transformations, then its table sort, as Grafana applies them."""
    rows: list[dict[str, Any]] | None = None
    for t in panel["transformations"]:
        if t["id"] == "merge":
            rows = grafana_merge(frames)
        elif t["id"] == "organize":
            assert rows is not None, "organize before merge"
            drop = {k for k, v in t["options"].get("excludeByName", {}).items() if v}
            names = t["options"].get("renameByName", {})
            rows = [{names.get(k, k): v for k, v in r.items() if k not in drop} for r in rows]
        else:
            raise AssertionError(f"{panel['title']}: transformation {t['id']} not modelled by this test")
    assert rows is not None
    for sort in reversed(panel["options"].get("sortBy") or []):
        rows.sort(key=lambda r: r.get(sort["displayName"]) or 0.0, reverse=bool(sort.get("desc")))
    return rows


def test_busiest_nodes_lists_the_ten_busiest_each_with_cpu_and_memory(stack: Stack) -> None:
    """With more nodes than its topk, the table holds the ten busiest by network, each with all three
    columns, busiest first; with topk on the first query only it listed every node."""
    table = panel("netsched-placement.json", "Busiest nodes now")
    topk = re.search(r"topk\((\d+),", table["targets"][0]["expr"])
    assert topk, table["targets"][0]["expr"]
    top = int(topk[1])
    assert len(NODES) > top
    for resource in ("network", "cpu", "memory"):
        eventually(
            stack,
            f"max by (node) (netsched_node_{resource}_utilisation)",
            "node",
            lambda v: set(v) == set(NODES),
            f"{resource} utilisation of every node",
        )
    at = time.time()
    rows = transform(table, [table_frame(stack, t, at) for t in table["targets"]])
    by_network = sorted(NODES, key=lambda n: max(LOAD[n]["rx"], LOAD[n]["tx"]), reverse=True)
    assert [r["node"] for r in rows] == by_network[:top], rows
    for row in rows:
        assert set(row) == {"node", "network", "cpu", "memory"}, row
        load = LOAD[row["node"]]
        assert row["network"] == pytest.approx(max(load["rx"], load["tx"]) / LINK, abs=0.02), row
        assert row["cpu"] == pytest.approx(load["cpu"], abs=0.02), row
        assert row["memory"] == pytest.approx(load["memory"], abs=0.02), row


def test_a_reload_shows_in_the_weights_thresholds_and_the_reload_panel(stack: Stack) -> None:
    """The weight and threshold gauges follow the configuration in use, not the one at start."""
    weights = f'max by (plugin) (netsched_plugin_weight{{profile="{LIVE_PROFILE}"}})'
    eventually(stack, weights, "plugin", lambda v: v.get("NetworkTraffic") == 5.0, "weight 5 at start")
    path = Path(stack.reloader.path)
    text = path.read_text()
    assert text.count("weight: 5") == 1 and text.count("cpuUtilizationPercent: 85") == 2
    path.write_text(
        text.replace("weight: 5", "weight: 7").replace(
            "cpuUtilizationPercent: 85", "cpuUtilizationPercent: 70"
        )
    )
    result = stack.reloader.check()
    assert result is not None and result.result == SUCCESS, result
    eventually(
        stack, weights, "plugin", lambda v: v.get("NetworkTraffic") == 7.0, "weight 7 after the reload"
    )
    eventually(
        stack,
        f'max by (resource) (netsched_load_threshold{{profile="{LIVE_PROFILE}"}})',
        "resource",
        lambda v: v == {"network": 0.8, "cpu": 0.7, "memory": 0.85},
        "the reloaded cpu threshold",
    )
    eventually(
        stack,
        "sum by (result) (netsched_config_reloads_total)",
        "result",
        lambda v: v.get(SUCCESS) == 1.0,
        "one successful reload",
    )
    eventually(
        stack, "count by (hash) (netsched_config_info)", "hash", lambda v: result.digest in v, "new hash"
    )
