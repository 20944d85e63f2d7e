"""Workloads for the fake cluster: Deployment-like ReplicaSets, PodDisruptionBudgets, and the
controllers that keep their pods coming back and Ready.

An eviction is only half of a move: a controller makes the replacement and a kubelet makes it
Ready, and a PodDisruptionBudget allows the next eviction once it is.  Nothing in a
FakeAPIServer does either, so the kit does, as StoreControllers (netsched.testing.controllers):

- `FakeReplicaSetController`: kube's ReplicaSet controller, cut down: each ReplicaSet keeps
  spec.replicas active pods (not terminal, not being deleted) that it controls (an
  ownerReference with controller: true and its uid).  A missing pod is created from the
  template: generateName "<replicaset>-", the template's labels (pod-template-hash among them)
  and annotations, its spec as is (schedulerName included), unbound.  Extra pods are deleted,
  the least useful first (unbound, then not Ready, then the newest).  status.replicas,
  readyReplicas, availableReplicas and observedGeneration follow.  It adopts no orphans and
  knows no Deployments: a Deployment-like ReplicaSet (`replica_set`) stands for one.
- `FakeKubelet`: every bound pod is started (phase Running, startTime, Initialized) and made
  Ready, or kept unready while `ready(pod)` says so (`resync()` after changing it).

    with FakeAPIServer(disruption_controller=True) as server, FakeReplicaSetController(server), FakeKubelet(server):
        server.create("apps/replicasets", replica_set("web", make_pod("t").scheduler("netsched").obj(), replicas=3))
        server.create("poddisruptionbudgets", pod_disruption_budget("web", {"app": "web"}, max_unavailable=1))
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from netsched.clock import rfc3339
from netsched.fakeapi import FakeAPIServer, StatusError
from netsched.fakeapi.resources import PODS, REPLICASETS
from netsched.framework.disruption import controller_of, pod_ready
from netsched.testing.controllers import Obj, StoreController

TEMPLATE_HASH = "pod-template-hash"
_TERMINAL = ("Succeeded", "Failed")


def replica_set(
    deployment: str,
    template: Mapping[str, Any],
    *,
    replicas: int = 1,
    namespace: str = "default",
    template_hash: str = "",
) -> Obj:
    """The ReplicaSet a Deployment named `deployment` would make for pod `template` (a pod's JSON,
    e.g. make_pod("t").scheduler("netsched").req(cpu="100m").obj(); its name is not used):
    named "<deployment>-<hash>", selecting the template's labels (app=<deployment> when it has
    none) plus pod-template-hash, the hash of the template's spec unless `template_hash` is given.
    It has no ownerReference (no Deployment controller runs here): a budget counts its replicas."""
    meta = template.get("metadata") or {}
    spec = dict(template.get("spec") or {})
    spec.pop("nodeName", None)
    digest = template_hash or hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]
    labels = {**(meta.get("labels") or {"app": deployment}), TEMPLATE_HASH: digest}
    pod_meta: Obj = {"labels": labels}
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"{deployment}-{digest}", "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": pod_meta, "spec": spec},
        },
    }


def pod_disruption_budget(
    name: str,
    selector: Mapping[str, str],
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    namespace: str = "default",
    unhealthy_pod_eviction_policy: str | None = None,
    status: Mapping[str, Any] | None = None,
) -> Obj:
    """A policy/v1 PodDisruptionBudget over the pods with labels `selector`.  `status` is for a
    server without its disruption controller (which computes it): it is stored as given, with
    observedGeneration 1 unless it says otherwise (an older one makes evictions wait: 429)."""
    spec: Obj = {"selector": {"matchLabels": dict(selector)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
    out: Obj = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if status is not None:
        out["status"] = {"observedGeneration": 1, **status}
    return out


def running_on(server: FakeAPIServer, node: str) -> list[Obj]:
    """The pods bound to `node` that a kubelet (FakeKubelet) has started."""
    return [
        p
        for p in server.list(PODS.plural)
        if p["spec"].get("nodeName") == node and (p.get("status") or {}).get("phase") == "Running"
    ]


def _owned_by(pod: Mapping[str, Any], uid: str) -> bool:
    ref = controller_of(pod)
    return ref is not None and ref.get("uid") == uid


def _active(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in _TERMINAL and not (pod.get("metadata") or {}).get("deletionTimestamp")


def _least_useful_first(pods: list[Obj]) -> list[Obj]:
    """kube's ActivePods ordering, cut down: unbound before bound, unready before ready, the
    newest first (creationTimestamp, then name: a later generateName suffix is newer)."""

    def age(pod: Obj) -> tuple[str, str]:
        meta = pod.get("metadata") or {}
        return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")

    ranked = sorted(pods, key=age, reverse=True)
    ranked.sort(key=lambda p: (bool((p.get("spec") or {}).get("nodeName")), pod_ready(p)))
    return ranked


class FakeReplicaSetController(StoreController):
    """Keeps every ReplicaSet at spec.replicas pods (see the module docstring)."""

    def __init__(self, server: FakeAPIServer) -> None:
        super().__init__(server, (REPLICASETS.key, PODS.key), "fake-replicaset-controller")
        self.created: list[str] = []  # "namespace/name" of every pod it made, in order

    def handle(self, key: str, event_type: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        if key == REPLICASETS.key:
            if event_type != "DELETED":
                self.sync(namespace, str(meta.get("name") or ""))
            return
        ref = controller_of(obj)
        if ref is not None and ref.get("kind") == "ReplicaSet":
            self.sync(namespace, str(ref.get("name") or ""))

    def sync(self, namespace: str, name: str) -> None:
        """Bring ReplicaSet `namespace/name` to its replica count and write its status."""
        try:
            rs = self.server.get(REPLICASETS.key, name, namespace)
        except StatusError:
            return  # deleted: its pods are the garbage collector's, which the fake does not run
        uid = rs["metadata"]["uid"]
        pods = [p for p in self.server.list(PODS.key, namespace) if _owned_by(p, uid) and _active(p)]
        want = (rs.get("spec") or {}).get("replicas", 1)
        for _ in range(want - len(pods)):
            pod = self.server.create(PODS.key, self._new_pod(rs), namespace)
            self.created.append(f"{namespace}/{pod['metadata']['name']}")
            pods.append(pod)
        for extra in _least_useful_first(pods)[: max(0, len(pods) - want)]:
            pods.remove(extra)
            with contextlib.suppress(StatusError):  # already gone
                self.server.delete(PODS.key, extra["metadata"]["name"], namespace)
        ready = sum(1 for p in pods if pod_ready(p))
        status = {
            "replicas": len(pods),
            "fullyLabeledReplicas": len(pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if rs.get("status") != status:
            with contextlib.suppress(StatusError):  # deleted meanwhile
                self.server.patch(REPLICASETS.key, name, {"status": status}, namespace)

    @staticmethod
    def _new_pod(rs: Mapping[str, Any]) -> Obj:
        meta = rs["metadata"]
        template = (rs.get("spec") or {}).get("template") or {}
        pod_meta: Obj = {
            "generateName": f"{meta['name']}-",
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        annotations = (template.get("metadata") or {}).get("annotations")
        if annotations:
            pod_meta["annotations"] = dict(annotations)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": pod_meta,
            "spec": dict(template.get("spec") or {}),
        }


class FakeKubelet(StoreController):
    """Starts every bound pod and makes it Ready, as the node's kubelet would (see the module
    docstring).  `ready(pod)` False keeps a started pod unready; call `resync()` after changing it."""

    def __init__(self, server: FakeAPIServer, *, ready: Callable[[Obj], bool] | None = None) -> None:
        super().__init__(server, (PODS.key,), "fake-kubelet")
        self.ready: Callable[[Obj], bool] = ready or (lambda _pod: True)

    def handle(self, key: str, event_type: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        if (
            event_type == "DELETED"
            or meta.get("deletionTimestamp")
            or not (obj.get("spec") or {}).get("nodeName")
        ):
            return
        if (obj.get("status") or {}).get("phase") in _TERMINAL:
            return
        ready = self.ready(obj)
        if (obj.get("status") or {}).get("phase") == "Running" and pod_ready(obj) == ready:
            return
        uid, now = meta.get("uid"), rfc3339(self.server.clock.wall())
        with contextlib.suppress(StatusError):  # deleted or replaced meanwhile: its own events follow
            self.server.store.mutate(
                PODS, meta.get("namespace"), meta["name"], lambda cur: _started(cur, uid, ready, now)
            )

    def resync(self) -> None:
        """Look at every pod again (after `ready` changed)."""
        for pod in self.server.list(PODS.key):
            self._run_one_safely([(PODS.key, pod)], "MODIFIED")


def _started(pod: Obj, uid: object, ready: bool, now: str) -> Obj:
    """`pod` started by its kubelet at `now`, Ready or not (a copy)."""
    if pod["metadata"].get("uid") != uid:
        raise StatusError(409, "Conflict", "the pod was replaced by a namesake")
    status = dict(pod.get("status") or {})
    status.setdefault("startTime", now)
    status["phase"] = "Running"
    flag = "True" if ready else "False"
    wanted = {"Initialized": "True", "ContainersReady": flag, "Ready": flag}
    conditions = []
    for cond in status.get("conditions") or []:
        if cond.get("type") in wanted:
            value = wanted.pop(cond["type"])
            cond = (
                {**cond, "status": value}
                if cond.get("status") == value
                else {
                    **cond,
                    "status": value,
                    "lastTransitionTime": now,
                }
            )
        conditions.append(cond)
    conditions += [{"type": t, "status": v, "lastTransitionTime": now} for t, v in wanted.items()]
    status["conditions"] = conditions
    return {**pod, "status": status}
