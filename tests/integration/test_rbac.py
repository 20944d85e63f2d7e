"""deploy/'s RBAC grants exactly the API calls the scheduler makes.

The scheduler runs against the fake API server through a scenario that
exercises every path that talks to the API (list/watch, binding, events and
their series, status patches, preemption, PDBs, leader election, the core/v1
events fallback, gang scheduling: PodGroups listed and watched, their status
patched, events about them, and an eviction) while the server records each request as an RBAC
(group, resource, verb).  The recorded set must be granted by deploy/ plus the
optional Coscheduling component, and every grant must be used, except a short
list of rare paths named below with the code that needs them.  Without the
PodGroup calls, deploy/ alone must match (PodGroups are watched only when a
profile enables Coscheduling).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.framework import EvictionResult
from netsched.framework.parse import parse_pod
from netsched.kube import KubeAPI, build_api_client
from netsched.serve import start_election, start_secure_server
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import COSCHEDULING_PLUGINS
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.rbac import request_rule, rules_from_deploy
from netsched.testing.serving import delegating_serving
from netsched.testing.volumes import FakePVController, pv, pvc, storage_class
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
COSCHEDULING = DEPLOY / "optional" / "coscheduling"

CONFIG = (
    """
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
    + COSCHEDULING_PLUGINS
    + """\
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
"""
)

# Granted but not reached by this scenario, each with the code path that needs it.
RARE_PATHS = {
    ("", "pods", "get"): "KubeAPI.bind re-reads the pod when a retried binding gets 409 after a lost reply",
}


def test_recorded_calls_equal_deploy_rbac(server: FakeAPIServer, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    server.create("nodes", make_node("n0").capacity(cpu="2").obj())
    server.create("nodes", make_node("n1").capacity(cpu="2").obj())
    server.create_crd("scheduling.x-k8s.io/podgroups")  # deploy/optional/coscheduling's CRD
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
    api = KubeAPI(client)
    app = SchedulerApp(
        cfg,
        registry,
        api,
        options=AppOptions(
            watch_timeout=5,
            secure=delegating_serving(kubeconfig, tmp_path / "certs"),
        ),
    )
    stop = threading.Event()
    elector = None
    https = start_secure_server(app)
    try:
        # A Prometheus scrape over HTTPS: tokenreviews + subjectaccessreviews create.
        server.add_token("t", "prometheus")
        server.allow("prometheus", "/metrics")
        assert https is not None and _scrape(https.port, "t") == 200
        assert app.start_informers(sync_timeout=10)
        app.start_background()
        elector = start_election(app, stop)  # leases: get, create, update
        wait_until(lambda: app.leading, what="leadership")

        def node_of(name: str) -> str:
            return str(server.get("pods", name)["spec"].get("nodeName") or "")

        # Binding + Scheduled events.
        for i in range(2):
            server.create(
                "pods", make_pod(f"low-{i}").scheduler("netsched").label("tier", "low").req(cpu="2").obj()
            )
        wait_until(lambda: node_of("low-0") and node_of("low-1"), what="low pods bound")
        # Unschedulable: status patch + FailedScheduling, then a repeat (series patch) after an event
        # NodeResourcesFit's queueing hint lets through (an assigned pod leaving; a node label change
        # would not). The pod comes back so that preemption below has its victim.
        server.create("pods", make_pod("big").scheduler("netsched").req(cpu="3").obj())
        wait_until(lambda: _events(server, "big", "FailedScheduling"), what="FailedScheduling")
        server.delete("pods", "low-0")
        wait_until(
            lambda: any(r.verb == "patch" and r.api_group == "events.k8s.io" for r in server.requests),
            what="event series patch",
        )
        server.create("pods", make_pod("low-0").scheduler("netsched").label("tier", "low").req(cpu="2").obj())
        wait_until(lambda: node_of("low-0"), what="low-0 bound again")
        # Gang scheduling: PodGroups listed/watched, status patched, events about the PodGroup.
        server.create(
            "scheduling.x-k8s.io/podgroups",
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "gang", "namespace": "default"},
                "spec": {"minMember": 2, "scheduleTimeoutSeconds": 1},
            },
        )
        server.create(
            "pods",
            make_pod("gang-0").scheduler("netsched").label("scheduling.x-k8s.io/pod-group", "gang").obj(),
        )
        server.create(
            "pods",
            make_pod("gang-1")
            .scheduler("netsched")
            .label("scheduling.x-k8s.io/pod-group", "gang")
            .gate("g")
            .obj(),
        )
        wait_until(
            lambda: any(e.get("reason") == "GangReleased" for e in server.list("events.k8s.io/events", None)),
            what="gang released after its timeout",
        )
        wait_until(
            lambda: any(r.resource == "podgroups" and r.subresource == "status" for r in server.requests),
            what="PodGroup status patch",
        )
        server.delete("pods", "gang-0")
        server.delete("pods", "gang-1")
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
        server.delete("pods", "vip")  # an assigned pod leaving: NodeResourcesFit's hint retries "late"
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
        # An eviction (create on pods/eviction), through the app's own KubeAPI.evict: called
        # here until the rebalancer, its production caller, runs in this scenario.
        evicted = api.evict(parse_pod(server.get("pods", "uses-static")))
        assert evicted.result is EvictionResult.EVICTED
        # Let a renewal happen.
        time.sleep(1.2)
    finally:
        stop.set()
        if https is not None:
            https.stop()
        if elector is not None:
            elector.stop(release=True)
        app.shutdown(timeout=5)

    recorded = {request_rule(r) for r in server.requests}
    granted = rules_from_deploy(DEPLOY, COSCHEDULING)
    missing = recorded - granted
    assert missing == set(), f"calls made but not granted by deploy/ + coscheduling: {sorted(missing)}"
    unused = granted - recorded - set(RARE_PATHS)
    assert unused == set(), f"granted by deploy/ + coscheduling but never used: {sorted(unused)}"
    # The base deploy/ alone covers everything but the PodGroup calls, and nothing more.
    podgroup_calls = {r for r in recorded if r[0] == "scheduling.x-k8s.io"}
    assert podgroup_calls == {
        ("scheduling.x-k8s.io", "podgroups", "list"),
        ("scheduling.x-k8s.io", "podgroups", "watch"),
        ("scheduling.x-k8s.io", "podgroups/status", "patch"),
    }
    base = rules_from_deploy(DEPLOY)
    assert recorded - podgroup_calls - base == set()
    assert base - (recorded - podgroup_calls) - set(RARE_PATHS) == set()
    assert {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")} <= recorded


def _scrape(port: int, token: str) -> int:
    import http.client
    import ssl

    conn = http.client.HTTPSConnection(
        "127.0.0.1", port, context=ssl._create_unverified_context(), timeout=10
    )
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
        return conn.getresponse().status
    finally:
        conn.close()


def _events(server: FakeAPIServer, pod: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in server.list("events.k8s.io/events", None)
        if e.get("regarding", {}).get("name") == pod and e.get("reason") == reason
    ]
