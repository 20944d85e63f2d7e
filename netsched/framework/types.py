"""Compact records for pods and nodes, parsed once from raw API JSON.

The hot path never touches kubernetes-client models or raw dicts: plugins read
these slotted records (and the node table in snapshot.py).  `raw` keeps the
original object for the rare reader that needs a field not lifted here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsched.framework.quantity import CPU, MEMORY, PODS
from netsched.framework.selectors import (
    NodeSelector,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

# Requests assumed for a container without one, used only when scoring (as kube does).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

# Well-known node labels (kube's core/v1 well_known_labels.go): the node's own name, its zone.
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"


@dataclass(slots=True, frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute

    def __str__(self) -> str:
        return f"{{{self.key}: {self.value}}}"


@dataclass(slots=True, frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        # An empty key with Equal is rejected by API validation; treat it as no match.
        return bool(self.key) and self.value == taint.value


@dataclass(slots=True, frozen=True)
class HostPort:
    protocol: str  # TCP | UDP | SCTP
    host_ip: str  # "0.0.0.0" means every address
    port: int


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An object an Event is about when it is not a pod (a plugin family's own kind):
    what kube's ObjectReference names.  EventRecorder.event takes a PodInfo or one of these."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class PodInfo:
    """A pod as the scheduler needs it."""

    uid: str
    namespace: str
    name: str
    resource_version: str = ""
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    nominated_node_name: str = ""
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    phase: str = "Pending"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: str = ""
    deleting: bool = False
    # Effective requests (max of init containers vs. sum of containers, plus overhead),
    # canonical units: cpu in millicores, others in base units.  No "pods" key.
    requests: dict[str, int] = field(default_factory=dict)
    # The same with kube's scoring defaults for containers without requests.
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    limits: dict[str, int] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    required_node_affinity: NodeSelector | None = None
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    required_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    host_network: bool = False  # shares the node's network namespace (its traffic is the node's)
    scheduling_gates: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    pvc_names: tuple[str, ...] = ()
    owner_kind: str = ""
    owner_name: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_affinity(self) -> bool:
        return bool(
            self.required_affinity
            or self.preferred_affinity
            or self.required_anti_affinity
            or self.preferred_anti_affinity
        )


@dataclass(slots=True)
class NodeInfo:
    """A node plus the pods placed on it (bound and assumed), with running totals."""

    name: str
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    allocatable: dict[str, int] = field(default_factory=dict)
    images: dict[str, int] = field(default_factory=dict)  # image name (each alias) -> size bytes
    addresses: tuple[tuple[str, str], ...] = ()  # (type, address): InternalIP, Hostname...
    pods: dict[str, PodInfo] = field(default_factory=dict)  # uid -> pod
    requested: dict[str, int] = field(default_factory=dict)  # includes "pods": count
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    used_ports: dict[tuple[str, str, int], int] = field(default_factory=dict)  # (ip, proto, port) -> refs
    pods_with_affinity: int = 0
    pods_with_required_anti_affinity: int = 0
    generation: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def add_pod(self, pod: PodInfo) -> None:
        if pod.uid in self.pods:
            self.remove_pod(pod)
        self.pods[pod.uid] = pod
        self._account(pod, +1)

    def remove_pod(self, pod: PodInfo) -> bool:
        old = self.pods.pop(pod.uid, None)
        if old is None:
            return False
        self._account(old, -1)
        return True

    def _account(self, pod: PodInfo, sign: int) -> None:
        req = self.requested
        for name, amount in pod.requests.items():
            req[name] = req.get(name, 0) + sign * amount
        req[PODS] = req.get(PODS, 0) + sign
        self.nonzero_cpu += sign * pod.nonzero_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        for hp in pod.host_ports:
            k = (hp.host_ip, hp.protocol, hp.port)
            n = self.used_ports.get(k, 0) + sign
            if n > 0:
                self.used_ports[k] = n
            else:
                self.used_ports.pop(k, None)
        if pod.has_affinity:
            self.pods_with_affinity += sign
        if pod.required_anti_affinity:
            self.pods_with_required_anti_affinity += sign

    def clone(self) -> NodeInfo:
        """A copy whose pod set and totals can change without touching this one."""
        return NodeInfo(
            name=self.name,
            uid=self.uid,
            labels=self.labels,
            annotations=self.annotations,
            taints=self.taints,
            unschedulable=self.unschedulable,
            ready=self.ready,
            allocatable=self.allocatable,
            images=self.images,
            addresses=self.addresses,
            pods=dict(self.pods),
            requested=dict(self.requested),
            nonzero_cpu=self.nonzero_cpu,
            nonzero_memory=self.nonzero_memory,
            used_ports=dict(self.used_ports),
            pods_with_affinity=self.pods_with_affinity,
            pods_with_required_anti_affinity=self.pods_with_required_anti_affinity,
            generation=self.generation,
            raw=self.raw,
        )

    def free(self, resource: str) -> int:
        return self.allocatable.get(resource, 0) - self.requested.get(resource, 0)


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod waiting in the scheduling queue, with its queueing history."""

    pod: PodInfo
    timestamp: float  # when it (re-)entered the active queue; QueueSort tie-breaker
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: frozenset[str] = frozenset()
    pending_plugins: frozenset[str] = frozenset()
    gated: bool = False


__all__ = [
    "CPU",
    "MEMORY",
    "PODS",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "HostPort",
    "NodeInfo",
    "PodInfo",
    "QueuedPodInfo",
    "Taint",
    "Toleration",
]
