"""deploy/'s RBAC grants exactly the API calls the scheduler makes.

The scheduler runs against the fake API server through a scenario that
exercises every path that talks to the API (list/watch, binding, events and
their series, status patches, preemption, PDBs, leader election, the core/v1
events fallback, gang scheduling: PodGroups listed and watched, their status
patched, events about them, and the Rebalancer: its state ConfigMap read and patched, a pod
evicted) while the server records each request as an RBAC
(group, resource, verb).  The recorded set must be granted by deploy/ plus the
optional Coscheduling component, and every grant must be used, except a short
list of rare paths named below with the code that needs them.  Without the
PodGroup calls, deploy/ alone must match (PodGroups are watched only when a
profile enables Coscheduling).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.kube import KubeAPI, KubeClient, build_api_client
from netsched.metrics.estimation import EGRESS_BANDWIDTH
from netsched.plugins.rebalancer import Rebalancer
from netsched.plugins.rebalancer.state import KEY, State, Store
from netsched.serve import start_election, start_secure_server
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.framework import plugin_of
from netsched.testing.kubectl import apply as kubectl_apply
from netsched.testing.kubectl import create_token
from netsched.testing.kustomize import find_object, load_kustomization
from netsched.testing.prometheus import FakePrometheus, FakePrometheusServer
from netsched.testing.rbac import request_rule, rules_from_deploy
from netsched.testing.rebalancing import (
    REBALANCING_PLUGINS,
    NodeReadings,
    rebalancing_config,
    rebalancing_plugin_config,
)
from netsched.testing.serving import delegating_serving
from netsched.testing.volumes import FakePVController, pv, pvc, storage_class
from netsched.testing.wait import wait_until
from netsched.testing.workloads import FakeKubelet, FakeReplicaSetController, replica_set, running_on

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
COSCHEDULING = DEPLOY / "optional" / "coscheduling"
STATE = "netsched-rebalancer"  # the rebalancer's state ConfigMap, as deploy/ ships it

# Gangs (Coscheduling, also the queue sort) and the rebalancing plugins, whose metric sources
# poll a fake Prometheus at {url}: the Rebalancer acts (dryRun false) on hot links, one round
# a second, a node hot after two.
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
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
{plugins}    queueSort:
      enabled: [{{name: Coscheduling}}]
      disabled: [{{name: "*"}}]
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
{plugin_config}"""


def config(url: str) -> str:
    plugin_config = rebalancing_plugin_config(url, intervalSeconds=1, consecutiveRounds=2)
    return CONFIG.format(plugins=REBALANCING_PLUGINS, plugin_config=plugin_config)


# Granted but not reached by this scenario, each with the code path that needs it.
RARE_PATHS = {
    ("", "pods", "get"): "KubeAPI.bind re-reads the pod when a retried binding gets 409 after a lost reply",
}


def test_recorded_calls_equal_deploy_rbac(server: FakeAPIServer, tmp_path: Path) -> None:
    prometheus = FakePrometheusServer(FakePrometheus())
    with prometheus:
        _scenario(server, tmp_path, prometheus)


def _scenario(server: FakeAPIServer, tmp_path: Path, prometheus: FakePrometheusServer) -> None:
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
    # deploy/'s state ConfigMap, which the rebalancer reads as it starts leading and patches.
    server.create("configmaps", find_object(DEPLOY, "ConfigMap", STATE))
    registry = build_registry()
    cfg = load_config(config(prometheus.url), registry)
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
    rebalancer = plugin_of(app.frameworks["netsched"], Rebalancer)
    readings = NodeReadings(prometheus.fake, rebalancer.source, ["n0", "n1"])
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
        # The rebalancer: a pod of a ReplicaSet sending 200 Mbit/s, its node's link turns hot,
        # and the pod is evicted (pods/eviction create) and the cooldowns written (configmaps
        # patch; the get was its first round as leader).
        template = make_pod("t").scheduler("netsched").annotation(EGRESS_BANDWIDTH, "200M").obj()
        with FakeReplicaSetController(server), FakeKubelet(server):
            server.create("apps/replicasets", replica_set("web", template))
            pod = wait_until(lambda: _running(server, "web"), what="the ReplicaSet's pod running")
            readings.set({pod["spec"]["nodeName"]: 0.95})
            wait_until(
                lambda: any(r.resource == "configmaps" and r.verb == "patch" for r in server.requests),
                what="the rebalancer's eviction and its state written",
            )
        assert [m["result"] for r in rebalancer.reports for m in r.moves] == ["evicted"]
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


def _running(server: FakeAPIServer, app: str) -> dict[str, Any] | None:
    """A Running pod of the ReplicaSet `app` (the kit's label), if any."""
    return next(
        (
            p
            for p in server.list("pods")
            if (p["metadata"].get("labels") or {}).get("app") == app and p["status"].get("phase") == "Running"
        ),
        None,
    )


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


NS = "netsched-system"
SA_USER = "system:serviceaccount:netsched-system:netsched"


