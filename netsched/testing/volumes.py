"""Raw storage objects for tests, simulations and benchmarks: PVs, claims, StorageClasses, CSI.

Each returns the dict the API server would (enough of it), ready for
`build_framework(objects=volume_objects(...))`, FakeAPIServer.create or a
simulate scenario.  `bind_claim` / `provision` play the PV controller's part,
which nothing runs in the fake cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from netsched.fakeapi import FakeAPIServer
from netsched.framework.types import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE
from netsched.testing.controllers import StoreController

PVS = "persistentvolumes"
PVCS = "persistentvolumeclaims"
STORAGECLASSES = "storage.k8s.io/storageclasses"
CSINODES = "storage.k8s.io/csinodes"
CSIDRIVERS = "storage.k8s.io/csidrivers"
CSISTORAGECAPACITIES = "storage.k8s.io/csistoragecapacities"
ZONE, HOSTNAME = LABEL_TOPOLOGY_ZONE, LABEL_HOSTNAME  # short names for tests
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
WFFC = "WaitForFirstConsumer"
Obj = dict[str, Any]


def node_affinity(key: str, *values: str, operator: str = "In") -> Obj:
    """A PV's spec.nodeAffinity with one term of one requirement."""
    req: Obj = {"key": key, "operator": operator}
    if values:
        req["values"] = list(values)
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [req]}]}}


def pvc(
    name: str,
    *,
    namespace: str = "default",
    storage_class: str | None = "",
    size: str | None = "1Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    volume: str = "",
    bound: bool = False,
    annotations: Mapping[str, str] | None = None,
    selector: Obj | None = None,
    owner_uid: str = "",
    uid: str | None = None,
    rv: str = "1",
) -> Obj:
    """A claim; `bound` marks it bound to `volume` as the PV controller would."""
    ann = dict(annotations or {})
    if bound:
        ann[BIND_COMPLETED] = "yes"
    spec: Obj = {"accessModes": list(modes)}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if size is not None:
        spec["resources"] = {"requests": {"storage": size}}
    if volume:
        spec["volumeName"] = volume
    if selector is not None:
        spec["selector"] = selector
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": uid if uid is not None else f"uid-{namespace}-{name}",
        "resourceVersion": rv,
        "annotations": ann,
    }
    if owner_uid:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "owner", "uid": owner_uid, "controller": True}]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Bound" if bound else "Pending"},
    }


def pv(
    name: str,
    *,
    storage_class: str = "",
    size: str = "1Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    affinity: Obj | None = None,
    labels: Mapping[str, str] | None = None,
    claim: Obj | None = None,
    phase: str | None = None,
    csi: tuple[str, str] | None = None,
    rv: str = "1",
) -> Obj:
    """A PV; `claim` (a pvc() dict) pre-binds it to that claim."""
    spec: Obj = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": storage_class}
    if affinity is not None:
        spec["nodeAffinity"] = affinity
    if claim is not None:
        m = claim["metadata"]
        spec["claimRef"] = {"namespace": m["namespace"], "name": m["name"], "uid": m.get("uid", "")}
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "uid": f"uid-pv-{name}",
            "resourceVersion": rv,
            "labels": dict(labels or {}),
        },
        "spec": spec,
        "status": {"phase": phase or ("Bound" if claim is not None else "Available")},
    }


def storage_class(
    name: str,
    *,
    provisioner: str = "csi.example.com",
    mode: str = WFFC,
    topologies: Mapping[str, Sequence[str]] | None = None,
    parameters: Mapping[str, str] | None = None,
) -> Obj:
    out: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "resourceVersion": "1"},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if parameters:
        out["parameters"] = dict(parameters)
    if topologies:
        out["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in topologies.items()]}
        ]
    return out


def csi_node(name: str, drivers: Mapping[str, int | None]) -> Obj:
    items = []
    for driver, count in drivers.items():
        d: Obj = {"name": driver, "nodeID": name}
        if count is not None:
            d["allocatable"] = {"count": count}
        items.append(d)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": items},
    }


def csi_driver(name: str, *, storage_capacity: bool = True) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": storage_capacity},
    }


