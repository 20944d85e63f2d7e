"""VolumeBinding: places pods with PersistentVolumeClaims where their volumes can follow.

PreFilter sorts the pod's claims (bound, unbound WaitForFirstConsumer,
unbound Immediate: the latter fail UnschedulableAndUnresolvable) and narrows
the nodes to those local PVs pin; Filter asks, per node, whether bound PVs'
node affinity fits and whether every delayed claim gets a static PV or can be
provisioned there; Reserve assumes the choice in memory; PreBind writes it
(PV claimRef, claim selected-node) and waits on the informer's copies until
every claim is bound, up to bindTimeoutSeconds; Unreserve reverts.
Semantics: kube v1.31 volumebinding (see README for the differences).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.framework import (
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    IntArray,
    NodeInfo,
    PluginError,
    PodInfo,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Rejection,
    ReservePlugin,
    Snapshot,
    Status,
    names,
)

from ..volumes import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    Claim,
    Volume,
    VolumeObjectError,
    VolumeReader,
    pod_claims,
    pod_has_claims,
    report_bad_object,
)
from ..volumes.events import (
    CAPACITIES,
    CLAIMS,
    CLASSES,
    CSI_NODES,
    DRIVERS,
    NODE_ADD_OR_LABEL,
    VOLUMES,
)
from .args import VolumeBindingArgs
from .binder import BindingError, PodClaims, PodVolumes, VolumeBinder

log = logging.getLogger(__name__)

STATE_KEY = "PreFilter" + names.VOLUME_BINDING
ERR_REASON_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# How often PreBind looks at the informer's copies while it waits: soon at first (a
# provisioner often answers within milliseconds), then less often, up to kube's one second.
FIRST_POLL_SECONDS = 0.01
MAX_POLL_SECONDS = 1.0


@dataclass(slots=True)
class VolumeState:
    claims: PodClaims
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    # The batch Filter's answers, by the values of the labels they depend on.
    shared: dict[tuple[str | None, ...], PodVolumes] = field(default_factory=dict)
    shared_keys: tuple[str, ...] | None = None
    reserved: PodVolumes | None = None
    all_bound: bool = True

    def clone(self) -> VolumeState:
        return self  # as kube: preemption's what-ifs never change volume choices


class VolumeBinding(
    PreFilterPlugin[VolumeBindingArgs],
    FilterPlugin[VolumeBindingArgs],
    ReservePlugin[VolumeBindingArgs],
    PreBindPlugin[VolumeBindingArgs],
):
    name = names.VOLUME_BINDING

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Its claims, classes, volumes, CSI objects and node labels (kube v1.31; CSIDriver Add too)."""
        return [CLASSES, CLAIMS, VOLUMES, NODE_ADD_OR_LABEL, CSI_NODES, DRIVERS, CAPACITIES]

    def __init__(self, args: VolumeBindingArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.binder = VolumeBinder(VolumeReader(handle))

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod_has_claims(pod):
            return None, Status.skip()
        try:
            claims, problem = self._claims(pod)
        except VolumeObjectError as e:
            report_bad_object(self.handle, pod, self.name, e)
            return None, Status.unresolvable(str(e), plugin=self.name)
        if problem:
            return None, Status.unresolvable(problem, plugin=self.name)
        if claims.immediate:
            return None, Status.unresolvable(ERR_REASON_IMMEDIATE, plugin=self.name)
        state.write(STATE_KEY, VolumeState(claims))
        eligible = self.binder.eligible_nodes(claims)
        return (PreFilterResult(eligible) if eligible is not None else None), Status.success()

    def _claims(self, pod: PodInfo) -> tuple[PodClaims, str]:
        """kube's podHasPVCs + GetPodVolumeClaims: the sorted claims, or the reason they cannot be."""
        out = PodClaims()
        for ref in pod_claims(pod):
            claim = self.binder.claim(pod.namespace, ref.name)
            if claim is None:
                return out, f'persistentvolumeclaim "{ref.name}" not found'
            if claim.deleting:
                return out, f'persistentvolumeclaim "{ref.name}" is being deleted'
            if ref.ephemeral and pod.uid not in claim.owner_uids:
                return out, f"PVC {claim.key} was not created for pod {pod.key} (pod is not owner)"
            if claim.fully_bound:
                out.bound.append(claim)
                if claim.volume_name not in out.bound_pvs:
                    out.bound_pvs[claim.volume_name] = self.binder.volume(claim.volume_name)
                continue
            if claim.storage_class and self.binder.reader.storage_class(claim.storage_class) is None:
                report_bad_object(
                    self.handle,
                    pod,
                    self.name,
                    f'{claim.describe()}: spec.storageClassName: StorageClass "{claim.storage_class}" not found',
                )
            if self.binder.is_delayed(claim) and not claim.volume_name:
                out.delayed.append(claim)
            else:
                out.immediate.append(claim)
        out.delayed.sort(key=lambda c: c.request or 0)  # kube matches the smallest request first
        if out.delayed and not out.immediate:
            errors: list[VolumeObjectError] = []
            out.pvs_by_class = self.binder.volumes_by_class(out.delayed, errors)
            for e in errors:
                report_bad_object(self.handle, pod, self.name, e)
        return out, ""

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        vs: VolumeState | None = state.get(STATE_KEY)
        if vs is None:
            return Status.success()
        try:
            fit = self.binder.find_pod_volumes(vs.claims, node.name, node.labels)
        except (BindingError, VolumeObjectError) as e:
            return Status.as_error(e, self.name)
        if fit.reasons:
            return Status.unresolvable(*fit.reasons, plugin=self.name)
        if fit.volumes is not None:
            vs.by_node[node.name] = fit.volumes
        return Status.success()

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        """Batch Filter: nodes that agree on every label the pod's volumes look at (PV node
        affinity, allowedTopologies, CSIStorageCapacity topology) share one answer, so a
        StatefulSet replica on 5000 nodes is decided once per zone, not once per node."""
        vs: VolumeState | None = state.get(STATE_KEY)
        if vs is None:
            return []
        keys = self.binder.relevant_labels(vs.claims)
        if keys is None:  # the answer depends on the node's name: one node at a time
            return super().filter_nodes(state, pod, snapshot, idx)
        if keys:
            columns = [snapshot.label_column(k)[idx].tolist() for k in keys]
            row_keys: list[tuple[str | None, ...]] = list(zip(*columns, strict=True))
        else:
            row_keys = [()] * len(idx)
        firsts: dict[tuple[str | None, ...], int] = {}
        for j, k in enumerate(row_keys):
            firsts.setdefault(k, j)
        rejected: dict[tuple[str, ...], list[tuple[str | None, ...]]] = {}
        for k, j in firsts.items():
            node = snapshot.nodes[int(idx[j])]
            try:
                fit = self.binder.find_pod_volumes(vs.claims, node.name, node.labels)
            except (BindingError, VolumeObjectError) as e:
                raise PluginError(str(e), e) from e
            if fit.reasons:
                rejected.setdefault(tuple(fit.reasons), []).append(k)
            elif fit.volumes is not None:
                vs.shared[k] = fit.volumes
        vs.shared_keys = keys
        out = []
        for reasons, group in rejected.items():
            if len(firsts) == 1:
                mask = np.ones(len(idx), dtype=bool)
            else:
                bad = set(group)
                mask = np.fromiter((k in bad for k in row_keys), dtype=bool, count=len(row_keys))
            out.append(Rejection(mask, reasons, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        return out

    def _volumes_for(self, vs: VolumeState, node_name: str) -> PodVolumes | None:
        """What Filter decided for the node: per node, or shared by its label group."""
        got = vs.by_node.get(node_name)
        if got is not None or vs.shared_keys is None:
            return got
        node = self.handle.snapshot().get(node_name)
        if node is None:
            return None
        shared = vs.shared.get(tuple(node.labels.get(k) for k in vs.shared_keys))
        if shared is None:
            return None
        return PodVolumes(list(shared.static), list(shared.provision), node.labels)

    # ------------------------------------------------------------ Reserve / Unreserve

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        vs: VolumeState | None = state.get(STATE_KEY)
        if vs is None:
            return Status.success()
        volumes = self._volumes_for(vs, node_name)
        if volumes is None:
            if vs.claims.delayed:  # Filter passed the node, so it must have decided something
                return Status.as_error(
                    RuntimeError(f'no pod volumes found for node "{node_name}"'), self.name
                )
            vs.all_bound = True  # every claim is bound already
            return Status.success()
        vs.all_bound = self.binder.assume(volumes, node_name)
        vs.reserved = volumes
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        vs: VolumeState | None = state.get(STATE_KEY)
        if vs is None or vs.reserved is None:
            return
        self.binder.revert(vs.reserved)
        vs.reserved = None

    # ------------------------------------------------------------ PreBind

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        vs: VolumeState | None = state.get(STATE_KEY)
        if vs is None or vs.all_bound:
            return Status.success()
        volumes = vs.reserved
        if volumes is None:
            return Status.as_error(RuntimeError(f'no pod volumes found for node "{node_name}"'), self.name)
        try:
            written = self._write(volumes, node_name)
            self._wait(pod, volumes, node_name, written)
        except Exception as e:  # Conflict, NotFound, a failed binding: Unreserve reverts
            log.info("Binding volumes failed pod=%s node=%s err=%s", pod.key, node_name, e)
            return Status.as_error(e, self.name)
        return Status.success()

    def _write(self, volumes: PodVolumes, node_name: str) -> dict[str, str]:
        """kube's bindAPIUpdate: each PV's claimRef, then each claim's selected-node, every write
        conditional on the resourceVersion it was decided on (Conflict when stale)."""
        written: dict[str, str] = {}
        for pv, claim in volumes.static:
            got = self.handle.api.patch_object(PERSISTENTVOLUMES, "", pv.name, _claim_ref_patch(pv, claim))
            written[f"pv/{pv.name}"] = _rv(got)
        for claim in volumes.provision:
            patch = {
                "metadata": {
                    "resourceVersion": claim.resource_version,
                    "annotations": {ANN_SELECTED_NODE: node_name},
                }
            }
            got = self.handle.api.patch_object(PERSISTENTVOLUMECLAIMS, claim.namespace, claim.name, patch)
            written[f"pvc/{claim.key}"] = _rv(got)
        return written

    def _wait(self, pod: PodInfo, volumes: PodVolumes, node_name: str, written: dict[str, str]) -> None:
        """Until every claim is bound, reading the informer's copies (never the API)."""
        clock = self.handle.clock
        deadline = clock.now() + self.args.bind_timeout_seconds
        poll = FIRST_POLL_SECONDS
        while not self.binder.check_bindings(volumes, node_name, written):
            if clock.now() >= deadline:
                raise BindingError("binding volumes: context deadline exceeded")
            if self.handle.shutting_down(wait=min(poll, max(0.0, deadline - clock.now()))):
                raise BindingError("binding volumes: context canceled")
            poll = min(2 * poll, MAX_POLL_SECONDS)
        log.debug("Volumes bound pod=%s node=%s", pod.key, node_name)


def _claim_ref_patch(pv: Volume, claim: Claim) -> dict[str, Any]:
    ref: dict[str, Any] = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": claim.namespace,
        "name": claim.name,
        "resourceVersion": claim.resource_version,
    }
    if claim.uid:
        ref["uid"] = claim.uid
    return {
        "metadata": {"resourceVersion": pv.resource_version, "annotations": {ANN_BOUND_BY_CONTROLLER: "yes"}},
        "spec": {"claimRef": ref},
    }


def _rv(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
