"""The real scheduler against the fake API server over HTTP, through the official client."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netsched.app import SchedulerApp
from netsched.testing.builders import make_node, make_pod
from netsched.testing.cli import killed_if_left, sigterm, start_netsched
from netsched.testing.configs import NETSCHED_PROFILE_FAST_BACKOFF
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

CONFIG = NETSCHED_PROFILE_FAST_BACKOFF


@pytest.fixture
def app(scheduler_app: Callable[..., SchedulerApp]) -> SchedulerApp:
    return scheduler_app(CONFIG)


def start(app: SchedulerApp) -> None:
    assert app.start_informers(sync_timeout=10)
    app.start_background()
    app.start_scheduling()


def pod_node(server: FakeAPIServer, name: str, ns: str = "default") -> str:
    return str(server.get("pods", name, ns)["spec"].get("nodeName") or "")


def events_for(server: FakeAPIServer, pod: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in server.list("events.k8s.io/events", None)
        if e.get("regarding", {}).get("name") == pod and e.get("reason") == reason
    ]


def test_binds_own_pods_only_and_reports_scheduled(server: FakeAPIServer, app: SchedulerApp) -> None:
    for i in range(3):
        server.create("nodes", make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj())
    server.create("pods", make_pod("mine").scheduler("netsched").req(cpu="500m").obj())
    server.create("pods", make_pod("theirs").req(cpu="500m").obj())  # default-scheduler
    start(app)
    node = wait_until(lambda: pod_node(server, "mine"), what="pod bound")
    assert node in {"n0", "n1", "n2"}
    ev = wait_until(lambda: events_for(server, "mine", "Scheduled"), what="Scheduled event")
    assert ev[0]["note"] == f"Successfully assigned default/mine to {node}"
    assert ev[0]["reportingController"] == "netsched"
    time.sleep(0.3)
    assert pod_node(server, "theirs") == ""
    assert app.cache.assumed_count() == 0 or wait_until(lambda: app.cache.assumed_count() == 0)


def test_requests_are_accounted_across_a_burst(server: FakeAPIServer, app: SchedulerApp) -> None:
    for i in range(2):
        server.create("nodes", make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj())
    for i in range(9):
        server.create("pods", make_pod(f"p{i}").scheduler("netsched").req(cpu="1").obj())
    start(app)
    wait_until(lambda: sum(1 for i in range(9) if pod_node(server, f"p{i}")) == 8, what="8 pods bound")
    per_node: dict[str, int] = {}
    for i in range(9):
        n = pod_node(server, f"p{i}")
        if n:
            per_node[n] = per_node.get(n, 0) + 1
    assert per_node == {"n0": 4, "n1": 4}
    pending = next(f"p{i}" for i in range(9) if not pod_node(server, f"p{i}"))
    ev = wait_until(lambda: events_for(server, pending, "FailedScheduling"), what="FailedScheduling")
    assert ev[-1]["note"].startswith("0/2 nodes are available: 2 Insufficient cpu.")


def test_unschedulable_condition_then_node_add_schedules(server: FakeAPIServer, app: SchedulerApp) -> None:
    server.create("nodes", make_node("small").capacity(cpu="2").obj())
    server.create("nodes", make_node("cordoned").capacity(cpu="64").unschedulable().obj())
    server.create("pods", make_pod("big").scheduler("netsched").req(cpu="8").obj())
    start(app)
    ev = wait_until(lambda: events_for(server, "big", "FailedScheduling"), what="FailedScheduling")
    assert ev[0]["type"] == "Warning"
    # kube's aggregated text: counts sorted as strings, ". preemption: ..." appended.
    assert ev[0]["note"].startswith(
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. preemption: "
    ), ev[0]["note"]

    def condition() -> dict[str, Any] | None:
        for c in server.get("pods", "big").get("status", {}).get("conditions", []):
            if c["type"] == "PodScheduled":
                return c  # type: ignore[no-any-return]
        return None

    cond = wait_until(condition, what="PodScheduled condition")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    server.create("nodes", make_node("large").capacity(cpu="16").obj())
    assert wait_until(lambda: pod_node(server, "big"), what="pod bound after NodeAdd") == "large"


def test_malformed_pod_gets_event_and_loop_goes_on(server: FakeAPIServer, app: SchedulerApp) -> None:
    server.create("nodes", make_node("n0").obj())
    bad = make_pod("bad").scheduler("netsched").obj()
    bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    server.create("pods", bad)
    bad_tol = make_pod("badtol").scheduler("netsched").obj()
    bad_tol["spec"]["tolerations"] = [{"key": "k", "operator": "Sometimes"}]
    server.create("pods", bad_tol)
    server.create("pods", make_pod("good").scheduler("netsched").obj())
    start(app)
    assert wait_until(lambda: pod_node(server, "good"), what="good pod bound") == "n0"
    ev = wait_until(lambda: events_for(server, "bad", "FailedScheduling"), what="event on malformed pod")
    assert "spec.containers[0].resources.requests.cpu" in ev[0]["note"]
    ev2 = wait_until(lambda: events_for(server, "badtol", "FailedScheduling"), what="event on bad toleration")
    assert "spec.tolerations[0].operator" in ev2[0]["note"] and "Sometimes" in ev2[0]["note"]
    assert pod_node(server, "bad") == "" and pod_node(server, "badtol") == ""


def test_bind_failure_unreserves_and_retries(server: FakeAPIServer, app: SchedulerApp) -> None:
    server.create("nodes", make_node("n0").capacity(cpu="1").obj())
    # More failures than the client's retries: the binding cycle fails and the pod is requeued.
    fault = server.inject_fault("POST", r"/pods/flaky/binding", status=500, count=20)
    server.create("pods", make_pod("flaky").scheduler("netsched").req(cpu="1").obj())
    start(app)
    wait_until(lambda: fault.hits >= 1, what="binding attempted")
    wait_until(
        lambda: app.metrics.bind_errors.labels("bind", "netsched")._value.get() >= 1,
        what="bind error counted",
    )
    server.clear_faults()
    # The forgotten reservation must not block the node: the retry binds to the same 1-cpu node.
    assert wait_until(lambda: pod_node(server, "flaky"), timeout=15, what="bound after retry") == "n0"


def test_deleted_pending_pod_leaves_queue_and_bound_pods_never_queue(
    server: FakeAPIServer, app: SchedulerApp
) -> None:
    server.create("nodes", make_node("n0").capacity(cpu="1").obj())
    server.create("pods", make_pod("running").node("n0").scheduler("netsched").req(cpu="1").obj())
    server.create("pods", make_pod("waiting").scheduler("netsched").req(cpu="1").obj())
    start(app)
    wait_until(lambda: events_for(server, "waiting", "FailedScheduling"), what="waiting pod unschedulable")
    assert "running" not in [p.name for ps in app.queue.pending_pods().values() for p in ps]
    server.delete("pods", "waiting")
    wait_until(lambda: sum(app.queue.counts().values()) == 0, what="queue empty after delete")


def test_relist_after_compaction_keeps_scheduling(server: FakeAPIServer, app: SchedulerApp) -> None:
    server.create("nodes", make_node("n0").obj())
    start(app)
    server.compact()
    # Force the watches to reconnect: they will get 410 and relist.
    server.inject_fault("GET", r"watch=", reset=True, count=2)
    server.create("pods", make_pod("after").scheduler("netsched").obj())
    assert wait_until(lambda: pod_node(server, "after"), timeout=15, what="bound after relist") == "n0"


def test_cli_sigterm_exits_zero(server: FakeAPIServer, kubeconfig: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    server.create("nodes", make_node("n0").obj())
    server.create("pods", make_pod("cli").scheduler("netsched").obj())
    with killed_if_left(start_netsched(cfg, kubeconfig, "-v", "2")) as proc:
        wait_until(lambda: pod_node(server, "cli"), timeout=30, what="CLI scheduler bound the pod")
        out = sigterm(proc, 20)
    assert proc.returncode == 0, out
    assert "Successfully bound pod to node" in out and "Stopped" in out


def test_cli_bad_config_lists_every_problem(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 0
profiles:
- schedulerName: netsched
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
      - name: Foo
"""
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    res = subprocess.run(
        [sys.executable, "-m", "netsched.cli", "--config", str(cfg)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1
    assert 'profiles[0].plugins.score.enabled[1].name: Unsupported value: "Foo"' in res.stderr
    assert "parallelism: Invalid value: 0" in res.stderr


def test_dry_run_shadows_another_scheduler_and_writes_nothing(
    server: FakeAPIServer, scheduler_app: Callable[..., SchedulerApp]
) -> None:
    server.create("nodes", make_node("small").capacity(cpu="2").obj())
    server.create("nodes", make_node("large").capacity(cpu="16").obj())
    server.create("pods", make_pod("theirs").req(cpu="1").obj())  # default-scheduler
    server.create("pods", make_pod("ours").scheduler("netsched").obj())
    app = scheduler_app(CONFIG, dry_run=True)
    try:
        start(app)
        wait_until(lambda: app.shadow.predictions, what="shadow prediction")
        predicted = app.shadow.predictions[server.get("pods", "theirs")["metadata"]["uid"]]
        assert predicted == "large"  # LeastAllocated: the emptier node
        time.sleep(0.3)
        assert pod_node(server, "theirs") == "" and pod_node(server, "ours") == ""
        assert server.list("events.k8s.io/events", None) == []
        writes = [r for r in server.requests if r.verb in ("create", "update", "patch", "delete")]
        assert writes == []
        # The "real" scheduler binds it elsewhere: the comparison is counted.
        server.bind("default", "theirs", "small")
        wait_until(lambda: app.shadow.disagreed == 1, what="shadow comparison")
        assert app.metrics.shadow_placements.labels("netsched", "false")._value.get() == 1
    finally:
        app.shutdown(timeout=5)


def test_explain_annotation_is_opt_in(
    server: FakeAPIServer, scheduler_app: Callable[..., SchedulerApp]
) -> None:
    import json

    server.create("nodes", make_node("n0").obj())
    server.create("nodes", make_node("n1").obj())
    server.create("pods", make_pod("explained").scheduler("netsched").req(cpu="1").obj())
    app = scheduler_app(CONFIG, explain_annotations=True)
    try:
        start(app)
        node = wait_until(lambda: pod_node(server, "explained"), what="bound")

        def annotation() -> str:
            return str(
                server.get("pods", "explained")["metadata"]
                .get("annotations", {})
                .get("netsched.io/explain", "")
            )

        doc = json.loads(wait_until(annotation, what="explain annotation"))
        assert doc["winner"] == node and {t["node"] for t in doc["top"]} == {"n0", "n1"}
        assert "NodeResourcesFit" in doc["top"][0]["scores"]
    finally:
        app.shutdown(timeout=5)


def test_endpoints_readyz_metrics_and_debug_explain(
    server: FakeAPIServer, scheduler_app: Callable[..., SchedulerApp]
) -> None:
    import json
    import socket
    import urllib.request

    from netsched.serve import start_server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server.create("nodes", make_node("n0").capacity(cpu="2").obj())
    server.create("pods", make_pod("fits").scheduler("netsched").req(cpu="1").obj())
    server.create("pods", make_pod("huge").scheduler("netsched").req(cpu="64").obj())
    app = scheduler_app(CONFIG, metrics_bind_address=f"127.0.0.1:{port}")
    http = start_server(app)
    base = f"http://127.0.0.1:{port}"

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    try:
        assert get("/readyz")[0] == 503  # caches not synced yet
        start(app)
        wait_until(lambda: pod_node(server, "fits"), what="bound")
        code, body = get("/readyz")
        assert code == 200 and "leader" in body
        code, body = get("/metrics")
        assert (
            code == 200 and 'scheduler_schedule_attempts_total{profile="netsched",result="scheduled"}' in body
        )
        assert "scheduler_pending_pods" in body
        code, body = get("/debug/explain?pod=default/huge")
        doc = json.loads(body)
        assert (
            code == 200
            and doc["winner"] == ""
            and doc["nodes"][0]["filters"]["NodeResourcesFit"] == "Insufficient cpu"
        )
        code, body = get("/debug/explain?pod=default/fits&format=text")
        assert code == 200 and "n0 *" in body
        assert get("/debug/explain?pod=default/nope")[0] == 404
        assert get("/debug/explain")[0] == 400
    finally:
        http.stop()
        app.shutdown(timeout=5)


def test_two_profiles_share_one_queue_and_report_as_themselves(
    server: FakeAPIServer, scheduler_app: Callable[..., SchedulerApp]
) -> None:
    config = (
        CONFIG
        + """- schedulerName: netsched-packer
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""
    )
    app = scheduler_app(config)
    server.create("nodes", make_node("n0").capacity(cpu="8").obj())
    server.create("nodes", make_node("n1").capacity(cpu="8").obj())
    server.create("pods", make_pod("seed").node("n1").req(cpu="4").obj())
    server.create("pods", make_pod("spread").scheduler("netsched").req(cpu="1").obj())
    server.create("pods", make_pod("packed").scheduler("netsched-packer").req(cpu="1").obj())
    try:
        start(app)
        # LeastAllocated prefers the empty node, MostAllocated the half-full one.
        assert wait_until(lambda: pod_node(server, "spread"), what="spread bound") == "n0"
        assert wait_until(lambda: pod_node(server, "packed"), what="packed bound") == "n1"
        by = {
            e["regarding"]["name"]: e["reportingController"]
            for e in wait_until(
                lambda: (
                    len(server.list("events.k8s.io/events", None)) >= 2
                    and server.list("events.k8s.io/events", None)
                )
            )
        }
        assert by == {"spread": "netsched", "packed": "netsched-packer"}
    finally:
        app.shutdown(timeout=5)
