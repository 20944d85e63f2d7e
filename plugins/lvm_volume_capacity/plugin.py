"""LvmVolumeCapacity: a node must have room in its LVM volume groups for the pod's new volumes.

The seed articles enable `LvmVolumeCapacity` at filter.  It is written for the
most used LVM-backed local-volume driver, TopoLVM: its node agent publishes
each node's free space per device class (an LVM volume group, or a thin pool's
overprovisioned room) as the node annotation `capacity.topolvm.io/<class>`
(`capacity.topolvm.cybozu.com/<class>` before TopoLVM's group rename), the
node's default device class under the name `00default`; a StorageClass picks
a device class with its `topolvm.io/device-class` parameter (formerly
`topolvm.cybozu.com/device-class`), the default class when absent.

A pod's claims that still need a volume (no `spec.volumeName`, no node
selected for provisioning yet) of a class whose provisioner is one of
`args.provisioners` need, per device class, the sum of their storage requests
(1Gi for a claim without one, TopoLVM's default size); a node fits when its
annotation for each such class is at least that sum.  Claims already bound, or
being provisioned on a node, are the CSI driver's business (VolumeBinding
keeps the pod with its volumes).

PreFilter reads the claims once per pod and each node's free space once per
cycle (a pod without such claims returns Skip, so Filter never runs); the batch
Filter compares the columns it built.  Rejections are UnschedulableAndUnresolvable
(deleting pods frees no volume-group space) and name the device class, what the
pod needs, and how far the roomiest rejected node falls short.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from netsched.framework import (
    NODE,
    ActionType,
    BoolArray,
    ClusterEvent,
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
    QueueingHint,
    Rejection,
    Snapshot,
    Status,
    names,
)

from ..volumes import (
    VolumeObjectError,
    VolumeReader,
    pod_claims,
    pod_has_claims,
)
from ..volumes.events import CLAIMS, STORAGE_CLASS, event
from .args import LvmVolumeCapacityArgs

log = logging.getLogger(__name__)

STATE_KEY = names.LVM_VOLUME_CAPACITY + "/needs"
# StorageClass parameter naming the device class, current key first.
DEVICE_CLASS_PARAMETERS = ("topolvm.io/device-class", "topolvm.cybozu.com/device-class")
# Node annotation prefixes carrying a device class's free bytes, current prefix first.
CAPACITY_PREFIXES = ("capacity.topolvm.io/", "capacity.topolvm.cybozu.com/")
# The name TopoLVM publishes the node's default device class under.
DEFAULT_DEVICE_CLASS = "00default"
# TopoLVM's size for a claim that requests no storage.
DEFAULT_CLAIM_SIZE = 1 << 30

# Column values for a node whose annotation is absent or unreadable.
_MISSING = -1
_MALFORMED = -2


@dataclass(frozen=True, slots=True)
class DeviceClassNeed:
    """What the pod's new volumes need from one device class."""

    device_class: str  # the annotation suffix: a class name or DEFAULT_DEVICE_CLASS
    need: int  # bytes

    @property
    def label(self) -> str:
        if self.device_class == DEFAULT_DEVICE_CLASS:
            return "the default LVM device class"
        return f'LVM device class "{self.device_class}"'


@dataclass(frozen=True, slots=True)
class Prepared:
    """A pod's needs and the snapshot's free space per device class (PreFilter's state)."""

    needs: tuple[DeviceClassNeed, ...]
    free: Mapping[str, IntArray]  # device class -> free bytes per snapshot row (or _MISSING/_MALFORMED)
    # device class -> the "not enough space" reason for this pod, written on first need
    _reasons: dict[str, str] = field(default_factory=dict)

    def clone(self) -> Prepared:
        return self  # read-only but for the reasons cache: preemption's copies of the state share it

    def reason(self, need: DeviceClassNeed) -> str:
        """The reason for nodes short of `need`, the same text for each (built once, when asked)."""
        text = self._reasons.get(need.device_class)
        if text is None:
            column = self.free[need.device_class]
            short = column[(column >= 0) & (column < need.need)]
            roomiest = int(short.max()) if len(short) else None
            text = self._reasons[need.device_class] = _not_enough(need, roomiest)
        return text


