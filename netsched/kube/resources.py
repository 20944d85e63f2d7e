"""The resource types the scheduler lists and watches: one table entry each.

KubeAPI.list_raw / watch / reflector take a `Resource` and build the request
from it, so serving a new kind (a storage.k8s.io type, a CRD such as
scheduling.x-k8s.io PodGroups) is one entry here, not new methods. Every kind
is read as raw JSON over its REST path; a CRD needs nothing a built-in does not.

This module imports nothing heavy: code that only names a resource does not
pay for the official client.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# Pods kube-scheduler never needs to see: finished ones hold no resources.
ACTIVE_PODS_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True, slots=True)
class Resource:
    """One kind as the API serves it, and which of its objects the scheduler reads.

    `plural` names it in requests, logs and reflector threads. `group` "" is the
    core group (/api/v1); any other is served under /apis/GROUP/VERSION.
    `field_selector`, `label_selector` and `namespace` ("" for all namespaces)
    narrow every list and watch; `where()` returns a copy with other ones.
    `optional` marks a kind the cluster may not serve or RBAC may deny: its
    reflector runs on without it (see netsched.kube.reflector.Reflector).
    `kind` names it in queue events ("PersistentVolumeClaimAdd"); `requeue`
    says a change to one of its objects can make an unschedulable pod
    schedulable, so it moves them back to the queue (see netsched.assemble).
    `needed_by` names the plugins that read the kind: when set, it is listed and
    watched only if a profile enables one of them (its RBAC ships with them).
    `discover`: a CRD a cluster may well not have, whose absence is no fault (an
    optional kind a plugin can do without): the API's discovery
    (/apis/GROUP/VERSION) is asked before each list, and an API not served is
    skipped quietly (one line at -v 2) rather than listed into a 404 or 403.
    `rbac` names where the grant to read it ships ("deploy/optional/appgroup"):
    a 403 on the list says to apply it.
    """

    plural: str
    group: str = ""
    version: str = "v1"
    namespaced: bool = False
    field_selector: str = ""
    label_selector: str = ""
    namespace: str = ""
    optional: bool = False
    kind: str = ""
    requeue: bool = False
    needed_by: tuple[str, ...] = ()
    discover: bool = False
    rbac: str = ""

    def __post_init__(self) -> None:
        if self.namespace and not self.namespaced:
            raise ValueError(f"{self.plural} is cluster-scoped: it has no namespace {self.namespace!r}")
        if self.discover and not self.optional:
            raise ValueError(f"{self.plural}: discover is for optional kinds (an API not served is skipped)")

    def where(
        self,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        namespace: str | None = None,
    ) -> Resource:
        """This kind with other selectors or namespace; None keeps the current one, "" clears it."""
        return replace(
            self,
            field_selector=self.field_selector if field_selector is None else field_selector,
            label_selector=self.label_selector if label_selector is None else label_selector,
            namespace=self.namespace if namespace is None else namespace,
        )

    @property
    def key(self) -> str:
        """The name it is kept under in netsched.cache.ObjectStore (and the fake's hooks)."""
        return f"{self.group}/{self.plural}" if self.group else self.plural

    @property
    def path(self) -> str:
        """The collection's REST path, in one namespace or all."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"{root}{scope}/{self.plural}"

    @property
    def api_version(self) -> str:
        """Its group/version ("v1" for the core group), as discovery and manifests name it."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def selectors(self) -> list[tuple[str, str]]:
        """The selectors as query parameters, empty ones left out."""
        pairs = (("fieldSelector", self.field_selector), ("labelSelector", self.label_selector))
        return [(k, v) for k, v in pairs if v]


NODES = Resource("nodes", kind="Node")
# Without finished pods, as kube-scheduler.
PODS = Resource("pods", namespaced=True, field_selector=ACTIVE_PODS_SELECTOR, kind="Pod")
# Optional: without them (404/403) preemption ignores disruption budgets.
PODDISRUPTIONBUDGETS = Resource(
    "poddisruptionbudgets", group="policy", namespaced=True, optional=True, kind="PodDisruptionBudget"
)
# Read and written one object at a time, never watched (the Rebalancer's state: its
# cooldowns and moves in flight, so that a new leader honours the old one's).
CONFIGMAPS = Resource("configmaps", namespaced=True, kind="ConfigMap")
# Labels for InterPodAffinity's namespaceSelector; optional like PDBs.
NAMESPACES = Resource("namespaces", optional=True, kind="Namespace")
# Coscheduling's gangs (scheduler-plugins' CRD); watched only when a profile enables it.
PODGROUPS = Resource(
    "podgroups",
    group="scheduling.x-k8s.io",
    version="v1alpha1",
    namespaced=True,
    optional=True,
    kind="PodGroup",
    requeue=True,
    needed_by=("Coscheduling",),
    rbac="deploy/optional/coscheduling",
)
# scheduler-plugins' AppGroup (networkaware/Diktyo): TrafficAffinity's declared edges when the
# CRD is installed; watched only when a profile enables TrafficAffinity.  Most clusters have no
# such CRD and TrafficAffinity needs none (measured edges, annotations): discovery first.
APPGROUPS = Resource(
    "appgroups",
    group="appgroup.diktyo.x-k8s.io",
    version="v1alpha1",
    namespaced=True,
    optional=True,
    kind="AppGroup",
    needed_by=("TrafficAffinity",),
    discover=True,
    rbac="deploy/optional/appgroup",
)

# The volume plugins' kinds (plugins/volume_binding and friends). Optional: a cluster that
# does not serve one (no CSI storage capacity API, say) reads it as empty; every change
# can make a pod that failed on its volumes schedulable, so all of them requeue.
PERSISTENTVOLUMES = Resource("persistentvolumes", optional=True, kind="PersistentVolume", requeue=True)
PERSISTENTVOLUMECLAIMS = Resource(
    "persistentvolumeclaims", namespaced=True, optional=True, kind="PersistentVolumeClaim", requeue=True
)
STORAGECLASSES = Resource(
    "storageclasses", group="storage.k8s.io", optional=True, kind="StorageClass", requeue=True
)
CSINODES = Resource("csinodes", group="storage.k8s.io", optional=True, kind="CSINode", requeue=True)
CSIDRIVERS = Resource("csidrivers", group="storage.k8s.io", optional=True, kind="CSIDriver", requeue=True)
CSISTORAGECAPACITIES = Resource(
    "csistoragecapacities",
    group="storage.k8s.io",
    namespaced=True,
    optional=True,
    kind="CSIStorageCapacity",
    requeue=True,
)
VOLUME_KINDS: tuple[Resource, ...] = (
    PERSISTENTVOLUMES,
    PERSISTENTVOLUMECLAIMS,
    STORAGECLASSES,
    CSINODES,
    CSIDRIVERS,
    CSISTORAGECAPACITIES,
)

# Watched into netsched.cache.ObjectStore (by Resource.key) and read by plugins through
# Handle.objects; a new kind a plugin needs is one entry here (and its RBAC list/watch).
OBJECT_KINDS: tuple[Resource, ...] = (PODDISRUPTIONBUDGETS, NAMESPACES, PODGROUPS, APPGROUPS, *VOLUME_KINDS)

RESOURCES: tuple[Resource, ...] = (NODES, PODS, *OBJECT_KINDS)

__all__ = [
    "ACTIVE_PODS_SELECTOR",
    "CONFIGMAPS",
    "CSIDRIVERS",
    "CSINODES",
    "CSISTORAGECAPACITIES",
    "NAMESPACES",
    "NODES",
    "OBJECT_KINDS",
    "PERSISTENTVOLUMECLAIMS",
    "PERSISTENTVOLUMES",
    "PODDISRUPTIONBUDGETS",
    "PODGROUPS",
    "PODS",
    "RESOURCES",
    "STORAGECLASSES",
    "VOLUME_KINDS",
    "Resource",
]
