"""Evictions over real HTTP: KubeAPI.evict against the fake API server's pods/eviction, with
PodDisruptionBudgets kept by its disruption controller, RBAC enforced, and the kit's
ReplicaSet controller and kubelet bringing an evicted pod back under the real scheduler.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from netsched.app import SchedulerApp
from netsched.fakeapi.resources import PDBS, PODS, ResourceType
from netsched.fakeapi.selection import match_all
from netsched.fakeapi.store import WatchEvent
from netsched.framework import EvictionOutcome, EvictionResult, PodInfo
from netsched.framework.parse import parse_pod
from netsched.kube import Forbidden, KubeAPI, KubeClient, RetrySettings, build_api_client
from netsched.kube.errors import MultipleDisruptionBudgets
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer, RecordedRequest
from netsched.testing.kubectl import apply as kubectl_apply
from netsched.testing.kubectl import create_token
from netsched.testing.kustomize import load_kustomization
from netsched.testing.wait import wait_until
from netsched.testing.workloads import (
    FakeKubelet,
    FakeReplicaSetController,
    pod_disruption_budget,
    replica_set,
)

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
EVICTION = RecordedRequest("create", "", "pods", "eviction", "default")
PDB = "poddisruptionbudgets"
REFUSED_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
FAST_RETRY = RetrySettings(backoff=0.01, max_backoff=0.05)


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(watch_timeout=5.0, bookmark_interval=0.5, disruption_controller=True) as srv:
        yield srv


def running(
    server: FakeAPIServer, name: str, *, owner: dict[str, Any] | None = None, **labels: str
) -> PodInfo:
    """A bound, Running and Ready pod, as a kubelet leaves it."""
    pod = make_pod(name).labels(**(labels or {"app": "web"})).node("n1").obj()
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    if owner is not None:
        pod["metadata"]["ownerReferences"] = [owner]
    return parse_pod(server.create("pods", pod))


def web(server: FakeAPIServer, replicas: int = 3) -> list[PodInfo]:
    """A ReplicaSet's `replicas` running pods (no controller: the test made them)."""
    rs = server.create(
        "apps/replicasets", replica_set("web", make_pod("t").label("app", "web").obj(), replicas=replicas)
    )
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": rs["metadata"]["name"],
        "uid": rs["metadata"]["uid"],
        "controller": True,
    }
    return [running(server, f"web-{i}", owner=owner) for i in range(replicas)]


def status(server: FakeAPIServer, name: str = "web") -> dict[str, Any]:
    return dict(server.get(PDB, name)["status"])


def evictions(server: FakeAPIServer) -> int:
    return server.requests.count(EVICTION)


