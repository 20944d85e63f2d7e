"""Parsed storage objects from Handle.objects, each parsed once per stored copy.

The ObjectStore keeps the dicts the informer delivered and replaces a dict on
every change, so a memo keyed by name that remembers the dict it parsed (by
identity) re-parses exactly the objects that changed.  One reader per plugin
instance (never a module global), shared by the scheduling and binding threads:
the memo only ever maps a name to a complete (raw, record) pair.

PersistentVolumes are also indexed in the store (kube's assume cache indexes
them by class): the ones no claim holds, by StorageClass; the ones a claimRef
names, by that claim; the malformed ones apart, so they are still reported.  A
pod's PreFilter reads only those, never every PV of the cluster (dynamically
provisioned volumes pile up bound, and a scan per pod grows with them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

from netsched.framework import Handle

from .objects import (
    CSIDRIVERS_KEY,
    CSINODES_KEY,
    CSISTORAGECAPACITIES_KEY,
    PVCS_KEY,
    PVS_KEY,
    STORAGECLASSES_KEY,
    Capacity,
    Claim,
    CSIDriverInfo,
    CSINodeInfo,
    StorageClassInfo,
    Volume,
    VolumeObjectError,
    parse_capacity,
    parse_claim,
    parse_csi_driver,
    parse_csi_node,
    parse_storage_class,
    parse_volume,
)

T = TypeVar("T")


class _Table(Generic[T]):
    def __init__(self, key: str, parse: Callable[[Mapping[str, object]], T]) -> None:
        self.key = key
        self._parse = parse
        self._memo: dict[tuple[str, str], tuple[Mapping[str, object], T | VolumeObjectError]] = {}

    def parsed(self, raw: Mapping[str, object]) -> T:
        meta = raw.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}  # malformed: parse() says so, once
        name = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        got = self._memo.get(name)
        if got is None or got[0] is not raw:
            try:
                value: T | VolumeObjectError = self._parse(raw)
            except VolumeObjectError as e:
                value = e
            if len(self._memo) > 100_000:  # deleted objects linger; bound the memo
                self._memo.clear()
            got = (raw, value)
            self._memo[name] = got
        if isinstance(got[1], VolumeObjectError):
            raise got[1]
        return got[1]


AVAILABLE_BY_CLASS = "netsched/pv-available-by-class"
BY_CLAIM = "netsched/pv-by-claim"
_MALFORMED = "\x00malformed"


def _available_class(raw: Mapping[str, object]) -> list[str]:
    try:
        pv = parse_volume(raw)
    except VolumeObjectError:
        return [_MALFORMED]
    return [pv.storage_class] if pv.claim_ref is None and not pv.deleting else []


def _claim_key(raw: Mapping[str, object]) -> list[str]:
    try:
        ref = parse_volume(raw).claim_ref
    except VolumeObjectError:
        return []
    return [] if ref is None else [f"{ref.namespace}/{ref.name}"]


class VolumeReader:
    """Typed, memoised reads of the six storage kinds (None / empty when not watched)."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        handle.objects.add_index(PVS_KEY, AVAILABLE_BY_CLASS, _available_class)
        handle.objects.add_index(PVS_KEY, BY_CLAIM, _claim_key)
        self._pvs = _Table(PVS_KEY, parse_volume)
        self._pvcs = _Table(PVCS_KEY, parse_claim)
        self._classes = _Table(STORAGECLASSES_KEY, parse_storage_class)
        self._csi_nodes = _Table(CSINODES_KEY, parse_csi_node)
        self._drivers = _Table(CSIDRIVERS_KEY, parse_csi_driver)
        self._capacities = _Table(CSISTORAGECAPACITIES_KEY, parse_capacity)

    def _get(self, table: _Table[T], namespace: str, name: str) -> T | None:
        raw = self._handle.objects.get(table.key, namespace, name)
        return None if raw is None else table.parsed(raw)

    def _list(self, table: _Table[T], errors: list[VolumeObjectError] | None) -> list[T]:
        out = []
        for raw in self._handle.objects.list(table.key):
            try:
                out.append(table.parsed(raw))
            except VolumeObjectError as e:
                if errors is not None:
                    errors.append(e)
        return out

    def claim(self, namespace: str, name: str) -> Claim | None:
        return self._get(self._pvcs, namespace, name)

    def volume(self, name: str) -> Volume | None:
        return self._get(self._pvs, "", name)

    def volumes_for(
        self, classes: Iterable[str], claims: Iterable[Claim], errors: list[VolumeObjectError] | None = None
    ) -> list[Volume]:
        """The PVs that may serve `claims`: unclaimed ones of `classes`, the ones whose claimRef
        names one of `claims`, and (to report them) the malformed ones; sorted by name."""
        objects = self._handle.objects
        raws: dict[str, Mapping[str, object]] = {}
        for value in (*classes, _MALFORMED):
            for raw in objects.by_index(PVS_KEY, AVAILABLE_BY_CLASS, value):
                raws[str((raw.get("metadata") or {}).get("name") or "")] = raw
        for claim in claims:
            for raw in objects.by_index(PVS_KEY, BY_CLAIM, claim.key):
                raws[str((raw.get("metadata") or {}).get("name") or "")] = raw
        out = []
        for _, raw in sorted(raws.items()):
            try:
                out.append(self._pvs.parsed(raw))
            except VolumeObjectError as e:
                if errors is not None:
                    errors.append(e)
        return out

    def storage_class(self, name: str) -> StorageClassInfo | None:
        return self._get(self._classes, "", name)

    def csi_node(self, name: str) -> CSINodeInfo | None:
        return self._get(self._csi_nodes, "", name)

    def csi_nodes(self, errors: list[VolumeObjectError] | None = None) -> list[CSINodeInfo]:
        return self._list(self._csi_nodes, errors)

    def csi_driver(self, name: str) -> CSIDriverInfo | None:
        return self._get(self._drivers, "", name)

    def capacities(self, errors: list[VolumeObjectError] | None = None) -> list[Capacity]:
        return self._list(self._capacities, errors)
