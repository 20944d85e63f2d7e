"""NodeVolumeLimits: CSI attach limits per driver (kube v1.31 nodevolumelimits, CSILimits).

Each CSI volume a pod uses through a claim counts against its driver's limit
on the node: CSINode spec.drivers[].allocatable.count, or the node's
allocatable `attachable-volumes-csi-<driver>` when the CSINode gives none.
A volume is identified as driver/volumeHandle of its bound PV, or, for a
claim not bound yet, as its StorageClass provisioner plus a per-instance
name for the claim (kube's random prefix), so it counts once per node however
many pods share it.  Volumes already attached to the node (used by its
pods) are not counted twice. Over the limit: "node(s) exceed max volume count"
(Unschedulable).  PreFilter skips pods without claims.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    IntArray,
    NodeInfo,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    Rejection,
    Snapshot,
    Status,
    names,
)

from ..volumes import (
    Claim,
    VolumeObjectError,
    VolumeReader,
    csi_attach_limit_key,
    pod_claims,
    pod_has_claims,
    report_bad_object,
)
from ..volumes.events import CLAIMS, CSI_NODES, NODE_ADD, POD_RELEASES

STATE_KEY = "PreFilter" + names.NODE_VOLUME_LIMITS
ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
_MEMO_LIMIT = 50_000

# unique volume name ("driver/handle") -> limit key ("attachable-volumes-csi-<driver>")
Attachments = dict[str, str]


@dataclass(slots=True)
class LimitsState:
    new: Attachments  # the pod's CSI volumes
    csi_limits: dict[str, dict[str, int]]  # node -> limit key -> CSINode count, for those drivers


class NodeVolumeLimits(PreFilterPlugin[None], FilterPlugin[None]):
    name = names.NODE_VOLUME_LIMITS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """CSINodes (limits), an assigned pod with volumes deleted, its claims, a node added."""
        return [CSI_NODES, POD_RELEASES, CLAIMS, NODE_ADD]

    def __init__(self, args: None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.reader = VolumeReader(handle)
        # kube's randomVolumeIDPrefix: names a not-yet-bound claim's future volume.
        self._prefix = uuid.uuid4().hex[:16]
        # pod uid -> (resourceVersion, its attachments): existing pods rarely change.
        self._existing: dict[str, tuple[str, Attachments]] = {}

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod_has_claims(pod):
            return None, Status.skip()
        new: Attachments = {}
        try:
            problem = self._attachments(pod, new, new_pod=True)
        except VolumeObjectError as e:
            report_bad_object(self.handle, pod, self.name, e)
            return None, Status.unresolvable(str(e), plugin=self.name)
        if problem:
            return None, Status.unresolvable(problem, plugin=self.name)
        if not new:
            return None, Status.skip()
        state.write(STATE_KEY, LimitsState(new, self._csi_limits(set(new.values()))))
        return None, Status.success()

    def _csi_limits(self, keys: set[str]) -> dict[str, dict[str, int]]:
        """Per node, the CSINode counts of the drivers in `keys` (read once per cycle; a CSINode
        that does not parse is left out, so that node's own allocatable applies, as in kube)."""
        out: dict[str, dict[str, int]] = {}
        for csi_node in self.reader.csi_nodes():
            limits = {}
            for driver, count in csi_node.limits.items():
                key = csi_attach_limit_key(driver)
                if count is not None and key in keys:
                    limits[key] = count
            if limits:
                out[csi_node.name] = limits
        return out

    def _attachments(self, pod: PodInfo, out: Attachments, *, new_pod: bool) -> str:
        """kube's filterAttachableVolumes: adds the pod's CSI volumes to `out`; a problem that
        makes a new pod unschedulable (missing claim) is returned, an existing pod's is ignored."""
        for ref in pod_claims(pod):
            try:
                claim = self.reader.claim(pod.namespace, ref.name)
            except VolumeObjectError:
                if new_pod:
                    raise
                continue
            if claim is None:
                if new_pod:
                    return f'looking up PVC {pod.namespace}/{ref.name}: persistentvolumeclaim "{ref.name}" not found'
                continue
            if ref.ephemeral and pod.uid not in claim.owner_uids:
                if new_pod:
                    return f"PVC {claim.key} was not created for pod {pod.key} (pod is not owner)"
                continue
            driver, handle = self._driver_and_handle(claim)
            if driver and handle:
                out[f"{driver}/{handle}"] = csi_attach_limit_key(driver)
        return ""

    def _driver_and_handle(self, claim: Claim) -> tuple[str, str]:
        if claim.volume_name:
            try:
                pv = self.reader.volume(claim.volume_name)
            except VolumeObjectError:
                pv = None
            if pv is not None:
                return pv.csi_driver, pv.csi_handle  # in-tree sources: not counted (no CSI migration)
        if not claim.storage_class:
            return "", ""
        try:
            cls = self.reader.storage_class(claim.storage_class)
        except VolumeObjectError:
            cls = None  # VolumeBinding reports it on the pod; here it only cannot be counted
        if cls is None:
            return "", ""
        return cls.provisioner, f"{self._prefix}-{claim.namespace}/{claim.name}"

    def _existing_attachments(self, pod: PodInfo) -> Attachments:
        if not pod_has_claims(pod):
            return {}
        got = self._existing.get(pod.uid)
        if got is not None and got[0] == pod.resource_version and pod.resource_version:
            return got[1]
        out: Attachments = {}
        self._attachments(pod, out, new_pod=False)
        if len(self._existing) >= _MEMO_LIMIT:
            self._existing.clear()
        self._existing[pod.uid] = (pod.resource_version, out)
        return out

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        """Batch Filter: only nodes with a limit for the pod's drivers can fail, and those are
        the nodes whose CSINode gives one (nodes advertising attachable-volumes-csi-* in their
        allocatable, the pre-CSINode way, make every node a candidate)."""
        s: LimitsState | None = state.get(STATE_KEY)
        if s is None:
            return []
        keys = set(s.new.values())
        nodes = snapshot.nodes
        rows = idx.tolist()
        if not any(k in snapshot.col for k in keys):
            if not s.csi_limits:
                return []
            rows = [i for i in rows if nodes[i].name in s.csi_limits]
        failed = [i for i in rows if not self.filter(state, pod, nodes[i]).ok]
        if not failed:
            return []
        mask = np.isin(idx, np.asarray(failed, dtype=idx.dtype))
        return [Rejection(mask, (ERR_REASON_MAX_VOLUME_COUNT,), Code.UNSCHEDULABLE)]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        s: LimitsState | None = state.get(STATE_KEY)
        if s is None:
            return Status.success()
        new = s.new
        limits = node_limits(node.allocatable, s.csi_limits.get(node.name), set(new.values()))
        if not limits:
            return Status.success()  # no limit for the drivers this pod needs
        existing: Attachments = {}
        for other in node.pods.values():
            existing.update(self._existing_attachments(other))
        wanted: dict[str, int] = {}
        for unique, key in new.items():
            if unique not in existing:  # already attached: counts once
                wanted[key] = wanted.get(key, 0) + 1
        attached: dict[str, int] = {}
        for key in existing.values():
            attached[key] = attached.get(key, 0) + 1
        for key, count in wanted.items():
            limit = limits.get(key)
            if limit is not None and attached.get(key, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT, plugin=self.name)
        return Status.success()


def node_limits(
    allocatable: Mapping[str, int], csi_limits: Mapping[str, int] | None, keys: set[str]
) -> dict[str, int]:
    """kube's getVolumeLimits, for the limit keys a pod needs: the node's allocatable
    attachable-volumes-csi-<driver>, overridden by its CSINode's per-driver counts."""
    out = {k: allocatable[k] for k in keys if k in allocatable}
    if csi_limits:
        out.update(csi_limits)
    return out
