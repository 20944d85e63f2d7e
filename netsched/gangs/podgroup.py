"""PodGroups as the gang plugins read them: parsed once per resourceVersion, and who is in one.

A pod joins a gang with the `scheduling.x-k8s.io/pod-group` label (the older
`pod-group.scheduling.sigs.k8s.io` is accepted too) naming a PodGroup of its
namespace.  The PodGroup (CRD scheduling.x-k8s.io/v1alpha1, scheduler-plugins')
says how many members must start together (`spec.minMember`), what they need
in total (`spec.minResources`), how long members wait for each other
(`spec.scheduleTimeoutSeconds`) and, through netsched's annotations, which
topology domain the whole gang must (`netsched.io/topology-required`) or should
(`netsched.io/topology-preferred`) fit in: the value is a node label key.  A
malformed PodGroup is a GroupError naming the field at fault, never a crash.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from netsched.framework.quantity import to_canonical
from netsched.framework.selectors import label_key_errors
from netsched.framework.types import ObjectRef, PodInfo
from netsched.kube.resources import PODGROUPS

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
LEGACY_POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
TOPOLOGY_REQUIRED = "netsched.io/topology-required"
TOPOLOGY_PREFERRED = "netsched.io/topology-preferred"
REQUIRED, PREFERRED = "required", "preferred"
PODGROUPS_KEY = PODGROUPS.key
PODGROUP_KIND = PODGROUPS.kind  # the resource of its ClusterEvents (queueing hints)
PODGROUP_API_VERSION = f"{PODGROUPS.group}/{PODGROUPS.version}"
_ABSENT = object()  # an annotation not set (its value may be anything, None included)
# Parsed PodGroups kept at most; the cache starts over past it (it is only a cache).
MAX_PARSED = 10_000


def group_name(pod: PodInfo) -> str:
    """The PodGroup a pod belongs to ("" when none)."""
    labels = pod.labels
    return labels.get(POD_GROUP_LABEL) or labels.get(LEGACY_POD_GROUP_LABEL) or ""


def full_name(pod: PodInfo) -> str:
    """ "namespace/group" of the pod's gang ("" when none)."""
    name = group_name(pod)
    return f"{pod.namespace}/{name}" if name else ""


def is_own_group(pod: PodInfo, raw: Any) -> bool:
    """Whether the PodGroup object `raw` (an event's object) is the one `pod` belongs to."""
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    if not isinstance(meta, Mapping):
        return False
    group = full_name(pod)
    return bool(group) and f"{meta.get('namespace') or 'default'}/{meta.get('name')}" == group


def spec_changed(old: Any, new: Any) -> bool:
    """Whether a PodGroup update (old and new objects) changed what the gang plugins' PreFilters
    read: the spec or a topology annotation.  Status writes (the scheduler's own included) and
    the rest of the metadata change nothing."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return False
    return old.get("spec") != new.get("spec") or _topology_annotations(old) != _topology_annotations(new)


def _topology_annotations(raw: Mapping[str, Any]) -> tuple[Any, ...]:
    """The topology annotations as parse_group reads them (_ABSENT: not set)."""
    meta = raw.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping):
        return (_ABSENT, _ABSENT)
    return tuple(annotations.get(key, _ABSENT) for key in (TOPOLOGY_REQUIRED, TOPOLOGY_PREFERRED))


class GroupError(ValueError):
    """A PodGroup the gang plugins cannot use; the message names the object and field."""


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """Where a gang must or should fit whole: one domain of node label `level`."""

    mode: str  # REQUIRED | PREFERRED
    level: str  # a node label key

    def __str__(self) -> str:
        return f"{self.mode} {self.level}"


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    min_resources: dict[str, int] = field(default_factory=dict)  # canonical units
    schedule_timeout: int | None = None
    created: float = 0.0  # epoch seconds of metadata.creationTimestamp (0 when unknown)
    resource_version: str = ""
    uid: str = ""
    topology: TopologyRequest | None = None  # from the annotations; None: the profile's default

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    def ref(self) -> ObjectRef:
        """The PodGroup as the object an Event is about."""
        return ObjectRef(
            PODGROUP_KIND, PODGROUP_API_VERSION, self.namespace, self.name, self.uid, self.resource_version
        )


def parse_group(raw: Mapping[str, Any]) -> PodGroup:
    meta = raw.get("metadata") or {}
    ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    where = f"PodGroup {ns}/{name}"
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise GroupError(f"{where}: spec must be an object")
    mm = spec.get("minMember", 0)
    if isinstance(mm, bool) or not isinstance(mm, int) or mm < 0:
        raise GroupError(f"{where}: spec.minMember must be a non-negative integer, got {mm!r}")
    timeout = spec.get("scheduleTimeoutSeconds")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0):
        raise GroupError(f"{where}: spec.scheduleTimeoutSeconds must be a positive integer, got {timeout!r}")
    res: dict[str, int] = {}
    for rname, q in (spec.get("minResources") or {}).items():
        try:
            res[str(rname)] = to_canonical(str(rname), q)
        except (ValueError, ArithmeticError) as e:
            raise GroupError(f"{where}: spec.minResources.{rname}: invalid quantity {q!r}") from e
    return PodGroup(
        ns,
        name,
        mm,
        res,
        timeout,
        _epoch(meta.get("creationTimestamp")),
        str(meta.get("resourceVersion") or ""),
        str(meta.get("uid") or ""),
        _topology(meta.get("annotations"), where),
    )


def _topology(annotations: Any, where: str) -> TopologyRequest | None:
    if not isinstance(annotations, Mapping):
        return None
    asked = [
        (mode, key, annotations[key])
        for mode, key in ((REQUIRED, TOPOLOGY_REQUIRED), (PREFERRED, TOPOLOGY_PREFERRED))
        if key in annotations
    ]
    if not asked:
        return None
    if len(asked) > 1:
        raise GroupError(
            f"{where}: metadata.annotations: {TOPOLOGY_REQUIRED} and {TOPOLOGY_PREFERRED} are both set; set one"
        )
    mode, key, level = asked[0]
    problems = label_key_errors(level) if isinstance(level, str) and level else ["must be a node label key"]
    if problems:
        raise GroupError(
            f"{where}: metadata.annotations[{key}]: invalid value {level!r}: {'; '.join(problems)}"
        )
    return TopologyRequest(mode, level)


def _epoch(stamp: Any) -> float:
    if not stamp:
        return 0.0
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class GroupCache:
    """Parsed PodGroups by (namespace, name, resourceVersion): the queue sort asks often."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, str], tuple[str, PodGroup | GroupError]] = {}
        self._lock = threading.Lock()

    def parse(self, raw: Mapping[str, Any]) -> PodGroup:
        meta = raw.get("metadata") or {}
        key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
        rv = str(meta.get("resourceVersion") or "")
        with self._lock:
            got = self._parsed.get(key)
        if got is None or got[0] != rv or not rv:
            try:
                value: PodGroup | GroupError = parse_group(raw)
            except GroupError as e:
                value = e
            got = (rv, value)
            with self._lock:
                if len(self._parsed) > MAX_PARSED:
                    self._parsed.clear()
                self._parsed[key] = got
        if isinstance(got[1], GroupError):
            raise got[1]
        return got[1]
