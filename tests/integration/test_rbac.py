"""deploy/'s RBAC grants exactly the API calls the scheduler makes.

The scheduler runs against the fake API server through a scenario that
exercises every path that talks to the API (list/watch, binding, events and
their series, status patches, preemption, PDBs, leader election, the core/v1
events fallback) while the server records each request as an RBAC
(group, resource, verb).  The recorded set must be granted, and every grant
must be used, except a short list of rare paths named below with the code
that needs them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netsched.app import AppOptions, SchedulerApp, _start_election, build_registry
from netsched.config import load_config
from netsched.kube import KubeAPI, build_api_client
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.rbac import request_rule, rules_from_deploy
from netsched.testing.volumes import FakePVController, pv, pvc, storage_class
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 3s
  renewDeadline: 2s
  retryPeriod: 500ms
  resourceName: netsched
  resourceNamespace: netsched-system
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
profiles:
- schedulerName: netsched
"""

# Granted but not reached by this scenario, each with the code path that needs it.
RARE_PATHS = {
    ("", "pods", "get"): "KubeAPI.bind re-reads the pod when a retried binding gets 409 after a lost reply",
}


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(watch_timeout=5.0, bookmark_interval=0.5) as srv:
        yield srv


def test_recorded_calls_equal_deploy_rbac(server: FakeAPIServer, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    server.create("nodes", make_node("n0").capacity(cpu="2").obj())
    server.create("nodes", make_node("n1").capacity(cpu="2").obj())
    server.create(
        "policy/poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "low", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"tier": "low"}}, "maxUnavailable": 1},
            "status": {"disruptionsAllowed": 1},
        },
    )
    registry = build_registry()
    cfg = load_config(CONFIG, registry)
    client = build_api_client(str(kubeconfig), qps=500, burst=1000, pool_size=24)
    app = SchedulerApp(
        cfg,
        registry,
        KubeAPI(client),
        options=AppOptions(metrics_bind_address="127.0.0.1:0", watch_timeout=5),
    )
    stop = threading.Event()
    elector = None
    try:
        assert app.start_informers(sync_timeout=10)
        app.start_background()
        elector = _start_election(app, stop)  # leases: get, create, update
        wait_until(lambda: app.leading, what="leadership")

        def node_of(name: str) -> str:
            return str(server.get("pods", name)["spec"].get("nodeName") or "")

        # Binding + Scheduled events.
        for i in range(2):
            server.create(
                "pods", make_pod(f"low-{i}").scheduler("netsched").label("tier", "low").req(cpu="2").obj()
            )
        wait_until(lambda: node_of("low-0") and node_of("low-1"), what="low pods bound")
        # Unschedulable: status patch + FailedScheduling, then a repeat (series patch) after a node update.
        server.create("pods", make_pod("big").scheduler("netsched").req(cpu="3").obj())
        wait_until(lambda: _events(server, "big", "FailedScheduling"), what="FailedScheduling")
        node = server.get("nodes", "n0")
        node["metadata"]["labels"]["touched"] = "1"
        server.update("nodes", node)
        wait_until(
            lambda: any(r.verb == "patch" and r.api_group == "events.k8s.io" for r in server.requests),
            what="event series patch",
        )
        # Preemption: deletes a low-priority victim, then the preemptor binds.
        server.create("pods", make_pod("vip").scheduler("netsched").priority(1000).req(cpu="2").obj())
        wait_until(lambda: node_of("vip"), timeout=20, what="preemptor bound")
        # core/v1 events fallback when events.k8s.io is not served.
        server.inject_fault("*", r"/apis/events\.k8s\.io/", status=404, count=-1)
        server.create("pods", make_pod("late").scheduler("netsched").req(cpu="100").obj())
        wait_until(
            lambda: any(
                r.api_group == "" and r.resource == "events" and r.verb == "create" for r in server.requests
            ),
            what="core event",
        )
        node = server.get("nodes", "n1")
        node["metadata"]["labels"]["touched"] = "2"
        server.update("nodes", node)
        wait_until(
            lambda: any(
                r.api_group == "" and r.resource == "events" and r.verb == "patch" for r in server.requests
            ),
            what="core event series patch",
        )
        # Volumes: PreBind patches a static PV's claimRef and a claim's selected-node.
        server.create("storage.k8s.io/storageclasses", storage_class("fast"))
        server.create(
            "storage.k8s.io/storageclasses",
            storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        )
        server.create("persistentvolumes", pv("disk", storage_class="local"))
        server.create("persistentvolumeclaims", pvc("static", storage_class="local"))
        server.create("persistentvolumeclaims", pvc("dynamic", storage_class="fast"))
        with FakePVController(server):
            for claim in ("static", "dynamic"):
                server.create("pods", make_pod(f"uses-{claim}").scheduler("netsched").pvc(claim).obj())
            wait_until(
                lambda: node_of("uses-static") and node_of("uses-dynamic"),
                timeout=20,
                what="volume pods bound",
            )
        # Let a renewal happen.
        time.sleep(1.2)
    finally:
        stop.set()
        if elector is not None:
            elector.stop(release=True)
        app.shutdown(timeout=5)

    recorded = {request_rule(r) for r in server.requests}
    granted = rules_from_deploy(DEPLOY)
    assert recorded - granted == set(), f"calls made but not granted by deploy/: {sorted(recorded - granted)}"
    unused = granted - recorded - set(RARE_PATHS)
    assert unused == set(), f"granted by deploy/ but never used: {sorted(unused)}"
    assert {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")} <= recorded


def _events(server: FakeAPIServer, pod: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in server.list("events.k8s.io/events", None)
        if e.get("regarding", {}).get("name") == pod and e.get("reason") == reason
    ]
