"""Small policies of the scheduling queue: backoff length, "did the pod really change", metrics.

Kept apart from the queue's bookkeeping so each rule can be read (and tested)
on its own.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import fields
from typing import Any, Protocol, runtime_checkable

from netsched.framework.types import PodInfo

log = logging.getLogger(__name__)


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """kube's calculateBackoffDuration: initial x 2^(attempts-1), capped at maximum.

    A pod never attempted (attempts 0, e.g. a gated pod) has no backoff.
    """
    if attempts <= 0:
        return 0.0
    # The cap on the exponent only avoids float overflow; the result is capped anyway.
    return min(math.ldexp(initial, min(attempts - 1, 64)), maximum)


# Fields a pod update may change without the pod becoming any more schedulable
# (kube's isPodUpdated drops these before comparing).
_VOLATILE_METADATA = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})
_STATUS_FIELDS = frozenset({"resource_version", "nominated_node_name", "phase", "raw"})
_COMPARED_FIELDS = tuple(f.name for f in fields(PodInfo) if f.name not in _STATUS_FIELDS)


def pod_changed(old: PodInfo, new: PodInfo) -> bool:
    """True if new differs from old in a way that may make it schedulable.

    Like kube's isPodUpdated: status, resourceVersion, generation, managed
    fields and finalizers do not count.  Records built by hand (no raw JSON)
    are compared field by field.
    """
    if old.raw and new.raw:
        if old.raw.get("spec") != new.raw.get("spec"):
            return True
        return _stable_metadata(old.raw) != _stable_metadata(new.raw)
    return any(getattr(old, name) != getattr(new, name) for name in _COMPARED_FIELDS)


def _stable_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {k: v for k, v in meta.items() if k not in _VOLATILE_METADATA}


@runtime_checkable
class PendingGauge(Protocol):
    """What the queue needs of a metrics hub: netsched.observability's Metrics has it."""

    def set_pending(self, queue: str, count: int) -> None: ...


MetricsHook = Callable[[str, int], None] | PendingGauge


class PendingReporter:
    """Reports queue sizes to a metrics hook, only when a size changed.

    A failing hook is logged once and otherwise ignored: metrics must never stop
    pods from being queued.
    """

    def __init__(self, hook: MetricsHook | None) -> None:
        self._set: Callable[[str, int], None] | None
        if hook is None:
            self._set = None
        elif isinstance(hook, PendingGauge):
            self._set = hook.set_pending
        else:
            self._set = hook
        self._last: dict[str, int] = {}
        self._failed = False

    def report(self, counts: dict[str, int]) -> None:
        if self._set is None:
            return
        for queue, n in counts.items():
            if self._last.get(queue) == n:
                continue
            self._last[queue] = n
            try:
                self._set(queue, n)
            except Exception:
                if not self._failed:
                    log.exception("Pending pods metrics hook failed queue=%s", queue)
                    self._failed = True
