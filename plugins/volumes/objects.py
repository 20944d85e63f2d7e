"""PersistentVolume, PersistentVolumeClaim, StorageClass and CSI records, parsed from raw JSON.

Each parser takes the object as the API returned it and gives a frozen record
with exactly the fields the volume plugins read, or raises VolumeObjectError
naming the object ("PersistentVolume pv-1") and the field path
("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator").
Defaults follow the API server's defaulting (volumeMode Filesystem,
volumeBindingMode Immediate, reclaim of absent fields as empty).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from netsched.framework import (
    LabelSelector,
    NodeSelector,
    PodParseError,
    QuantityError,
    parse_label_selector,
    parse_node_selector,
    to_canonical,
)

PVS_KEY = "persistentvolumes"
PVCS_KEY = "persistentvolumeclaims"
STORAGECLASSES_KEY = "storage.k8s.io/storageclasses"
CSINODES_KEY = "storage.k8s.io/csinodes"
CSIDRIVERS_KEY = "storage.k8s.io/csidrivers"
CSISTORAGECAPACITIES_KEY = "storage.k8s.io/csistoragecapacities"

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
# The pre-GA way to name a claim's class, still honoured by kube (GetPersistentVolumeClaimClass).
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
# A StorageClass with this provisioner cannot provision (local volumes, static only).
NO_PROVISIONER = "kubernetes.io/no-provisioner"
FILESYSTEM = "Filesystem"
STORAGE = "storage"

_CSI_LIMIT_PREFIX = "attachable-volumes-csi-"
_RESOURCE_NAME_LIMIT = 63


class VolumeObjectError(ValueError):
    """A storage object the plugins cannot interpret: `what` names it, `path` the field."""

    def __init__(self, what: str, path: str, message: str) -> None:
        super().__init__(f"{what}: {path}: {message}")
        self.what = what
        self.path = path
        self.detail = message


def _meta(raw: Mapping[str, object]) -> Mapping[str, object]:
    meta = raw.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(raw: Mapping[str, object], what: str) -> Mapping[str, object]:
    spec = raw.get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise VolumeObjectError(what, "spec", f"expected an object, got {type(spec).__name__}")
    return spec


def _str_map(obj: object, what: str, path: str) -> dict[str, str]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping) or not all(isinstance(v, str) for v in obj.values()):
        raise VolumeObjectError(what, path, "expected a map of strings")
    return dict(obj)


def _modes(obj: object, what: str, path: str) -> frozenset[str]:
    if obj is None:
        return frozenset()
    if not isinstance(obj, list) or not all(isinstance(m, str) for m in obj):
        raise VolumeObjectError(what, path, "expected a list of access modes")
    return frozenset(obj)


def _quantity(obj: object, what: str, path: str) -> int | None:
    if obj is None:
        return None
    try:
        value = to_canonical(STORAGE, obj)
    except QuantityError as e:
        raise VolumeObjectError(what, path, f"invalid quantity {obj!r}: {e}") from e
    if value < 0:
        raise VolumeObjectError(what, path, f"must be non-negative, got {obj!r}")
    return value


def _name(raw: Mapping[str, object]) -> tuple[str, str, str, str]:
    meta = _meta(raw)
    return (
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(meta.get("uid") or ""),
        str(meta.get("resourceVersion") or ""),
    )


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class Claim:
    """A PersistentVolumeClaim as the volume plugins see it."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    storage_class: str  # "" = none (kube's GetPersistentVolumeClaimClass)
    volume_name: str
    access_modes: frozenset[str]
    request: int | None  # spec.resources.requests.storage in bytes; None when absent
    selector: LabelSelector | None
    volume_mode: str
    annotations: Mapping[str, str]
    owner_uids: tuple[str, ...]
    deleting: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        """kube's isPVCFullyBound: the PV controller finished binding it."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations

    @property
    def selected_node(self) -> str | None:
        return self.annotations.get(ANN_SELECTED_NODE)

    def describe(self) -> str:
        return f"PersistentVolumeClaim {self.key}"


def parse_claim(raw: Mapping[str, object]) -> Claim:
    ns, name, uid, rv = _name(raw)
    what = f"PersistentVolumeClaim {ns}/{name}"
    meta = _meta(raw)
    spec = _spec(raw, what)
    annotations = _str_map(meta.get("annotations"), what, "metadata.annotations")
    cls = spec.get("storageClassName")
    if cls is None:
        cls = annotations.get(ANN_BETA_STORAGE_CLASS, "")
    if not isinstance(cls, str):
        raise VolumeObjectError(what, "spec.storageClassName", "expected a string")
    resources = spec.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise VolumeObjectError(what, "spec.resources", "expected an object")
    requests = resources.get("requests") or {}
    if not isinstance(requests, Mapping):
        raise VolumeObjectError(what, "spec.resources.requests", "expected an object")
    try:
        selector = parse_label_selector(spec.get("selector"), "spec.selector")
    except PodParseError as e:
        raise VolumeObjectError(what, e.path, e.detail) from e
    refs = meta.get("ownerReferences")
    owners = tuple(
        str(ref.get("uid") or "")
        for ref in (refs if isinstance(refs, list) else ())
        if isinstance(ref, Mapping) and ref.get("controller")
    )
    return Claim(
        namespace=ns,
        name=name,
        uid=uid,
        resource_version=rv,
        storage_class=cls,
        volume_name=str(spec.get("volumeName") or ""),
        access_modes=_modes(spec.get("accessModes"), what, "spec.accessModes"),
        request=_quantity(requests.get(STORAGE), what, "spec.resources.requests.storage"),
        selector=selector,
        volume_mode=str(spec.get("volumeMode") or FILESYSTEM),
        annotations=annotations,
        owner_uids=owners,
        deleting=bool(meta.get("deletionTimestamp")),
    )


@dataclass(frozen=True, slots=True)
class Volume:
    """A PersistentVolume as the volume plugins see it."""

    name: str
    uid: str
    resource_version: str
    storage_class: str
    capacity: int  # bytes; 0 when absent
    access_modes: frozenset[str]
    node_affinity: NodeSelector | None  # spec.nodeAffinity.required
    claim_ref: ClaimRef | None
    phase: str
    labels: Mapping[str, str]
    volume_mode: str
    csi_driver: str
    csi_handle: str
    deleting: bool

    def describe(self) -> str:
        return f"PersistentVolume {self.name}"

    def node_affinity_matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        """kube's CheckNodeAffinity: no required affinity matches every node."""
        return self.node_affinity is None or self.node_affinity.matches(labels, node_name)

    def bound_to(self, claim: Claim) -> bool:
        """kube's IsVolumeBoundToClaim."""
        ref = self.claim_ref
        return (
            ref is not None
            and ref.name == claim.name
            and ref.namespace == claim.namespace
            and (not ref.uid or ref.uid == claim.uid)
        )