def test_an_allowed_eviction_charges_the_budget_then_deletes_the_pod(
    server: FakeAPIServer, api: KubeAPI
) -> None:
    pods = web(server)
    server.create(PDB, pod_disruption_budget("web", {"app": "web"}, max_unavailable=1))
    assert (status(server)["disruptionsAllowed"], status(server)["expectedPods"]) == (1, 3)
    budgets, pod_events = watch(server, PDBS), watch(server, PODS)

    assert api.evict(pods[0]) == EvictionOutcome(EvictionResult.EVICTED)

    assert [p["metadata"]["name"] for p in server.list("pods")] == ["web-1", "web-2"]
    after = status(server)
    assert (after["disruptionsAllowed"], after["currentHealthy"], after["desiredHealthy"]) == (0, 2, 2)
    assert "disruptedPods" not in after  # the controller dropped the entry once the pod was gone
    # As kube: the budget is charged (the pod recorded as disrupted) before the pod goes, and
    # the pod carries DisruptionTarget when it is deleted.
    charged = drain(budgets)[0].obj
    assert charged["status"]["disruptionsAllowed"] == 0
    assert set(charged["status"]["disruptedPods"]) == {"web-0"}
    events = drain(pod_events)
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "web-0"),
        ("DELETED", "web-0"),
    ]
    (target,) = [c for c in events[-1].obj["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "EvictionByEvictionAPI")
    assert evictions(server) == 1


def watch(server: FakeAPIServer, rt: ResourceType) -> queue.SimpleQueue[WatchEvent | None]:
    """The store's events of `rt` from now on (the server's own queue: no HTTP)."""
    return server.store.watch(rt, None, match_all, None).queue


def drain(events: queue.SimpleQueue[WatchEvent | None]) -> list[WatchEvent]:
    out = []
    while True:
        try:
            event = events.get_nowait()
        except queue.Empty:
            return out
        if event is not None:
            out.append(event)


def test_a_budget_that_allows_none_refuses_with_kubes_429_once(server: FakeAPIServer, api: KubeAPI) -> None:
    pods = [running(server, f"web-{i}") for i in range(3)]
    server.create(PDB, pod_disruption_budget("web", {"app": "web"}, min_available=3))
    assert status(server)["disruptionsAllowed"] == 0

    outcome = api.evict(pods[0])

    assert outcome == EvictionOutcome(
        EvictionResult.REFUSED,
        REFUSED_MESSAGE,
        ("The disruption budget web needs 3 healthy pods and has 3 currently",),
    )
    assert evictions(server) == 1  # a budget's 429 is not retried by the transport
    assert len(server.list("pods")) == 3


def test_two_budgets_are_a_500_raised_without_retries(server: FakeAPIServer, api: KubeAPI) -> None:
    pods = [running(server, f"web-{i}") for i in range(3)]
    server.create(PDB, pod_disruption_budget("web", {"app": "web"}, min_available=1))
    server.create(PDB, pod_disruption_budget("also-web", {"app": "web"}, min_available=1))
    with pytest.raises(MultipleDisruptionBudgets) as e:
        api.evict(pods[0])
    assert e.value.status == 500
    assert e.value.message == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )
    assert evictions(server) == 1
    assert len(server.list("pods")) == 3


def test_a_namesake_is_never_evicted(server: FakeAPIServer, api: KubeAPI) -> None:
    old = running(server, "web-0")
    server.delete("pods", "web-0")
    new = running(server, "web-0")
    outcome = api.evict(old)
    assert outcome.result is EvictionResult.CONFLICT
    assert outcome.message == (
        f'Operation cannot be fulfilled on Pod "web-0": the UID in the precondition ({old.uid}) does not match '
        f"the UID in record ({new.uid}). The object might have been deleted and then recreated"
    )
    assert server.get("pods", "web-0")["metadata"]["uid"] == new.uid


def test_a_missing_pod_is_gone(api: KubeAPI) -> None:
    outcome = api.evict(make_pod("ghost").info())
    assert outcome == EvictionOutcome(EvictionResult.GONE, 'pods "ghost" not found')


def test_a_pending_pod_is_evicted_without_its_budget(server: FakeAPIServer, api: KubeAPI) -> None:
    [running(server, f"web-{i}") for i in range(2)]
    pending = parse_pod(server.create("pods", make_pod("web-new").label("app", "web").obj()))
    server.create(PDB, pod_disruption_budget("web", {"app": "web"}, min_available=2))
    assert status(server)["disruptionsAllowed"] == 0
    assert api.evict(pending).result is EvictionResult.EVICTED
    assert status(server)["disruptionsAllowed"] == 0


def test_an_unready_pod_goes_free_while_the_budget_is_healthy(server: FakeAPIServer, api: KubeAPI) -> None:
    [running(server, f"web-{i}") for i in range(2)]
    sick = parse_pod(
        server.create(
            "pods", {**make_pod("sick").label("app", "web").node("n1").obj(), "status": {"phase": "Running"}}
        )
    )
    server.create(PDB, pod_disruption_budget("web", {"app": "web"}, min_available=2))
    assert (status(server)["disruptionsAllowed"], status(server)["currentHealthy"]) == (0, 2)
    assert api.evict(sick).result is EvictionResult.EVICTED


def test_a_dry_run_changes_nothing(server: FakeAPIServer, api: KubeAPI) -> None:
    pods = web(server)
    server.create(PDB, pod_disruption_budget("web", {"app": "web"}, max_unavailable=1))
    before = status(server)
    assert api.evict(pods[0], dry_run=True) == EvictionOutcome(EvictionResult.WOULD_EVICT)
    assert len(server.list("pods")) == 3
    assert status(server) == before
    api.evict(pods[0])
    assert api.evict(pods[1], dry_run=True).result is EvictionResult.REFUSED


def test_rbac_create_on_pods_eviction_is_what_allows_an_eviction(
    server: FakeAPIServer, api: KubeAPI, client: KubeClient, tmp_path: Path
) -> None:
    """deploy/ applied as written, requests authorized by the fake as kube's RBAC would: netsched's
    service account evicts through its ClusterRole's pods/eviction rule, and without that rule
    it may not (its pods delete grant is not what evicts); an anonymous caller may not either."""
    pods = [running(server, f"web-{i}") for i in range(3)]
    for obj in load_kustomization(DEPLOY):
        kubectl_apply(client, obj)
    token = create_token(client, "netsched-system", "netsched")
    server.authorize_requests()
    kubeconfig = server.write_kubeconfig(tmp_path / "netsched-kubeconfig", token=token)
    netsched = build_api_client(str(kubeconfig), retry=FAST_RETRY)
    try:
        as_netsched = KubeAPI(netsched)
        assert as_netsched.evict(pods[0]).result is EvictionResult.EVICTED
        role = server.get("rbac.authorization.k8s.io/clusterroles", "netsched")
        rules = [r for r in role["rules"] if r.get("resources") != ["pods/eviction"]]
        assert len(rules) == len(role["rules"]) - 1
        server.update("rbac.authorization.k8s.io/clusterroles", {**role, "rules": rules})
        with pytest.raises(Forbidden) as e:
            as_netsched.evict(pods[1])
        assert e.value.message == (
            'pods "web-1" is forbidden: User "system:serviceaccount:netsched-system:netsched" cannot create '
            'resource "pods/eviction" in API group "" in the namespace "default"'
        )
        as_netsched.delete_pod(pods[2])  # still allowed: the delete preemption uses
    finally:
        netsched.close()
    with pytest.raises(Forbidden) as anonymous:
        api.evict(pods[1])
    assert 'User "system:anonymous" cannot create resource "pods/eviction"' in anonymous.value.message
    assert [p["metadata"]["name"] for p in server.list("pods")] == ["web-1"]


def test_a_budget_the_controller_has_not_processed_says_come_back_in_ten_seconds(tmp_path: Path) -> None:
    """Without the controller a budget keeps the status a test wrote: a spec change (generation 2)
    that no controller observed makes evictions wait, with Retry-After 10 s, as kube's."""
    with FakeAPIServer() as plain:
        client: KubeClient = build_api_client(
            str(plain.write_kubeconfig(tmp_path / "kubeconfig")), retry=FAST_RETRY
        )
        try:
            pod = running(plain, "web-0")
            pdb = plain.create(
                PDB,
                pod_disruption_budget(
                    "web", {"app": "web"}, min_available=0, status={"disruptionsAllowed": 1}
                ),
            )
            assert pdb["metadata"]["generation"] == 1
            plain.patch(PDB, "web", {"spec": {"minAvailable": 1}})
            assert plain.get(PDB, "web")["metadata"]["generation"] == 2
            outcome = KubeAPI(client).evict(pod)
            assert outcome == EvictionOutcome(
                EvictionResult.REFUSED,
                REFUSED_MESSAGE,
                ("The disruption budget web is still being processed by the server.",),
                retry_after=10.0,
            )
            assert plain.requests.count(EVICTION) == 1
        finally:
            client.close()


CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: netsched
"""


def test_an_evicted_pod_comes_back_and_its_budget_with_it(
    server: FakeAPIServer, api: KubeAPI, scheduler_app: Callable[..., SchedulerApp]
) -> None:
    """A Deployment-like ReplicaSet of 3 under maxUnavailable 1: an eviction takes the budget to 0
    and a second is refused; the ReplicaSet controller makes a replacement, the scheduler binds
    it, and the budget is back at 1 once the kubelet reports it Ready, not before."""
    for i in range(3):
        server.create("nodes", make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="20").obj())
    # The kubelet makes every pod Ready until the test holds back the pods made after the
    # first three were Ready (the replacement), by uid: the hold is decided before any of them exists.
    original: set[str] = set()
    hold = {"new": False}

    def ready(pod: dict[str, Any]) -> bool:
        return not hold["new"] or pod["metadata"]["uid"] in original

    template = make_pod("t").scheduler("netsched").label("app", "web").req(cpu="100m").obj()
    rs = replica_set("web", template, replicas=3)
    pod_events = watch(server, PODS)
    with FakeReplicaSetController(server) as controller, FakeKubelet(server, ready=ready) as kubelet:
        scheduler_app(CONFIG, start=True)
        server.create("apps/replicasets", rs)
        server.create(PDB, pod_disruption_budget("web", {"app": "web"}, max_unavailable=1))
        wait_until(lambda: len(controller.created) == 3, what="three pods created")
        wait_until(lambda: status(server)["disruptionsAllowed"] == 1, what="three pods Ready")
        original.update(p["metadata"]["uid"] for p in server.list("pods"))
        hold["new"] = True
        victim, other = (parse_pod(p) for p in server.list("pods")[:2])

        assert api.evict(victim).result is EvictionResult.EVICTED
        assert api.evict(other).result is EvictionResult.REFUSED

        wait_until(lambda: len(controller.created) == 4, what="a replacement")
        name = controller.created[3].split("/")[1]
        made = next(
            e.obj for e in drain(pod_events) if e.type == "ADDED" and e.obj["metadata"]["name"] == name
        )
        rs_now = server.get("apps/replicasets", rs["metadata"]["name"])
        assert name.startswith(f"{rs['metadata']['name']}-") and made["metadata"]["uid"] not in original
        assert made["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": rs["metadata"]["name"],
                "uid": rs_now["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert made["metadata"]["labels"]["pod-template-hash"] == rs["metadata"]["name"].split("-")[-1]
        assert made["spec"]["schedulerName"] == "netsched" and "nodeName" not in made["spec"]

        # Bound and started, but not Ready yet: the budget stays at 0.
        wait_until(
            lambda: server.get("pods", name)["status"].get("phase") == "Running", what="replacement started"
        )
        assert server.get("pods", name)["spec"]["nodeName"]
        assert (status(server)["disruptionsAllowed"], status(server)["currentHealthy"]) == (0, 2)
        assert api.evict(other).result is EvictionResult.REFUSED

        hold["new"] = False
        kubelet.resync()
        wait_until(lambda: status(server)["disruptionsAllowed"] == 1, what="the budget restored")
        assert status(server)["currentHealthy"] == 3
        assert api.evict(other).result is EvictionResult.EVICTED
        assert not controller.errors and not kubelet.errors
