"""The kinds the fake Kubernetes API server serves, and how requests and hooks name them.

One table: a kind the scheduler (or a plugin) lists, watches or writes must be
in it, with its group, version, scope and whether it has a status subresource;
teaching the fake a new kind starts here.  The store keeps objects of these
kinds, the HTTP layer finds one from a URL (group, version, plural), the test
hooks from a short name ("pods", "coordination.k8s.io/leases").

A kind marked `crd` (scheduler-plugins' PodGroup and AppGroup) is served as
kube-apiserver serves a custom resource: only while its CustomResourceDefinition
exists with its version served.  Until then its paths answer 404 and discovery
(GET /apis/GROUP/VERSION, `discovery()`) does not list it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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
    # A CustomResourceDefinition's kind: served only while its CRD (named `crd_name`) is stored.
    crd: bool = False

    @property
    def crd_name(self) -> str:
        """The name of the CustomResourceDefinition that serves it: "podgroups.scheduling.x-k8s.io"."""
        return f"{self.plural}.{self.group}"

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
        "scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", namespaced=True, has_status=True, crd=True
    ),
    ResourceType(
        "appgroup.diktyo.x-k8s.io",
        "v1alpha1",
        "appgroups",
        "AppGroup",
        namespaced=True,
        has_status=True,
        crd=True,
    ),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        has_status=True,
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
CRDS = next(rt for rt in RESOURCES if rt.key == "apiextensions.k8s.io/customresourcedefinitions")
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def served_by(rt: ResourceType, crd: dict[str, Any] | None) -> bool:
    """Whether `rt` is served given its stored CustomResourceDefinition (None: not created);
    a built-in kind always is, a CRD's kind while the CRD serves its version."""
    if not rt.crd:
        return True
    versions = ((crd or {}).get("spec") or {}).get("versions") or []
    return any(isinstance(v, dict) and v.get("name") == rt.version and v.get("served") for v in versions)


def crd_manifest(rt: ResourceType) -> dict[str, Any]:
    """The CustomResourceDefinition that makes kube serve `rt` (no schema: the fake checks none)."""
    version: dict[str, Any] = {"name": rt.version, "served": True, "storage": True}
    if rt.has_status:
        version["subresources"] = {"status": {}}
    names = {"kind": rt.kind, "listKind": f"{rt.kind}List", "plural": rt.plural, "singular": rt.kind.lower()}
    return {
        "apiVersion": CRDS.api_version,
        "kind": CRDS.kind,
        "metadata": {"name": rt.crd_name},
        "spec": {
            "group": rt.group,
            "names": names,
            "scope": "Namespaced" if rt.namespaced else "Cluster",
            "versions": [version],
        },
    }


def discovery(group: str, version: str, serves: Callable[[ResourceType], bool]) -> dict[str, Any] | None:
    """kube's APIResourceList for GET /api/v1 or /apis/GROUP/VERSION: the kinds of that
    group/version served now; None (a 404) when it serves none."""
    served = [rt for rt in RESOURCES if (rt.group, rt.version) == (group, version) and serves(rt)]
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for rt in served:
        entry = {"name": rt.plural, "singularName": rt.kind.lower(), "namespaced": rt.namespaced}
        resources.append({**entry, "kind": rt.kind, "verbs": _VERBS})
        if rt.has_status:
            resources.append(
                {**entry, "name": f"{rt.plural}/status", "kind": rt.kind, "verbs": ["get", "patch", "update"]}
            )
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


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
