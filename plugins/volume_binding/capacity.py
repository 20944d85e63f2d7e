"""CheckCSIStorageCapacity: the storage-capacity check alone, under the name the seeds use.

Some published profiles enable a plugin called `CheckCSIStorageCapacity` at
preFilter and filter. Its meaning is exactly one part of kube's VolumeBinding
Filter: a claim that will be provisioned (unbound, WaitForFirstConsumer, no
static PV chosen for it) needs a CSIStorageCapacity of its class, reaching the
node, that holds the request, when the class's CSI driver has
`storageCapacity: true`.  So this plugin runs that same check (kube's
hasEnoughCapacity) with kube's reason "node(s) did not have enough free
storage".

PreFilter reads the pod's claims once per pod and keeps those to check (and
the capacities) in the cycle state; a pod with none returns Skip, so its
Filter never runs (the runtime skips the Filter of a plugin whose PreFilter
skipped, as kube's).  Enabled at filter only, Filter computes the same on
first use.

When VolumeBinding runs in the same profile (the default set), it already
checks capacity for every node with the full binding logic; this plugin then
skips or passes every node, so a profile naming both never rejects a node
twice or disagrees with VolumeBinding about which static PV a claim gets.
"""

from __future__ import annotations

from collections.abc import Sequence

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

from ..volumes import (
    NO_PROVISIONER,
    Capacity,
    Claim,
    VolumeObjectError,
    VolumeReader,
    pod_claims,
    pod_has_claims,
)
from ..volumes.events import CAPACITIES, CLAIMS, CLASSES, DRIVERS, NODE_ADD_OR_LABEL
from .binder import ERR_REASON_NOT_ENOUGH_SPACE, VolumeBinder
from .plugin import STATE_KEY as VOLUME_BINDING_STATE

STATE_KEY = names.CHECK_CSI_STORAGE_CAPACITY + "/claims"


class CheckCSIStorageCapacity(PreFilterPlugin[None], FilterPlugin[None]):
    name = names.CHECK_CSI_STORAGE_CAPACITY

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """What its capacity check reads: claims, classes, drivers, capacities, node labels."""
        return [CLASSES, CLAIMS, DRIVERS, CAPACITIES, NODE_ADD_OR_LABEL]

    def __init__(self, args: None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.binder = VolumeBinder(VolumeReader(handle))

    def _to_check(self, pod: PodInfo) -> tuple[list[Claim], list[Capacity]]:
        """The claims dynamic provisioning will create through a driver that tracks capacity,
        and the capacities (read once per cycle)."""
        out = []
        for ref in pod_claims(pod):
            try:
                claim = self._needs_check(pod, ref.name)
            except VolumeObjectError:
                continue  # VolumeBinding (or the pod's event) reports bad objects
            if claim is not None:
                out.append(claim)
        return out, self.binder.reader.capacities() if out else []

    def _needs_check(self, pod: PodInfo, name: str) -> Claim | None:
        claim = self.binder.claim(pod.namespace, name)
        if claim is None or claim.volume_name or claim.request is None or not claim.storage_class:
            return None
        cls = self.binder.reader.storage_class(claim.storage_class)
        if cls is None or not cls.wait_for_first_consumer:
            return None
        if not cls.provisioner or cls.provisioner == NO_PROVISIONER:
            return None
        driver = self.binder.reader.csi_driver(cls.provisioner)
        return claim if driver is not None and driver.storage_capacity else None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        """The claims to check, once per pod; Skip (no Filter) when there are none, or when
        VolumeBinding's PreFilter already ran (it checks capacity itself)."""
        if not pod_has_claims(pod) or state.get(VOLUME_BINDING_STATE) is not None:
            return None, Status.skip()
        got = self._to_check(pod)
        if not got[0]:
            return None, Status.skip()
        state.write(STATE_KEY, got)
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not pod_has_claims(pod) or state.get(VOLUME_BINDING_STATE) is not None:
            return Status.success()
        got: tuple[list[Claim], list[Capacity]] | None = state.get(STATE_KEY)
        if got is None:  # enabled at filter only: no PreFilter ran
            got = self._to_check(pod)
            state.write(STATE_KEY, got)
        claims, capacities = got
        for claim in claims:
            selected = claim.selected_node
            if selected is not None and selected != node.name:
                continue  # provisioning elsewhere already started: VolumeBinding's concern
            size = claim.request or 0
            if not any(
                c.storage_class == claim.storage_class and c.fits(size) and c.reaches(node.labels)
                for c in capacities
            ):
                return Status.unresolvable(ERR_REASON_NOT_ENOUGH_SPACE, plugin=self.name)
        return Status.success()
