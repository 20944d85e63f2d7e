"""VolumeClaimGuard: refuse pods with PersistentVolumeClaims, loudly.

netsched does not implement kube's volume plugins (VolumeBinding,
VolumeZone, NodeVolumeLimits, VolumeRestrictions).  Placing a PVC pod without
them could put it on a node its volume can never attach to, so the pod fails
PreFilter with a message telling the user what to do instead.
"""

from __future__ import annotations

from netsched.framework import CycleState, PodInfo, PreFilterPlugin, PreFilterResult, Snapshot, Status

MESSAGE = (
    "pod has PersistentVolumeClaims (spec.volumes[].persistentVolumeClaim), which netsched does not "
    "schedule yet: use the default scheduler for this pod"
)


class VolumeClaimGuard(PreFilterPlugin):
    name = "VolumeClaimGuard"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.pvc_names:
            return None, Status.skip()
        return None, Status.unresolvable(MESSAGE, plugin=self.name)
