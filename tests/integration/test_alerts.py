"""deploy/optional/alerts: the PrometheusRule's groups pass promtool, each alert's unit test
passes `promtool test rules`, and two fire on a real Prometheus scraping a real netsched.

The real case: a scheduler whose load plugins point at a Prometheus that does not answer,
with stalePolicy failClosed, and a pod to place. Metrics fall back (netsched_metrics_fallback
1) and LoadThreshold rejects every node (scheduler_unschedulable_pods{plugin="LoadThreshold"}),
so NetschedMetricsFallback and NetschedPodsPendingOnLoadThreshold fire. Their `for:` is
shortened to 1s there (promtool's tests check the real durations).

Without /usr/bin/prometheus and promtool these tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from netsched.app import SchedulerApp
from netsched.serve import endpoints_server
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE_FAST_BACKOFF
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.prometheus import PrometheusServer, free_port, require_prometheus

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RULE = ROOT / "deploy" / "optional" / "alerts" / "prometheusrule.yaml"
ALERTS = {
    "NetschedNoLeader",
    "NetschedMetricsFallback",
    "NetschedNodesWithoutSeries",
    "NetschedPodsPendingOnLoadThreshold",
    "NetschedEventsDropped",
}


def promtool() -> str:
    exe = require_prometheus()  # skips (or fails in CI) without the distribution's package
    return str(Path(exe).with_name("promtool"))


def rule_groups() -> dict[str, Any]:
    manifest = yaml.safe_load(RULE.read_text())
    assert manifest["apiVersion"] == "monitoring.coreos.com/v1" and manifest["kind"] == "PrometheusRule"
    return {"groups": manifest["spec"]["groups"]}


def rules() -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in rule_groups()["groups"] for r in g["rules"]}


def write_groups(path: Path, groups: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(groups, sort_keys=False))
    return path


def test_the_rule_set_is_the_documented_one() -> None:
    found = rules()
    assert set(found) == ALERTS
    readme = (ROOT / "deploy" / "README.md").read_text()
    for name, rule in found.items():
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        assert f"`{name}`" in readme, f"{name} is not in deploy/README.md's alert table"


def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    path = write_groups(tmp_path / "netsched.rules.yaml", rule_groups())
    r = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(ALERTS)} rules found" in r.stdout


_TEMPLATE = re.compile(r"\{\{ \$(labels\.(\w+)|value) \}\}")


def rendered(alert: str, labels: dict[str, str], value: str) -> dict[str, str]:
    """The rule's annotations as Prometheus renders them for one alert (the templates used here)."""

    def sub(m: re.Match[str]) -> str:
        return value if m.group(1) == "value" else labels[m.group(2)]

    return {k: _TEMPLATE.sub(sub, v) for k, v in rules()[alert]["annotations"].items()}


def case(alert: str, series: dict[str, str], at: str, labels: dict[str, str] | None, value: str = "") -> Any:
    """One promtool test group: `series` (selector -> values), and the alert at `at`: firing with
    `labels` (plus its severity), or not firing (labels None)."""
    expected = []
    if labels is not None:
        severity = rules()[alert]["labels"]["severity"]
        expected = [
            {
                "exp_labels": {**labels, "severity": severity},
                "exp_annotations": rendered(alert, labels, value),
            }
        ]
    return {
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}],
    }


FALLBACK = 'netsched_metrics_fallback{source="http://prometheus:9090"}'
WITHOUT = 'netsched_metrics_nodes_without_series{source="http://prometheus:9090", metric="cpu"}'
THRESHOLD = 'scheduler_unschedulable_pods{plugin="LoadThreshold", profile="netsched"}'
FIT = 'scheduler_unschedulable_pods{plugin="NodeResourcesFit", profile="netsched"}'
DROPPED = 'netsched_events_dropped_total{reason="full"}'
SOURCE = {"source": "http://prometheus:9090"}

