"""The kinds the fake Kubernetes API server serves, and how requests and hooks name them.

One table: a kind the scheduler (or a plugin) lists, watches or writes must be
in it, with its group, version, scope and whether it has a status subresource;
teaching the fake a new kind starts here.  The store keeps objects of these
kinds, the HTTP layer finds one from a URL (group, version, plural), the test
hooks from a short name ("pods", "coordination.k8s.io/leases").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource; `key` is the name the Python hooks use ("pods", "events.k8s.io/events")."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    has_status: bool = False
    # metadata.generation starts at 1 and counts spec changes (kinds whose status reports the
    # observedGeneration a controller last acted on).
    generation: bool = False

    @property
    def key(self) -> str:
        return f"{self.group}/{self.plural}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """The name used in upstream error messages: "pods", "leases.coordination.k8s.io"."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "Namespace", namespaced=False, has_status=True),
    ResourceType("", "v1", "nodes", "Node", namespaced=False, has_status=True),
    ResourceType("", "v1", "pods", "Pod", namespaced=True, has_status=True),
    ResourceType("", "v1", "events", "Event", namespaced=True),
    ResourceType("events.k8s.io", "v1", "events", "Event", namespaced=True),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True),
    ResourceType(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        namespaced=True,
        has_status=True,
        generation=True,
    ),
    ResourceType(
        "scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", namespaced=True, has_status=True
    ),
    ResourceType(
        "appgroup.diktyo.x-k8s.io", "v1alpha1", "appgroups", "AppGroup", namespaced=True, has_status=True
    ),
    ResourceType("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False, has_status=True),
    ResourceType(
        "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True, has_status=True
    ),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False),
    ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", namespaced=False),
    ResourceType("storage.k8s.io", "v1", "csidrivers", "CSIDriver", namespaced=False),
    ResourceType("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", namespaced=True),
    # What deploy/'s manifests create, so tests can apply them as written (and the RBAC ones
    # answer SubjectAccessReviews: netsched.fakeapi.rbac); serviceaccounts/token mints tokens.
    ResourceType("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True),
    ResourceType("", "v1", "secrets", "Secret", namespaced=True),
    ResourceType("", "v1", "configmaps", "ConfigMap", namespaced=True),
    ResourceType("", "v1", "services", "Service", namespaced=True, has_status=True),
    ResourceType("apps", "v1", "deployments", "Deployment", namespaced=True, has_status=True),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
    ResourceType(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
    ),
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", namespaced=True),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", namespaced=True),
    ResourceType("monitoring.coreos.com", "v1", "servicemonitors", "ServiceMonitor", namespaced=True),
    ResourceType("monitoring.coreos.com", "v1", "podmonitors", "PodMonitor", namespaced=True),
    ResourceType("monitoring.coreos.com", "v1", "prometheusrules", "PrometheusRule", namespaced=True),
    ResourceType(
        "apps", "v1", "replicasets", "ReplicaSet", namespaced=True, has_status=True, generation=True
    ),
)
NAMESPACES = RESOURCES[0]
PODS = RESOURCES[2]
PDBS = next(rt for rt in RESOURCES if rt.key == "policy/poddisruptionbudgets")
REPLICASETS = next(rt for rt in RESOURCES if rt.key == "apps/replicasets")


def resource_of(api_version: str, kind: str) -> ResourceType | None:
    """The served type of a manifest's apiVersion and kind (None when the fake does not serve it)."""
    group, _, version = api_version.rpartition("/")
    for rt in RESOURCES:
        if (rt.group, rt.version, rt.kind) == (group, version, kind):
            return rt
    return None


def resolve_resource(name: str) -> ResourceType:
    """Map a hook name to its type: "group/plural", or a bare plural (core first, else unique)."""
    for rt in RESOURCES:
        if name == rt.key:
            return rt
    matches = [rt for rt in RESOURCES if rt.plural == name]
    if len(matches) == 1:
        return matches[0]
    raise KeyError(f"unknown resource {name!r}; use one of {[rt.key for rt in RESOURCES]}")


def find_resource(group: str, version: str, plural: str) -> ResourceType | None:
    for rt in RESOURCES:
        if (rt.group, rt.version, rt.plural) == (group, version, plural):
            return rt
    return None
