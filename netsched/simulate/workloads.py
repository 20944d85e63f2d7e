"""Deployments in a scenario: pods owned the way a Deployment's are, and the objects behind them.

A pod generator with `deployment: api` makes its pods a Deployment's: each
carries the `pod-template-hash` label and a controller ownerReference to the
ReplicaSet `api-<hash>`, so netsched (netsched/framework/workload.py) and a
mesh name their workload `api`, and kube's default topology spread treats
them as a ReplicaSet's pods.  The hash is computed as the Deployment
controller computes it (FNV-1a over the pod template, written with the
ReplicaSet name alphabet), here over the template's canonical JSON, so it
differs from kube's for the same template but changes exactly when the
template does.  A rollout (timeline.py) stamps the template with
`kubectl.kubernetes.io/restartedAt`, as `kubectl rollout restart` does, which
gives the new ReplicaSet its own hash.

`Deployment` is what the scenario decodes to, a plain record another harness
can create on a real API server (`deployment_object`, `replica_set_object`,
`pod`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from netsched.framework.fields import ErrorList
from netsched.framework.workload import POD_TEMPLATE_HASH

# The characters kube writes hashes and generated names with (apimachinery's rand alphabet).
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def template_hash(template: Mapping[str, Any]) -> str:
    """pod-template-hash of a pod template: FNV-1a (32 bits) of its canonical JSON, its decimal
    digits mapped onto ALPHANUMS as kube's SafeEncodeString does."""
    h = _FNV_OFFSET
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return "".join(ALPHANUMS[ord(c) % len(ALPHANUMS)] for c in str(h))


def template_of(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A pod's template: labels (less pod-template-hash), annotations and spec (less nodeName)."""
    meta = pod.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    out: dict[str, Any] = {"metadata": {"labels": labels}, "spec": copy.deepcopy(spec)}
    if meta.get("annotations"):
        out["metadata"]["annotations"] = dict(meta["annotations"])
    return out


def owned_pod(
    template: Mapping[str, Any], namespace: str, name: str, deployment: str, pod_hash: str
) -> dict[str, Any]:
    """A pod of ReplicaSet `<deployment>-<pod_hash>` made from `template`, unbound."""
    meta = template.get("metadata") or {}
    rs = f"{deployment}-{pod_hash}"
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"sim-{namespace}-{name}",
            "labels": {**(meta.get("labels") or {}), POD_TEMPLATE_HASH: pod_hash},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs,
                    "uid": f"sim-rs-{namespace}-{rs}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
    if meta.get("annotations"):
        pod["metadata"]["annotations"] = dict(meta["annotations"])
    return pod


def deployment_of(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(Deployment name, pod-template-hash) when the pod is owned as a Deployment's pods are."""
    meta = pod.get("metadata") or {}
    pod_hash = (meta.get("labels") or {}).get(POD_TEMPLATE_HASH, "")
    for ref in meta.get("ownerReferences") or []:
        name = str(ref.get("name") or "")
        if (
            ref.get("controller")
            and ref.get("kind") == "ReplicaSet"
            and pod_hash
            and name.endswith("-" + pod_hash)
        ):
            return name[: -len(pod_hash) - 1], pod_hash
    return None


@dataclass(frozen=True, slots=True)
class Deployment:
    """A Deployment of the scenario: its pods are those of `pods` (and `existingPods`) it owns."""

    namespace: str
    name: str
    replicas: int
    template: Mapping[str, Any]  # pod template: metadata.labels / annotations, spec
    template_hash: str
    pods: tuple[str, ...]  # "namespace/name" of its pods in the scenario, in listed order

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def replica_set(self) -> str:
        return f"{self.name}-{self.template_hash}"

    def deployment_object(self) -> dict[str, Any]:
        """The Deployment as the API would hold it (apps/v1)."""
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": self.name, "namespace": self.namespace, "uid": f"sim-deploy-{self.key}"},
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": self.selector()},
                "template": copy.deepcopy(dict(self.template)),
            },
        }

    def selector(self) -> dict[str, str]:
        labels = dict((self.template.get("metadata") or {}).get("labels") or {})
        return labels or {"app": self.name}

    def replica_set_object(self, pod_hash: str, replicas: int, template: Mapping[str, Any]) -> dict[str, Any]:
        """ReplicaSet `<name>-<pod_hash>` of this Deployment, scaled to `replicas`."""
        rs = f"{self.name}-{pod_hash}"
        labels = {**self.selector(), POD_TEMPLATE_HASH: pod_hash}
        tmpl = copy.deepcopy(dict(template))
        tmpl.setdefault("metadata", {})["labels"] = {**(tmpl["metadata"].get("labels") or {}), **labels}
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs,
                "namespace": self.namespace,
                "uid": f"sim-rs-{self.namespace}-{rs}",
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": self.name,
                        "uid": f"sim-deploy-{self.key}",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": tmpl},
        }


def collect_deployments(
    groups: Iterable[tuple[str, list[dict[str, Any]]]], errs: ErrorList
) -> list[Deployment]:
    """The Deployments owning pods of the sections (name, pods), in first-seen order; pods of
    one Deployment must share one template (one pod-template-hash)."""
    found: dict[str, tuple[str, dict[str, Any], list[str]]] = {}  # key -> (hash, first pod, pod keys)
    for section, pods in groups:
        for pod in pods:
            owner = deployment_of(pod)
            if owner is None:
                continue
            meta = pod["metadata"]
            key = f"{meta['namespace']}/{owner[0]}"
            pod_key = f"{meta['namespace']}/{meta['name']}"
            got = found.setdefault(key, (owner[1], pod, []))
            if got[0] != owner[1]:
                errs.invalid(
                    section,
                    pod_key,
                    f"Deployment {key} has pods of two templates (pod-template-hash {got[0]} and "
                    f"{owner[1]}); a Deployment's pods share one template",
                )
                continue
            got[2].append(pod_key)
    out = []
    for key, (pod_hash, first, keys) in found.items():
        namespace, name = key.split("/", 1)
        out.append(Deployment(namespace, name, len(keys), template_of(first), pod_hash, tuple(keys)))
    return out