UNIT_CASES = [
    # A replica that leads, then none: the alert waits its minute.
    case("NetschedNoLeader", {"netsched_leader": "1 1 0 0 0"}, "2m", None),
    case("NetschedNoLeader", {"netsched_leader": "1 1 0 0 0"}, "3m", {}),
    # Nobody reports at all (netsched down): no leader either.
    case("NetschedNoLeader", {"netsched_pending": "1x5"}, "2m", {}),
    case(
        "NetschedNoLeader",
        {'netsched_leader{instance="a"}': "0x5", 'netsched_leader{instance="b"}': "1x5"},
        "3m",
        None,
    ),
    case("NetschedMetricsFallback", {FALLBACK: "1x10"}, "4m", None),
    case("NetschedMetricsFallback", {FALLBACK: "1x10"}, "6m", SOURCE),
    case("NetschedMetricsFallback", {FALLBACK: "0x10"}, "8m", None),
    case("NetschedNodesWithoutSeries", {WITHOUT: "2x20"}, "14m", None),
    case("NetschedNodesWithoutSeries", {WITHOUT: "2x20"}, "16m", {**SOURCE, "metric": "cpu"}, "2"),
    case(
        "NetschedPodsPendingOnLoadThreshold",
        {THRESHOLD: "3x15", FIT: "5x15"},
        "11m",
        {"profile": "netsched"},
        "3",
    ),
    case("NetschedPodsPendingOnLoadThreshold", {FIT: "5x15"}, "11m", None),
    case("NetschedEventsDropped", {DROPPED: "0 0 0 0"}, "3m", None),
    case("NetschedEventsDropped", {DROPPED: "0 0 0 5 5 5"}, "4m", {"reason": "full"}),
]


def test_promtool_unit_tests_of_every_alert(tmp_path: Path) -> None:
    write_groups(tmp_path / "netsched.rules.yaml", rule_groups())
    tested = {t["alert_rule_test"][0]["alertname"] for t in UNIT_CASES}
    assert tested == ALERTS
    tests = {"rule_files": ["netsched.rules.yaml"], "evaluation_interval": "1m", "tests": UNIT_CASES}
    (tmp_path / "netsched.test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    r = subprocess.run(
        [promtool(), "test", "rules", "netsched.test.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout


CONFIG = (
    NETSCHED_PROFILE_FAST_BACKOFF
    + """\
  plugins:
    multiPoint:
      enabled:
      - name: LoadThreshold
  pluginConfig:
  - name: LoadThreshold
    args:
      prometheus:
        prometheusAddress: {dead_url}
        pollIntervalSeconds: 1
        timeoutSeconds: 0.5
        stalePolicy: failClosed
"""
)


def firing(prom: PrometheusServer) -> dict[str, list[dict[str, str]]]:
    with urllib.request.urlopen(f"{prom.url}/api/v1/alerts", timeout=5) as resp:
        data = json.loads(resp.read())
    out: dict[str, list[dict[str, str]]] = {}
    for a in data["data"]["alerts"]:
        if a["state"] == "firing":
            out.setdefault(a["labels"]["alertname"], []).append(a["labels"])
    return out


def test_alerts_fire_on_a_real_prometheus_scraping_netsched(
    server: FakeAPIServer, scheduler_app: Callable[..., SchedulerApp], tmp_path: Path
) -> None:
    exe = require_prometheus()
    groups = rule_groups()
    for rule in groups["groups"][0]["rules"]:
        if "for" in rule:
            rule["for"] = "1s"
    rule_file = write_groups(tmp_path / "netsched.rules.yaml", groups)
    server.create("nodes", make_node("n1").capacity(cpu="4", memory="8Gi").obj())
    # /metrics on a port the server binds itself (127.0.0.1:0): a port picked first and bound
    # later can be taken in between on a busy machine.
    app = scheduler_app(CONFIG.format(dead_url=f"http://127.0.0.1:{free_port()}"))
    metrics_server = endpoints_server(app, "127.0.0.1", 0, None)  # as start_server, on a bound port
    metrics_server.start()
    prom = PrometheusServer(
        [f"127.0.0.1:{metrics_server.port}"], binary=exe, workdir=tmp_path, rule_files=[rule_file]
    )
    try:
        assert app.start_informers(sync_timeout=10)
        app.start_background()
        app.start_scheduling()
        server.create("pods", make_pod("web").scheduler("netsched").req(cpu="100m").obj())
        prom.start()
        want = {"NetschedMetricsFallback", "NetschedPodsPendingOnLoadThreshold"}
        prom.wait_for(
            'ALERTS{alertstate="firing"}', lambda r: want <= {s["metric"]["alertname"] for s in r}, timeout=60
        )
        got = firing(prom)
        assert want <= set(got), f"firing: {got}\n{prom.log_tail()}"
        assert got["NetschedPodsPendingOnLoadThreshold"][0]["profile"] == "netsched"
        assert "127.0.0.1" in got["NetschedMetricsFallback"][0]["source"]
    finally:
        prom.close()
        app.shutdown(timeout=5)
        metrics_server.stop()
