"""Storage in a scenario: StorageClasses, PersistentVolumes and claims, and the PV controller.

    volumes:
      storageClasses: [{metadata: {name: fast}, provisioner: csi.example.com,
                        volumeBindingMode: WaitForFirstConsumer}]
      persistentVolumes: [...]           # v1 PersistentVolume objects
      persistentVolumeClaims: [...]      # v1 PersistentVolumeClaim objects (namespace default "default")
      claimPerPod: {storageClass: fast, size: 10Gi, accessModes: [ReadWriteOnce]}

`claimPerPod` gives every pod of `pods` its own claim "<pod>-data" (a
StatefulSet's volumeClaimTemplate).  The objects go through the scheduler's
informer path (InMemoryCluster.add_object); their fields are checked by the
volume plugins, which report a bad one as an event on the pod.

Nothing else in a simulation binds claims, so SimulatedPVController plays
kube's PV controller and an external provisioner: a claim given
`volume.kubernetes.io/selected-node` gets a PV in that node's zone (or pinned
to the node when it has no zone) and is bound to it; a PV whose claimRef the
scheduler set binds its claim.  It acts at once, inside the write, so PreBind
finds every claim bound without simulated time passing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netsched.cache.objects import ObjectStore
from netsched.framework.fields import Fields, join
from netsched.framework.types import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE
from netsched.simulate.generators import named_object

PVS = "persistentvolumes"
PVCS = "persistentvolumeclaims"
STORAGECLASSES = "storage.k8s.io/storageclasses"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
_SECTIONS = {"storageClasses": STORAGECLASSES, "persistentVolumes": PVS, "persistentVolumeClaims": PVCS}
Obj = dict[str, Any]


@dataclass
class Volumes:
    objects: dict[str, list[Obj]] = field(default_factory=dict)  # resource key -> raw objects
    claim_per_pod: Obj | None = None  # the PVC spec each pod gets

    def __bool__(self) -> bool:
        return bool(self.claim_per_pod) or any(self.objects.values())


def decode_volumes(f: Fields) -> Volumes:
    out = Volumes()
    for section, key in _SECTIONS.items():
        objs = []
        for i, raw in enumerate(f.list(section)):
            path = join(join(f.path, section), i)
            meta = named_object(raw, path, f.errs)
            if meta is None:
                continue
            obj = copy.deepcopy(raw)
            obj["metadata"].setdefault("resourceVersion", "1")
            if key == PVCS:
                obj["metadata"].setdefault("namespace", "default")
                obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['namespace']}-{meta['name']}")
            objs.append(obj)
        out.objects[key] = objs
    if f.has("claimPerPod"):
        c = f.sub("claimPerPod")
        spec: Obj = {
            "storageClassName": c.str("storageClass", ""),
            "resources": {"requests": {"storage": c.str("size", "1Gi")}},
            "accessModes": c.list("accessModes") or ["ReadWriteOnce"],
        }
        c.finish()
        out.claim_per_pod = spec
    f.finish()
    return out


def give_claims(pods: list[Obj], spec: Obj) -> list[Obj]:
    """A claim "<pod>-data" per pod (added to the pod's volumes, in place); the claims."""
    claims = []
    for pod in pods:
        meta = pod["metadata"]
        ns, name = meta.get("namespace") or "default", f"{meta['name']}-data"
        pod.setdefault("spec", {}).setdefault("volumes", []).append(
            {"name": "data", "persistentVolumeClaim": {"claimName": name}}
        )
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "uid": f"uid-{ns}-{name}",
                    "resourceVersion": "1",
                },
                "spec": copy.deepcopy(spec),
                "status": {"phase": "Pending"},
            }
        )
    return claims


def bound_claim(claim: Mapping[str, Any], volume: str, rv: str) -> Obj:
    """The claim as the PV controller leaves it once bound to `volume`."""
    out = copy.deepcopy(dict(claim))
    out["metadata"]["annotations"] = {**(out["metadata"].get("annotations") or {}), BIND_COMPLETED: "yes"}
    out["metadata"]["resourceVersion"] = rv
    out["spec"]["volumeName"] = volume
    out["status"] = {"phase": "Bound"}
    return out


def provisioned_volume(claim: Mapping[str, Any], name: str, node: str, labels: Mapping[str, str]) -> Obj:
    """The PV a provisioner creates for `claim` on `node`: its size, modes and class, bound to
    it, reachable from the node's zone (or the node alone when it has none)."""
    spec, meta = claim.get("spec") or {}, claim["metadata"]
    zone, host = LABEL_TOPOLOGY_ZONE, LABEL_HOSTNAME
    key, value = (zone, labels[zone]) if zone in labels else (host, labels.get(host, node))
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "uid": f"uid-pv-{name}", "resourceVersion": "1", "labels": {}},
        "spec": {
            "capacity": {"storage": (spec.get("resources") or {}).get("requests", {}).get("storage", "1Gi")},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "storageClassName": spec.get("storageClassName") or "",
            "claimRef": {"namespace": meta["namespace"], "name": meta["name"], "uid": meta.get("uid", "")},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                    ]
                }
            },
        },
        "status": {"phase": "Bound"},
    }


class SimulatedPVController:
    """Binds and provisions inside the store's change callbacks (see the module docstring)."""

    def __init__(self, store: ObjectStore, node_labels: Mapping[str, Mapping[str, str]]) -> None:
        self._store = store
        self._labels = node_labels
        self.provisioned = 0
        store.subscribe(self._on_change)

    def _on_change(self, key: str, kind: str, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            return
        if key == PVCS:
            self._on_claim(new)
        elif key == PVS:
            self._on_volume(new)

    def _next_rv(self, obj: Mapping[str, Any]) -> str:
        try:
            return str(int(obj["metadata"].get("resourceVersion") or 0) + 1)
        except ValueError:
            return "1"

    def _on_claim(self, claim: Mapping[str, Any]) -> None:
        meta = claim["metadata"]
        node = (meta.get("annotations") or {}).get(SELECTED_NODE)
        if not node or (claim.get("spec") or {}).get("volumeName"):
            return
        name = f"pvc-{meta.get('uid') or meta['name']}"
        self._store.apply(PVS, "ADDED", provisioned_volume(claim, name, node, self._labels.get(node, {})))
        self.provisioned += 1
        self._store.apply(PVCS, "MODIFIED", bound_claim(claim, name, self._next_rv(claim)))

    def _on_volume(self, volume: Mapping[str, Any]) -> None:
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or (volume.get("status") or {}).get("phase") == "Bound":
            return
        claim = self._store.get(PVCS, str(ref.get("namespace") or ""), str(ref.get("name") or ""))
        if claim is None:
            return
        bound = copy.deepcopy(dict(volume))
        bound["status"] = {"phase": "Bound"}
        bound["metadata"]["resourceVersion"] = self._next_rv(volume)
        self._store.apply(PVS, "MODIFIED", bound)
        self._store.apply(
            PVCS, "MODIFIED", bound_claim(claim, str(volume["metadata"]["name"]), self._next_rv(claim))
        )
