"""VolumeRestrictions: volumes that cannot be shared between pods.

Two rules, as kube v1.31's volumerestrictions plugin:
- ReadWriteOncePod: a claim with that access mode already used by a scheduled
  (or assumed) pod makes every node infeasible for a second pod
  ("node has pod using PersistentVolumeClaim with the same name and
  ReadWriteOncePod access mode", Unschedulable, so preemption may free it);
- the legacy same-disk conflicts on the node: the same GCE PD (unless every
  mount is read-only), AWS EBS volume, iSCSI IQN (unless all read-only), or RBD
  image on overlapping monitors in the same pool (unless all read-only)
  ("node(s) had no available disk").
PreFilter skips pods without such volumes; AddPod/RemovePod keep the
ReadWriteOncePod count right for preemption's what-ifs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from netsched.framework import (
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    Snapshot,
    Status,
    names,
)

from ..volumes import VolumeObjectError, VolumeReader, report_bad_object
from ..volumes.events import CLAIMS, NODE_ADD, POD_RELEASES

STATE_KEY = "PreFilter" + names.VOLUME_RESTRICTIONS
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_DISK_KINDS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


@dataclass(slots=True)
class RestrictionsState:
    disks: list[Mapping[str, object]]  # the pod's volumes that need the same-disk check
    rwop_claims: frozenset[str]  # "ns/name" of its ReadWriteOncePod claims
    conflicts: int  # how many of them scheduled pods already use

    def clone(self) -> RestrictionsState:
        return RestrictionsState(self.disks, self.rwop_claims, self.conflicts)


def _volumes(pod: PodInfo) -> list[Mapping[str, object]]:
    spec = pod.raw.get("spec") if pod.raw else None
    vols = spec.get("volumes") if isinstance(spec, dict) else None
    return [v for v in vols if isinstance(v, dict)] if isinstance(vols, list) else []


def _claim_keys(pod: PodInfo) -> Iterable[str]:
    return (f"{pod.namespace}/{n}" for n in pod.pvc_names)


def _read_only(source: Mapping[str, object]) -> bool:
    return source.get("readOnly") is True


def _pair(
    volume: Mapping[str, object], existing: Mapping[str, object], kind: str
) -> tuple[Mapping[str, object], Mapping[str, object]]:
    a, b = volume.get(kind), existing.get(kind)
    return (a, b) if isinstance(a, dict) and isinstance(b, dict) else ({}, {})


def _monitors(rbd: Mapping[str, object]) -> set[str]:
    got = rbd.get("monitors")
    return {m for m in got if isinstance(m, str)} if isinstance(got, list) else set()


def volume_conflict(volume: Mapping[str, object], existing: Mapping[str, object]) -> bool:
    """kube's isVolumeConflict for one pair of volumes (the same disk, unless all read-only)."""
    a, b = _pair(volume, existing, "gcePersistentDisk")
    if a and a.get("pdName") == b.get("pdName") and not (_read_only(a) and _read_only(b)):
        return True
    a, b = _pair(volume, existing, "awsElasticBlockStore")
    if a and a.get("volumeID") == b.get("volumeID"):
        return True
    a, b = _pair(volume, existing, "iscsi")
    if a and a.get("iqn") == b.get("iqn") and not (_read_only(a) and _read_only(b)):
        return True
    a, b = _pair(volume, existing, "rbd")
    if a:
        overlap = _monitors(a) & _monitors(b)
        same = (a.get("pool") or "rbd") == (b.get("pool") or "rbd") and a.get("image") == b.get("image")
        if overlap and same and not (_read_only(a) and _read_only(b)):
            return True
    return False


class VolumeRestrictions(PreFilterPlugin[None], FilterPlugin[None]):
    name = names.VOLUME_RESTRICTIONS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """An assigned pod with volumes deleted, a node added, one of its claims created or changed."""
        return [POD_RELEASES, NODE_ADD, CLAIMS]

    def __init__(self, args: None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.reader = VolumeReader(handle)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.pvc_names and not pod.raw.get("spec", {}).get("volumes"):
            return None, Status.skip()
        disks = [v for v in _volumes(pod) if any(k in v for k in _DISK_KINDS)]
        rwop: set[str] = set()
        for name in pod.pvc_names:
            try:
                claim = self.reader.claim(pod.namespace, name)
            except VolumeObjectError as e:
                report_bad_object(self.handle, pod, self.name, e)
                return None, Status.unresolvable(str(e), plugin=self.name)
            if claim is None:
                return None, Status.unresolvable(
                    f'persistentvolumeclaim "{name}" not found', plugin=self.name
                )
            if READ_WRITE_ONCE_POD in claim.access_modes:
                rwop.add(claim.key)
        conflicts = 0
        if rwop:
            used = {key for node in snapshot.nodes for p in node.pods.values() for key in _claim_keys(p)}
            conflicts = len(rwop & used)
        if not disks and not conflicts:
            return None, Status.skip()
        state.write(STATE_KEY, RestrictionsState(disks, frozenset(rwop), conflicts))
        return None, Status.success()

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status:
        s: RestrictionsState | None = state.get(STATE_KEY)
        if s is not None:
            s.conflicts += sum(1 for k in _claim_keys(to_add) if k in s.rwop_claims)
        return Status.success()

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status:
        s: RestrictionsState | None = state.get(STATE_KEY)
        if s is not None:
            s.conflicts -= sum(1 for k in _claim_keys(to_remove) if k in s.rwop_claims)
        return Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        s: RestrictionsState | None = state.get(STATE_KEY)
        if s is None:
            return Status.success()
        if s.disks:
            for other in node.pods.values():
                for existing in _volumes(other):
                    if any(volume_conflict(v, existing) for v in s.disks):
                        return Status.unschedulable(ERR_REASON_DISK_CONFLICT, plugin=self.name)
        if s.conflicts > 0:
            return Status.unschedulable(ERR_REASON_RWOP_CONFLICT, plugin=self.name)
        return Status.success()