def test_the_rebalancer_runs_on_deploys_rbac_and_each_grant_it_uses_is_needed(
    server: FakeAPIServer, client: KubeClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """deploy/ applied as written and every request authorized as kube's RBAC would: the scheduler
    runs as netsched's service account, and its Rebalancer reads its state ConfigMap, evicts a pod
    off a hot link and writes its cooldowns. With the Role's patch removed, the next eviction's
    write gets kube's 403 (the eviction itself still goes, its cooldown lives in memory only);
    with the ClusterRole's pods/eviction rule removed, the eviction does; with the Role's get
    removed, a new leader's read does."""
    for obj in load_kustomization(DEPLOY):
        kubectl_apply(client, obj)
    token = create_token(client, NS, "netsched")
    for name in ("n0", "n1", "n2"):
        server.create("nodes", make_node(name).capacity(cpu="4", memory="8Gi", pods="20").obj())
    server.authorize_requests()
    kubeconfig = server.write_kubeconfig(tmp_path / "netsched-kubeconfig", token=token)
    caplog.set_level(logging.WARNING)
    with (
        FakePrometheusServer(FakePrometheus()) as prometheus,
        FakeReplicaSetController(server) as controller,
        FakeKubelet(server),
    ):
        registry = build_registry()
        # Rounds only when the test runs them (intervalSeconds 3600: the loop's first is due in
        # an hour); one eviction a round; a node may be left again at once, a workload not.
        text = rebalancing_config(
            prometheus.url,
            election=True,
            intervalSeconds=3600,
            consecutiveRounds=1,
            limits={"evictionsPerRound": 1},
            cooldownSeconds={"workload": 300, "node": 0},
        )
        api = KubeAPI(build_api_client(str(kubeconfig), qps=500, burst=1000, pool_size=24))
        app = SchedulerApp(load_config(text, registry), registry, api, options=AppOptions(watch_timeout=5))
        rebalancer = plugin_of(app.frameworks["netsched"], Rebalancer)
        readings = NodeReadings(prometheus.fake, rebalancer.source, ["n0", "n1", "n2"], transmit=0.6)
        readings.set({"n0": 0.05})  # the quietest link: NetworkTraffic puts the pods there
        stop = threading.Event()
        elector = None
        try:
            assert app.start_informers(sync_timeout=10)
            app.start_background()
            elector = start_election(app, stop)  # deploy/'s lease, through its Role
            wait_until(lambda: app.leading, what="leadership")
            template = make_pod("t").scheduler("netsched").annotation(EGRESS_BANDWIDTH, "200M").obj()
            for workload in ("web", "api", "db"):
                server.create("apps/replicasets", replica_set(workload, template))
            wait_until(lambda: len(running_on(server, "n0")) == 3, what="three pods running on n0")
            # n0's link at 95 %, 20 % of it each pod's: each round moves one of them.
            readings.set({"n0": 0.95, "n1": 0.1, "n2": 0.1})

            def moved() -> dict[str, Any] | None:
                report = rebalancer.run_round()
                return report.moves[0] if report is not None and report.moves else None

            first = wait_until(moved, what="a first move")
            assert first["result"] == "evicted" and first["from"] == "n0"
            assert _state(server).workloads.keys() == {_workload(first)}  # get, then patch, allowed

            _drop(server, "roles", "netsched-rebalancer-state", lambda r: {**r, "verbs": ["get"]}, NS)
            second = wait_until(moved, what="a second move")
            assert second["result"] == "evicted"  # evicted, but its cooldown not written:
            assert _state(server).workloads.keys() == {_workload(first)}
            assert _logged(
                caplog, f'configmaps "{STATE}" is forbidden: User "{SA_USER}" cannot patch resource'
            )

            _drop(
                server,
                "clusterroles",
                "netsched",
                lambda r: None if r["resources"] == ["pods/eviction"] else r,
            )
            third = wait_until(moved, what="a third move")
            assert third["result"] == "error"
            assert _logged(caplog, f'User "{SA_USER}" cannot create resource "pods/eviction"')
            assert server.get("pods", third["pod"].split("/")[1])  # still there
            assert len(controller.created) == 5  # three pods, two replacements

            _drop(server, "roles", "netsched-rebalancer-state", lambda r: None, NS)
            assert Store(api, rebalancer.args.state).load().workloads == {}  # a new leader's read
            assert _logged(caplog, f'User "{SA_USER}" cannot get resource "configmaps"')
        finally:
            stop.set()
            if elector is not None:
                elector.stop(release=True)
            app.shutdown(timeout=5)


def _state(server: FakeAPIServer) -> State:
    return State.decode(server.get("configmaps", STATE, NS).get("data", {}).get(KEY, ""))


def _workload(move: dict[str, Any]) -> str:
    """The workload of a moved pod "default/web-<hash>-<suffix>": "default/web"."""
    return move["pod"].split("-")[0]


def _drop(
    server: FakeAPIServer,
    kind: str,
    name: str,
    change: Callable[[dict[str, Any]], dict[str, Any] | None],
    namespace: str | None = None,
) -> None:
    """Rewrite the stored role's rules with `change` (None drops a rule)."""
    resource = f"rbac.authorization.k8s.io/{kind}"
    role = server.get(resource, name, namespace)
    rules = [new for r in role["rules"] if (new := change(r)) is not None]
    assert rules != role["rules"]
    server.update(resource, {**role, "rules": rules}, namespace)


def _logged(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return any(text in r.getMessage() for r in caplog.records)