def parse_volume(raw: Mapping[str, object]) -> Volume:
    _, name, uid, rv = _name(raw)
    what = f"PersistentVolume {name}"
    meta = _meta(raw)
    spec = _spec(raw, what)
    capacity = spec.get("capacity") or {}
    if not isinstance(capacity, Mapping):
        raise VolumeObjectError(what, "spec.capacity", "expected an object")
    affinity = spec.get("nodeAffinity")
    selector = None
    if affinity is not None:
        if not isinstance(affinity, Mapping):
            raise VolumeObjectError(what, "spec.nodeAffinity", "expected an object")
        try:
            selector = parse_node_selector(affinity.get("required"), "spec.nodeAffinity.required")
        except PodParseError as e:
            raise VolumeObjectError(what, e.path, e.detail) from e
        if selector is not None and not selector.terms:
            raise VolumeObjectError(
                what, "spec.nodeAffinity.required.nodeSelectorTerms", "must have at least one term"
            )
    ref = spec.get("claimRef")
    claim_ref = None
    if ref is not None:
        if not isinstance(ref, Mapping):
            raise VolumeObjectError(what, "spec.claimRef", "expected an object")
        claim_ref = ClaimRef(
            str(ref.get("namespace") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")
        )
    csi = spec.get("csi")
    if csi is not None and not isinstance(csi, Mapping):
        raise VolumeObjectError(what, "spec.csi", "expected an object")
    status = raw.get("status")
    phase = str(status.get("phase") or "") if isinstance(status, Mapping) else ""
    return Volume(
        name=name,
        uid=uid,
        resource_version=rv,
        storage_class=str(spec.get("storageClassName") or ""),
        capacity=_quantity(capacity.get(STORAGE), what, "spec.capacity.storage") or 0,
        access_modes=_modes(spec.get("accessModes"), what, "spec.accessModes"),
        node_affinity=selector,
        claim_ref=claim_ref,
        phase=phase,
        labels=_str_map(meta.get("labels"), what, "metadata.labels"),
        volume_mode=str(spec.get("volumeMode") or FILESYSTEM),
        csi_driver=str(csi.get("driver") or "") if csi else "",
        csi_handle=str(csi.get("volumeHandle") or "") if csi else "",
        deleting=bool(meta.get("deletionTimestamp")),
    )


# (key, allowed values): one matchLabelExpressions entry of a topology selector term.
TopologyTerm = tuple[tuple[str, frozenset[str]], ...]


@dataclass(frozen=True, slots=True)
class StorageClassInfo:
    name: str
    provisioner: str
    binding_mode: str
    allowed_topologies: tuple[TopologyTerm, ...]
    # The provisioner's own settings (TopoLVM's device class, ...); immutable like the rest.
    parameters: Mapping[str, str] = field(default_factory=dict)

    @property
    def wait_for_first_consumer(self) -> bool:
        return self.binding_mode == WAIT_FOR_FIRST_CONSUMER

    def topology_allows(self, labels: Mapping[str, str]) -> bool:
        """kube's MatchTopologySelectorTerms: no terms allow every node; terms are ORed."""
        if not self.allowed_topologies:
            return True
        return any(all(labels.get(k) in vs for k, vs in term) for term in self.allowed_topologies)


def parse_storage_class(raw: Mapping[str, object]) -> StorageClassInfo:
    _, name, _, _ = _name(raw)
    what = f"StorageClass {name}"
    mode = raw.get("volumeBindingMode") or IMMEDIATE
    if mode not in (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER):
        raise VolumeObjectError(
            what,
            "volumeBindingMode",
            f'Unsupported value: {mode!r}: supported values: "{IMMEDIATE}", "{WAIT_FOR_FIRST_CONSUMER}"',
        )
    terms: list[TopologyTerm] = []
    topologies = raw.get("allowedTopologies") or []
    if not isinstance(topologies, list):
        raise VolumeObjectError(what, "allowedTopologies", "expected a list")
    for i, t in enumerate(topologies):
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs = t.get("matchLabelExpressions") if isinstance(t, Mapping) else None
        if not isinstance(exprs, list):
            raise VolumeObjectError(what, path, "expected a list")
        term = []
        for j, e in enumerate(exprs):
            key = e.get("key") if isinstance(e, Mapping) else None
            values = e.get("values") if isinstance(e, Mapping) else None
            if not isinstance(key, str) or not key:
                raise VolumeObjectError(what, f"{path}[{j}].key", "Required value")
            if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
                raise VolumeObjectError(what, f"{path}[{j}].values", "expected a non-empty list of strings")
            term.append((key, frozenset(values)))
        terms.append(tuple(term))
    parameters = _str_map(raw.get("parameters"), what, "parameters")
    return StorageClassInfo(name, str(raw.get("provisioner") or ""), str(mode), tuple(terms), parameters)


@dataclass(frozen=True, slots=True)
class CSINodeInfo:
    name: str
    # driver name -> allocatable attach count (None: the driver publishes no limit)
    limits: Mapping[str, int | None]


def parse_csi_node(raw: Mapping[str, object]) -> CSINodeInfo:
    _, name, _, _ = _name(raw)
    what = f"CSINode {name}"
    drivers = _spec(raw, what).get("drivers") or []
    if not isinstance(drivers, list):
        raise VolumeObjectError(what, "spec.drivers", "expected a list")
    limits: dict[str, int | None] = {}
    for i, d in enumerate(drivers):
        if not isinstance(d, Mapping) or not isinstance(d.get("name"), str):
            raise VolumeObjectError(what, f"spec.drivers[{i}].name", "Required value")
        alloc = d.get("allocatable")
        count = alloc.get("count") if isinstance(alloc, Mapping) else None
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise VolumeObjectError(what, f"spec.drivers[{i}].allocatable.count", f"invalid count {count!r}")
        limits[d["name"]] = count
    return CSINodeInfo(name, limits)


@dataclass(frozen=True, slots=True)
class CSIDriverInfo:
    name: str
    storage_capacity: bool


def parse_csi_driver(raw: Mapping[str, object]) -> CSIDriverInfo:
    _, name, _, _ = _name(raw)
    spec = _spec(raw, f"CSIDriver {name}")
    return CSIDriverInfo(name, spec.get("storageCapacity") is True)


@dataclass(frozen=True, slots=True)
class Capacity:
    """One CSIStorageCapacity: free space of a class in a topology segment."""

    namespace: str
    name: str
    storage_class: str
    capacity: int | None
    maximum_volume_size: int | None
    node_topology: LabelSelector | None

    def fits(self, size: int) -> bool:
        """kube's capacitySufficient: maximumVolumeSize, when given, is the more precise limit."""
        limit = self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity
        return limit is not None and limit >= size

    def reaches(self, labels: Mapping[str, str]) -> bool:
        """kube's nodeHasAccess: no topology means unavailable."""
        return self.node_topology is not None and self.node_topology.matches(labels)


def parse_capacity(raw: Mapping[str, object]) -> Capacity:
    ns, name, _, _ = _name(raw)
    what = f"CSIStorageCapacity {ns}/{name}"
    try:
        topology = parse_label_selector(raw.get("nodeTopology"), "nodeTopology")
    except PodParseError as e:
        raise VolumeObjectError(what, e.path, e.detail) from e
    return Capacity(
        namespace=ns,
        name=name,
        storage_class=str(raw.get("storageClassName") or ""),
        capacity=_quantity(raw.get("capacity"), what, "capacity"),
        maximum_volume_size=_quantity(raw.get("maximumVolumeSize"), what, "maximumVolumeSize"),
        node_topology=topology,
    )


def csi_attach_limit_key(driver: str) -> str:
    """kube's GetCSIAttachLimitKey: the per-driver limit name, hashed when too long."""
    if len(_CSI_LIMIT_PREFIX) + len(driver) < _RESOURCE_NAME_LIMIT:
        return _CSI_LIMIT_PREFIX + driver
    digest = hashlib.sha1(driver.encode(), usedforsecurity=False).hexdigest()[:16]
    return _CSI_LIMIT_PREFIX + driver[:23] + digest
