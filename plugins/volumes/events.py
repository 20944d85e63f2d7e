"""Queueing hints shared by the volume plugins (kube v1.31 EventsToRegister of each).

A pod parked by a volume plugin is retried only on a change to the storage
objects that plugin reads, and only when the change can matter to that pod:
one of its own claims created or changed, a StorageClass created or its
allowedTopologies changed, more CSI storage capacity published, an assigned
pod that used volumes deleted.  Object events carry the raw objects (old is
None for a creation); an object the hint cannot read means Queue, so a
malformed object can only cost an attempt, never strand a pod.
"""

from __future__ import annotations

from typing import Any

from netsched.framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueueingHint,
    QueueingHintFn,
)

from .objects import Capacity, VolumeObjectError, parse_capacity
from .pod import pod_claims, pod_volumes

PV = "PersistentVolume"
PVC = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"

ADD_OR_UPDATE = ActionType.ADD | ActionType.UPDATE


def _meta(raw: Any) -> dict[str, Any]:
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    return meta if isinstance(meta, dict) else {}


def claim_of_pod(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Queue if the claim created or changed is one of the pod's (same namespace, same name)."""
    meta = _meta(new if new is not None else old)
    if not meta.get("name"):
        return QueueingHint.QUEUE
    if str(meta.get("namespace") or "default") != pod.namespace:
        return QueueingHint.SKIP
    names = {c.name for c in pod_claims(pod)}
    return QueueingHint.QUEUE if meta["name"] in names else QueueingHint.SKIP


def storage_class_topology(_pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Queue on a new class, or a class whose allowedTopologies changed (the binding mode is
    immutable, so nothing else in an update can help)."""
    if old is None or not isinstance(old, dict) or not isinstance(new, dict):
        return QueueingHint.QUEUE
    same = old.get("allowedTopologies") == new.get("allowedTopologies")
    return QueueingHint.SKIP if same else QueueingHint.QUEUE


def capacity_grew(_pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Queue on new capacity, or on a larger usable limit (maximumVolumeSize when set, else
    capacity), as kube's isSchedulableAfterCSIStorageCapacityChange."""
    if old is None:
        return QueueingHint.QUEUE
    try:
        before, after = parse_capacity(old), parse_capacity(new)
    except (VolumeObjectError, AttributeError, TypeError):
        return QueueingHint.QUEUE

    def limit(c: Capacity) -> int | None:
        return c.maximum_volume_size if c.maximum_volume_size is not None else c.capacity

    was, now = limit(before), limit(after)
    return QueueingHint.QUEUE if now is not None and (was is None or now > was) else QueueingHint.SKIP


def released_volumes(_pod: PodInfo, old: Any, _new: Any) -> QueueingHint:
    """Queue on the deletion of an assigned pod that used volumes (it frees an attachment, a
    ReadWriteOncePod claim or a disk); a pod without volumes frees none of them."""
    if not isinstance(old, PodInfo) or not old.node_name:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if old.pvc_names or pod_volumes(old) else QueueingHint.SKIP


def event(resource: str, action: ActionType, hint: QueueingHintFn | None = None) -> ClusterEventWithHint:
    return ClusterEventWithHint(ClusterEvent(resource, action), hint)


NODE_ADD_OR_LABEL = event(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
CLAIMS = event(PVC, ADD_OR_UPDATE, claim_of_pod)
CLASSES = event(STORAGE_CLASS, ADD_OR_UPDATE, storage_class_topology)
CAPACITIES = event(CSI_STORAGE_CAPACITY, ADD_OR_UPDATE, capacity_grew)
DRIVERS = event(CSI_DRIVER, ADD_OR_UPDATE)
VOLUMES = event(PV, ADD_OR_UPDATE)
CSI_NODES = event(CSI_NODE, ADD_OR_UPDATE)
POD_RELEASES = event(ASSIGNED_POD, ActionType.DELETE, released_volumes)
NODE_ADD = event(NODE, ActionType.ADD)
