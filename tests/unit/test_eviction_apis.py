"""ClusterAPI.evict in memory and in shadow mode: MemoryAPI honours PodDisruptionBudgets with
the same rules as the fake API server (netsched.framework.disruption), DryRunAPI evicts nothing.

In memory a bound pod is Running and Ready (no kubelet) and a budget's status is computed
afresh before each eviction (no controller lag); expectedPods reads the "apps/replicasets"
objects the cluster was given.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from netsched.app import build_registry
from netsched.clock import ManualClock
from netsched.config import load_config
from netsched.framework import EvictionOutcome, EvictionResult, PodInfo
from netsched.framework.disruption import REPLICASETS_KEY
from netsched.framework.handle import PDBS_KEY
from netsched.inmemory import InMemoryCluster, MemoryAPI
from netsched.kube.errors import MultipleDisruptionBudgets
from netsched.observability.metrics import SchedulerMetrics
from netsched.shadow import DryRunAPI
from netsched.testing.builders import make_node, make_pod
from netsched.testing.workloads import pod_disruption_budget, replica_set

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
"""
REFUSED = EvictionOutcome(
    EvictionResult.REFUSED,
    "Cannot evict pod as it would violate the pod's disruption budget.",
    ("The disruption budget web needs 2 healthy pods and has 2 currently",),
)


def cluster(replicas: int = 3, *, max_unavailable: int | str = 1) -> tuple[InMemoryCluster, list[PodInfo]]:
    """A Deployment-like ReplicaSet `web` of `replicas` pods, all bound, under a budget."""
    reg = build_registry()
    c = InMemoryCluster(load_config(CONFIG, reg), reg, clock=ManualClock())
    c.add_nodes([make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="20").obj() for i in range(2)])
    rs = replica_set("web", make_pod("t").scheduler("netsched").label("app", "web").obj(), replicas=replicas)
    rs["metadata"]["uid"] = "rs-uid"
    c.add_object(REPLICASETS_KEY, rs)
    c.add_object(PDBS_KEY, pod_disruption_budget("web", {"app": "web"}, max_unavailable=max_unavailable))
    for i in range(replicas):
        pod = make_pod(f"web-{i}").scheduler("netsched").label("app", "web").obj()
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": rs["metadata"]["name"],
                "uid": "rs-uid",
                "controller": True,
            }
        ]
        c.add_pod(pod)
    c.schedule_pending()
    pods = sorted(c.handlers.pods_in_namespace("default"), key=lambda p: p.name)
    assert all(p.node_name for p in pods)
    return c, pods


def budget(c: InMemoryCluster) -> dict[str, Any]:
    got = c.objects.get(PDBS_KEY, "default", "web")
    assert got is not None
    return dict(got.get("status") or {})


def test_a_budget_allows_one_eviction_then_refuses() -> None:
    c, pods = cluster()
    assert c.api.evict(pods[0]) == EvictionOutcome(EvictionResult.EVICTED)
    assert [p.name for p in c.handlers.pods_in_namespace("default")] == ["web-1", "web-2"]
    assert budget(c)["disruptionsAllowed"] == 0
    assert budget(c)["disruptedPods"].keys() == {"web-0"}
    assert c.api.evict(pods[1]) == REFUSED
    assert len(c.handlers.pods_in_namespace("default")) == 2


def test_a_replacement_restores_the_budget() -> None:
    c, pods = cluster()
    c.api.evict(pods[0])
    replacement = make_pod("web-3").scheduler("netsched").label("app", "web").obj()
    replacement["metadata"]["ownerReferences"] = pods[0].raw["metadata"]["ownerReferences"]
    c.add_pod(replacement)
    assert c.api.evict(pods[1]) == REFUSED  # the replacement is not bound yet: not Ready
    c.schedule_pending()
    assert c.api.evict(pods[1]).result is EvictionResult.EVICTED


def test_a_pending_pod_is_evicted_without_its_budget() -> None:
    c, pods = cluster(max_unavailable=0)
    c.add_pod(make_pod("huge").scheduler("netsched").label("app", "web").req(cpu="100").obj())
    c.schedule_pending()
    (pending,) = [p for p in c.handlers.pods_in_namespace("default") if not p.node_name]
    assert c.api.evict(pods[0]).result is EvictionResult.REFUSED
    assert c.api.evict(pending).result is EvictionResult.EVICTED
    assert "huge" not in {p.name for p in c.handlers.pods_in_namespace("default")}


def test_namesakes_missing_pods_dry_runs_and_two_budgets() -> None:
    c, pods = cluster()
    namesake = make_pod("web-0").uid("another-uid").info()
    assert c.api.evict(namesake).result is EvictionResult.CONFLICT
    assert c.api.evict(make_pod("ghost").info()).result is EvictionResult.GONE
    assert c.api.evict(pods[0], dry_run=True) == EvictionOutcome(EvictionResult.WOULD_EVICT)
    assert len(c.handlers.pods_in_namespace("default")) == 3 and budget(c).get("disruptedPods") is None
    c.add_object(PDBS_KEY, pod_disruption_budget("second", {"app": "web"}, max_unavailable=1))
    with pytest.raises(MultipleDisruptionBudgets):
        c.api.evict(pods[0])


def test_a_percentage_needs_the_replica_sets_scale() -> None:
    """maxUnavailable 34 % of 3 rounds up to 2: two evictions go, the third waits."""
    c, pods = cluster(max_unavailable="34%")
    assert [c.api.evict(p).result for p in pods] == [
        EvictionResult.EVICTED,
        EvictionResult.EVICTED,
        EvictionResult.REFUSED,
    ]


def test_without_a_cluster_memory_api_records_and_accepts() -> None:
    api = MemoryAPI()
    pod = make_pod("p").info()
    assert api.evict(pod).result is EvictionResult.EVICTED
    assert api.evict(pod, dry_run=True).result is EvictionResult.WOULD_EVICT
    assert api.calls == [("evict", "default/p", ""), ("evict", "default/p", "dryRun")]


def test_a_shadow_scheduler_never_evicts() -> None:
    class Refuse:
        def evict(self, pod: PodInfo, *, dry_run: bool = False) -> EvictionOutcome:
            raise AssertionError("a shadow scheduler sent an eviction")

    api = DryRunAPI("netsched", SchedulerMetrics(CollectorRegistry()), annotate_with=Refuse())  # type: ignore[arg-type]
    pod = make_pod("p").info()
    assert api.evict(pod) == EvictionOutcome(EvictionResult.WOULD_EVICT)
    assert api.would_evict == ["default/p"]
