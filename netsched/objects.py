"""Fluent builders for pods and nodes, as raw API JSON or parsed records.

Production code builds objects too (`netsched demo` creates a cluster,
`netsched simulate` expands scenarios), so the builders live here; the test
kit re-exports them as netsched.testing.builders.

    pod = make_pod("web-1").req(cpu="500m", memory="1Gi").label("app", "web").info()
    node = make_node("n1").capacity(cpu="4", memory="8Gi").taint("gpu", "true").info()

They produce the JSON the API server would return and go through the same
parser as the scheduler, so a test exercises the real parsing path.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from netsched.framework.parse import parse_node, parse_pod
from netsched.framework.types import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, NodeInfo, PodInfo

_uid = itertools.count(1)


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{name}-{next(_uid)}",
                "labels": {},
            },
            "spec": {
                "containers": [{"name": "c0", "image": "busybox", "resources": {}}],
                "schedulerName": "default-scheduler",
            },
            "status": {"phase": "Pending"},
        }

    @property
    def _c0(self) -> dict[str, Any]:
        return self._obj["spec"]["containers"][0]  # type: ignore[no-any-return]

    def namespace(self, ns: str) -> PodBuilder:
        self._obj["metadata"]["namespace"] = ns
        return self

    def uid(self, uid: str) -> PodBuilder:
        self._obj["metadata"]["uid"] = uid
        return self

    def req(self, **resources: str | int) -> PodBuilder:
        """Requests of the first container; keyword names use _ for - (ephemeral_storage)."""
        reqs = self._c0["resources"].setdefault("requests", {})
        for k, v in resources.items():
            reqs[k.replace("_", "-") if k != "nvidia_gpu" else "nvidia.com/gpu"] = str(v)
        return self

    def req_named(self, name: str, quantity: str | int) -> PodBuilder:
        self._c0["resources"].setdefault("requests", {})[name] = str(quantity)
        return self

    def limit(self, **resources: str | int) -> PodBuilder:
        lims = self._c0["resources"].setdefault("limits", {})
        for k, v in resources.items():
            lims[k.replace("_", "-")] = str(v)
        return self

    def container(self, image: str = "busybox", **requests: str | int) -> PodBuilder:
        c: dict[str, Any] = {
            "name": f"c{len(self._obj['spec']['containers'])}",
            "image": image,
            "resources": {},
        }
        if requests:
            c["resources"]["requests"] = {k.replace("_", "-"): str(v) for k, v in requests.items()}
        self._obj["spec"]["containers"].append(c)
        return self

    def image(self, image: str) -> PodBuilder:
        self._c0["image"] = image
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self._obj["metadata"]["labels"][key] = value
        return self

    def labels(self, **labels: str) -> PodBuilder:
        self._obj["metadata"]["labels"].update(labels)
        return self

    def annotation(self, key: str, value: str) -> PodBuilder:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def priority(self, p: int) -> PodBuilder:
        self._obj["spec"]["priority"] = p
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._obj["spec"]["preemptionPolicy"] = policy
        return self

    def scheduler(self, name: str) -> PodBuilder:
        self._obj["spec"]["schedulerName"] = name
        return self

    def node(self, name: str) -> PodBuilder:
        """Already bound to a node (an existing, running pod)."""
        self._obj["spec"]["nodeName"] = name
        self._obj["status"]["phase"] = "Running"
        return self

    def nominated(self, node: str) -> PodBuilder:
        self._obj["status"]["nominatedNodeName"] = node
        return self

    def node_selector(self, **labels: str) -> PodBuilder:
        self._obj["spec"].setdefault("nodeSelector", {}).update(labels)
        return self

    def toleration(
        self, key: str = "", value: str = "", effect: str = "", operator: str = "Equal"
    ) -> PodBuilder:
        t: dict[str, Any] = {"operator": operator}
        if key:
            t["key"] = key
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self._obj["spec"].setdefault("tolerations", []).append(t)
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> PodBuilder:
        p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        self._c0.setdefault("ports", []).append(p)
        return self

    def gate(self, name: str) -> PodBuilder:
        self._obj["spec"].setdefault("schedulingGates", []).append({"name": name})
        return self

    def affinity(self, affinity: dict[str, Any]) -> PodBuilder:
        """Raw spec.affinity (merged per kind: nodeAffinity, podAffinity, podAntiAffinity)."""
        self._obj["spec"].setdefault("affinity", {}).update(copy.deepcopy(affinity))
        return self

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when: str = "DoNotSchedule",
        selector: dict[str, str] | None = None,
        **extra: Any,
    ) -> PodBuilder:
        c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
        if selector is not None:
            c["labelSelector"] = {"matchLabels": dict(selector)}
        c.update(extra)
        self._obj["spec"].setdefault("topologySpreadConstraints", []).append(c)
        return self

    def pvc(self, claim: str) -> PodBuilder:
        self._obj["spec"].setdefault("volumes", []).append(
            {"name": claim, "persistentVolumeClaim": {"claimName": claim}}
        )
        return self

    def owner(self, kind: str, name: str) -> PodBuilder:
        self._obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": True, "uid": f"owner-{name}"}
        ]
        return self

    def terminating(self, at: str = "2026-01-01T00:00:30Z", grace: int = 30) -> PodBuilder:
        """Being deleted: deletionTimestamp set (the time by which it must be gone), as the API
        server does on a graceful delete."""
        self._obj["metadata"]["deletionTimestamp"] = at
        self._obj["metadata"]["deletionGracePeriodSeconds"] = grace
        return self

    def set(self, path: str, value: Any) -> PodBuilder:
        """Set any field by dotted path (for malformed-input tests): set("spec.priority", "x")."""
        cur = self._obj
        parts = path.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = value
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)

    def info(self) -> PodInfo:
        return parse_pod(self.obj())


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": {LABEL_HOSTNAME: name}},
            "spec": {},
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": name}],
            },
        }

    def capacity(self, **resources: str | int) -> NodeBuilder:
        """Sets capacity and allocatable (replacing the named resources)."""
        for k, v in resources.items():
            name = k.replace("_", "-") if k != "nvidia_gpu" else "nvidia.com/gpu"
            self._obj["status"]["capacity"][name] = str(v)
            self._obj["status"]["allocatable"][name] = str(v)
        return self

    def capacity_named(self, name: str, quantity: str | int) -> NodeBuilder:
        self._obj["status"]["capacity"][name] = str(quantity)
        self._obj["status"]["allocatable"][name] = str(quantity)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self._obj["metadata"]["labels"][key] = value
        return self

    def labels(self, **labels: str) -> NodeBuilder:
        self._obj["metadata"]["labels"].update(labels)
        return self

    def zone(self, zone: str) -> NodeBuilder:
        return self.label(LABEL_TOPOLOGY_ZONE, zone)

    def annotation(self, key: str, value: str) -> NodeBuilder:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self._obj["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def unschedulable(self, flag: bool = True) -> NodeBuilder:
        self._obj["spec"]["unschedulable"] = flag
        return self

    def not_ready(self) -> NodeBuilder:
        self._obj["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        return self

    def image(self, name: str, size_bytes: int) -> NodeBuilder:
        self._obj["status"].setdefault("images", []).append({"names": [name], "sizeBytes": size_bytes})
        return self

    def address(self, kind: str, address: str) -> NodeBuilder:
        self._obj["status"]["addresses"].append({"type": kind, "address": address})
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)

    def info(self) -> NodeInfo:
        return parse_node(self.obj())


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def node_infos(nodes: list[NodeInfo | NodeBuilder], pods: list[PodInfo | PodBuilder] = ()) -> list[NodeInfo]:  # type: ignore[assignment]
    """NodeInfos with each pod added to the node named in its spec.nodeName."""
    infos = [n.info() if isinstance(n, NodeBuilder) else n for n in nodes]
    by_name = {n.name: n for n in infos}
    for p in pods:
        pi = p.info() if isinstance(p, PodBuilder) else p
        if not pi.node_name:
            raise ValueError(f"pod {pi.key} has no spec.nodeName; use .node(name)")
        by_name[pi.node_name].add_pod(pi)
    return infos