def byte_count(value: str) -> int | None:
    """A capacity annotation's free bytes; None when it is not a non-negative integer."""
    try:
        free = int(value)
    except ValueError:
        return None
    return free if free >= 0 else None


def node_free(node: NodeInfo, device_class: str) -> tuple[int, str]:
    """(free bytes or _MISSING / _MALFORMED, the annotation read) for one device class."""
    for prefix in CAPACITY_PREFIXES:
        key = prefix + device_class
        value = node.annotations.get(key)
        if value is None:
            continue
        free = byte_count(value)
        return (_MALFORMED if free is None else free), key
    return _MISSING, CAPACITY_PREFIXES[0] + device_class


def format_bytes(amount: int, *, round_up: bool = True) -> str:
    """A byte count in the largest binary unit it reaches, at most two decimals ("20Gi", "1.5Ti")."""
    for unit, factor in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if amount >= factor:
            scaled = amount * 100 / factor
            hundredths = math.ceil(scaled) if round_up else math.floor(scaled)
            text = f"{hundredths // 100}.{hundredths % 100:02d}".rstrip("0").rstrip(".")
            return text + unit
    return f"{amount} bytes"


def capacity_grew(_pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Queue on a node that publishes LVM free space when it appears, or when one of its
    device classes gains free space (or appears, or becomes readable); heartbeats,
    label changes, shrinking free space and unreadable values (as node_free reads
    them: not a non-negative byte count) leave the pod parked."""
    if not isinstance(new, NodeInfo):
        return QueueingHint.QUEUE
    before = old.annotations if isinstance(old, NodeInfo) else {}
    for key, value in new.annotations.items():
        if not key.startswith(CAPACITY_PREFIXES):
            continue
        now = byte_count(value)
        prior = before.get(key)
        was = byte_count(prior) if prior is not None else None
        if now is not None and (was is None or now > was):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


class LvmVolumeCapacity(PreFilterPlugin[LvmVolumeCapacityArgs], FilterPlugin[LvmVolumeCapacityArgs]):
    name = names.LVM_VOLUME_CAPACITY
    # An out-of-tree plugin of this name (another LVM driver's rules) takes this one's place.
    replaceable: ClassVar[bool] = True

    def __init__(self, args: LvmVolumeCapacityArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.provisioners = frozenset(self.args.provisioners)
        self.reader = VolumeReader(handle)
        self._reported: dict[str, str] = {}  # node -> the malformed annotation value last logged

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node's free space grows (or a node publishing it joins); one of the pod's claims is
        created or changes (bound, resized); a StorageClass is created (its parameters and
        provisioner never change, so updates cannot help)."""
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ANNOTATION), capacity_grew
            ),
            CLAIMS,
            event(STORAGE_CLASS, ActionType.ADD),
        ]

    # ------------------------------------------------------------ what the pod needs

    def needs(self, pod: PodInfo) -> tuple[DeviceClassNeed, ...]:
        """Per device class, the bytes the pod's claims still to be provisioned need (sorted by
        class); VolumeObjectError when one of its claims or their classes cannot be read."""
        sizes: dict[str, int] = {}
        for ref in pod_claims(pod):
            claim = self.reader.claim(pod.namespace, ref.name)
            if claim is None or claim.volume_name or claim.selected_node or not claim.storage_class:
                continue  # missing (VolumeBinding waits for it), bound, or being provisioned
            cls = self.reader.storage_class(claim.storage_class)
            if cls is None or cls.provisioner not in self.provisioners:
                continue
            device_class = next(
                (cls.parameters[k] for k in DEVICE_CLASS_PARAMETERS if cls.parameters.get(k)),
                DEFAULT_DEVICE_CLASS,
            )
            sizes[device_class] = sizes.get(device_class, 0) + (claim.request or DEFAULT_CLAIM_SIZE)
        return tuple(DeviceClassNeed(dc, sizes[dc]) for dc in sorted(sizes))

    def prepare(self, pod: PodInfo, snapshot: Snapshot) -> Prepared | None:
        """The pod's needs and each snapshot node's free space; None when it needs nothing."""
        needs = self.needs(pod)
        if not needs:
            return None
        free = {
            need.device_class: np.fromiter(
                (node_free(n, need.device_class)[0] for n in snapshot.nodes),
                dtype=np.int64,
                count=len(snapshot.nodes),
            )
            for need in needs
        }
        return Prepared(needs, free)

    # ------------------------------------------------------------ extension points

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod_has_claims(pod):
            return None, Status.skip()
        try:
            prepared = self.prepare(pod, snapshot)
        except VolumeObjectError as e:
            return None, Status.unresolvable(str(e), plugin=self.name)
        if prepared is None:
            return None, Status.skip()
        state.write(STATE_KEY, prepared)
        return None, Status.success()

    def _prepared(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Prepared | Status | None:
        """PreFilter's result, or (enabled at filter only) the same computed on first use over
        `snapshot`: the cycle's, which PreFilter saw too (the Handle's for a lone node)."""
        got: Prepared | Status | None = state.get(STATE_KEY)
        if got is not None or not pod_has_claims(pod):
            return got
        try:
            got = self.prepare(pod, snapshot)
        except VolumeObjectError as e:
            got = Status.unresolvable(str(e))
        state.write(STATE_KEY, got if got is not None else Status.success())
        return got

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        prepared = self._prepared(state, pod, self.handle.snapshot())
        if prepared is None or isinstance(prepared, Status):
            return prepared if prepared is not None else Status.success()
        for need in prepared.needs:
            free, key = node_free(node, need.device_class)
            if free == _MISSING:
                return Status.unresolvable(_missing(need, key))
            if free == _MALFORMED:
                self._log_malformed(node, key)
                return Status.unresolvable(_malformed(key))
            if free < need.need:
                return Status.unresolvable(prepared.reason(need))
        return Status.success()

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        prepared = self._prepared(state, pod, snapshot)
        if prepared is None:
            return []
        if isinstance(prepared, Status):  # success or unresolvable: filter()'s answer for every node
            if prepared.ok or not len(idx):
                return []
            return [Rejection(np.ones(len(idx), dtype=bool), tuple(prepared.reasons), prepared.code)]
        out: list[Rejection] = []
        alive = np.ones(len(idx), dtype=bool)
        for need in prepared.needs:
            free = prepared.free[need.device_class][idx]
            missing = alive & (free == _MISSING)
            if missing.any():
                key = CAPACITY_PREFIXES[0] + need.device_class
                out.append(Rejection(missing, (_missing(need, key),), UNRESOLVABLE))
            short = alive & (free >= 0) & (free < need.need)
            if short.any():
                out.append(Rejection(short, (prepared.reason(need),), UNRESOLVABLE))
            # An unreadable annotation is rare: per node, as its reason names the annotation it read.
            by_key: dict[str, BoolArray] = {}
            for j in np.flatnonzero(alive & (free == _MALFORMED)).tolist():
                node = snapshot.nodes[int(idx[j])]
                _, key = node_free(node, need.device_class)
                self._log_malformed(node, key)
                by_key.setdefault(key, np.zeros(len(idx), dtype=bool))[j] = True
            for key, hit in by_key.items():
                out.append(Rejection(hit, (_malformed(key),), UNRESOLVABLE))
            alive &= free >= need.need
        return out

    def _log_malformed(self, node: NodeInfo, key: str) -> None:
        value = node.annotations.get(key, "")
        if self._reported.get(node.name) != value:
            self._reported[node.name] = value
            log.warning(
                "Node annotation is not a byte count, node skipped for LVM volumes node=%s annotation=%s value=%r",
                node.name,
                key,
                value,
            )


UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _missing(need: DeviceClassNeed, key: str) -> str:
    return f"node(s) did not publish free space for {need.label} (no {key} annotation)"


def _malformed(key: str) -> str:
    return f"node(s) had an invalid {key} annotation (must be a byte count)"


def _not_enough(need: DeviceClassNeed, roomiest: int | None) -> str:
    """The pod's reason for nodes short of space in one device class, with the smallest shortfall
    in the snapshot (one text for every such node, so FailedScheduling counts them in one entry)."""
    text = f"node(s) did not have enough free space in {need.label}: the pod needs {format_bytes(need.need)}"
    if roomiest is None:
        return text
    has, gap = format_bytes(roomiest, round_up=False), format_bytes(need.need - roomiest)
    return f"{text}; the roomiest node without enough has {has} ({gap} short)"