def capacity(
    name: str,
    storage_class_name: str,
    size: str | None,
    *,
    topology: Mapping[str, str] | None = None,
    maximum_volume_size: str | None = None,
    namespace: str = "kube-system",
) -> Obj:
    out: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": storage_class_name,
    }
    if size is not None:
        out["capacity"] = size
    if maximum_volume_size is not None:
        out["maximumVolumeSize"] = maximum_volume_size
    if topology is not None:
        out["nodeTopology"] = {"matchLabels": dict(topology)}
    return out


def volume_objects(
    *,
    pvs: Iterable[Obj] = (),
    pvcs: Iterable[Obj] = (),
    classes: Iterable[Obj] = (),
    csi_nodes: Iterable[Obj] = (),
    csi_drivers: Iterable[Obj] = (),
    capacities: Iterable[Obj] = (),
) -> dict[str, list[Obj]]:
    """The `objects=` mapping of build_framework (by resource key)."""
    return {
        PVS: list(pvs),
        PVCS: list(pvcs),
        STORAGECLASSES: list(classes),
        CSINODES: list(csi_nodes),
        CSIDRIVERS: list(csi_drivers),
        CSISTORAGECAPACITIES: list(capacities),
    }


def bind_claim(claim: Obj, volume: str) -> Obj:
    """The claim as the PV controller leaves it once bound to `volume` (a copy)."""
    out = {**claim, "metadata": {**claim["metadata"]}, "spec": {**claim["spec"], "volumeName": volume}}
    out["metadata"]["annotations"] = {**(claim["metadata"].get("annotations") or {}), BIND_COMPLETED: "yes"}
    out["status"] = {"phase": "Bound"}
    return out


def provision(claim: Obj, name: str, node_labels: Mapping[str, str], *, key: str = ZONE) -> Obj:
    """The PV an external provisioner creates for `claim` on the selected node: its size and
    class, pre-bound to it, with node affinity to the node's `key` label."""
    spec = claim["spec"]
    out = pv(
        name,
        storage_class=str(spec.get("storageClassName") or ""),
        size=str(spec.get("resources", {}).get("requests", {}).get("storage", "1Gi")),
        modes=spec.get("accessModes") or ("ReadWriteOnce",),
        affinity=node_affinity(key, node_labels[key]) if key in node_labels else None,
        claim=claim,
    )
    return out


class FakePVController(StoreController):
    """The PV controller and an external provisioner, for a FakeAPIServer (nothing else runs them).

    It watches claims and volumes through the server's store (no HTTP): a claim
    given `volume.kubernetes.io/selected-node` gets a PV provisioned in the
    node's zone and is bound to it; a PV whose claimRef the scheduler set binds
    its claim.  `provision=False` / `bind=False` switch a half off (to test
    PreBind's timeout).  Use as a context manager.
    """

    def __init__(self, server: FakeAPIServer, *, provision: bool = True, bind: bool = True) -> None:
        super().__init__(server, (PVCS, PVS), "fake-pv-controller")
        self.provision, self.bind = provision, bind
        self.provisioned: list[str] = []

    def handle(self, key: str, event_type: str, obj: Obj) -> None:
        if event_type == "DELETED":
            return
        if key == PVCS:
            self._on_claim(obj)
        else:
            self._on_volume(obj)

    def _on_claim(self, claim: Obj) -> None:
        meta, spec = claim["metadata"], claim.get("spec") or {}
        node = (meta.get("annotations") or {}).get(SELECTED_NODE)
        if not self.provision or not node or spec.get("volumeName"):
            return
        labels = self.server.get("nodes", node)["metadata"].get("labels") or {}
        name = f"pvc-{meta.get('uid') or meta['name']}"
        self.server.create(PVS, provision(claim, name, labels))
        self.provisioned.append(name)
        self._bind(meta["namespace"], meta["name"], name)

    def _on_volume(self, volume: Obj) -> None:
        ref = (volume.get("spec") or {}).get("claimRef")
        if not self.bind or not ref or (volume.get("status") or {}).get("phase") == "Bound":
            return
        self.server.patch(PVS, volume["metadata"]["name"], {"status": {"phase": "Bound"}})
        self._bind(ref["namespace"], ref["name"], volume["metadata"]["name"])

    def _bind(self, namespace: str, name: str, volume: str) -> None:
        patch = {
            "metadata": {"annotations": {BIND_COMPLETED: "yes"}},
            "spec": {"volumeName": volume},
            "status": {"phase": "Bound"},
        }
        self.server.patch(PVCS, name, patch, namespace)
