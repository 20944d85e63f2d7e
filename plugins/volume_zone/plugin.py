"""VolumeZone: a pod goes only where the zones and regions of its bound PVs are.

kube v1.31 volumezone: PreFilter collects, for each bound claim's PV, its
zone/region labels (beta failure-domain and GA topology keys; a value may
list several zones joined by "__"); unbound WaitForFirstConsumer claims are
skipped (VolumeBinding handles them), other unbound claims fail. Filter
passes nodes with none of those labels; otherwise each PV label must name the
node's value (a beta PV label also matches the node's GA label):
"node(s) had no available volume zone", UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Sequence
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

from ..volumes import Volume, VolumeObjectError, VolumeReader, report_bad_object
from ..volumes.events import CLAIMS, CLASSES, NODE_ADD_OR_LABEL, VOLUMES

STATE_KEY = "PreFilter" + names.VOLUME_ZONE
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv: str
    key: str
    values: frozenset[str]


def zones(value: str) -> frozenset[str]:
    """kube's LabelZonesToSet: "a__b" -> {a, b}; an empty member is an error."""
    out = set()
    for part in value.split(ZONE_DELIMITER):
        part = part.strip()
        if not part:
            raise ValueError(f"label value {value!r} has an empty zone")
        out.add(part)
    return frozenset(out)


def pv_topologies(pv: Volume) -> list[PVTopology]:
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is None:
            continue
        try:
            out.append(PVTopology(pv.name, key, zones(value)))
        except ValueError:
            continue  # kube logs and ignores a label it cannot parse
    return out


class VolumeZone(PreFilterPlugin[None], FilterPlugin[None]):
    name = names.VOLUME_ZONE

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Classes, claims, volumes and node labels (kube v1.31; class and claim updates too)."""
        return [CLASSES, CLAIMS, VOLUMES, NODE_ADD_OR_LABEL]

    def __init__(self, args: None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.reader = VolumeReader(handle)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.pvc_names:
            return None, Status.skip()
        try:
            topologies, problem = self._topologies(pod)
        except VolumeObjectError as e:
            report_bad_object(self.handle, pod, self.name, e)
            return None, Status.unresolvable(str(e), plugin=self.name)
        if problem:
            return None, Status.unresolvable(problem, plugin=self.name)
        if not topologies:
            return None, Status.skip()
        state.write(STATE_KEY, tuple(topologies))
        return None, Status.success()

    def _topologies(self, pod: PodInfo) -> tuple[list[PVTopology], str]:
        out: list[PVTopology] = []
        for name in pod.pvc_names:
            claim = self.reader.claim(pod.namespace, name)
            if claim is None:
                return out, f'persistentvolumeclaim "{name}" not found'
            if not claim.volume_name:
                if not claim.storage_class:
                    return out, "PersistentVolumeClaim had no pv name and storageClass name"
                cls = self.reader.storage_class(claim.storage_class)
                if cls is None:
                    return out, f'storageclass.storage.k8s.io "{claim.storage_class}" not found'
                if cls.wait_for_first_consumer:
                    continue
                return out, "PersistentVolume had no name"
            pv = self.reader.volume(claim.volume_name)
            if pv is None:
                return out, f'persistentvolume "{claim.volume_name}" not found'
            out.extend(pv_topologies(pv))
        return out, ""

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        topologies: tuple[PVTopology, ...] | None = state.get(STATE_KEY)
        if not topologies:
            return Status.success()
        labels = node.labels
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return Status.success()
        for t in topologies:
            value = labels.get(t.key)
            if value is None:
                value = labels.get(_GA.get(t.key, t.key))
            if value is None or value not in t.values:
                return Status.unresolvable(ERR_REASON_CONFLICT, plugin=self.name)
        return Status.success()
