"""Outcomes of plugin calls.

Plugins report what happened as a Status rather than by raising: the runtime
and the queue decide what to do with a pod (retry soon, wait for a cluster
event, try preemption) from the code alone.  Faults (bugs, unexpected
exceptions) are turned into Error statuses tagged with the plugin name by the
runtime, so one broken plugin fails one pod, not the scheduler.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    """What a Status means for the pod; same values and meanings as kube-scheduler."""

    SUCCESS = 0
    """The plugin ran and the pod may proceed."""
    ERROR = 1
    """Internal fault (plugin bug, API failure). The pod is requeued with backoff;
    preemption is not attempted."""
    UNSCHEDULABLE = 2
    """The pod does not fit this node now, but removing pods (preemption) may help.
    The pod waits in the unschedulable pool for a relevant cluster event."""
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    """The pod can never fit this node as it is (node selector, taint...);
    preemption skips the node."""
    WAIT = 4
    """Permit only: hold the pod before binding until allowed, rejected or timed out."""
    SKIP = 5
    """PreFilter/PreScore: the plugin has nothing to do for this pod, so its
    Filter/Score is skipped.  Bind: this plugin does not bind this pod."""
    PENDING = 6
    """The pod waits for something outside the scheduler (e.g. a PreEnqueue gate)
    and is not retried until that changes."""

    @property
    def label(self) -> str:
        """kube's name for the code, as used in metric labels ("UnschedulableAndUnresolvable")."""
        return "".join(w.capitalize() for w in self.name.split("_"))

    @property
    def is_rejection(self) -> bool:
        return self in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)


@dataclass(slots=True)
class Status:
    """The result of one plugin call: a code, human reasons, and who said it."""

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""
    error: BaseException | None = None

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, list(reasons), plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons), plugin)

    @classmethod
    def as_error(cls, err: BaseException, plugin: str = "") -> Status:
        return cls(Code.ERROR, [str(err) or type(err).__name__], plugin, err)

    @classmethod
    def skip(cls) -> Status:
        return _SKIP

    @classmethod
    def wait(cls, plugin: str = "") -> Status:
        return cls(Code.WAIT, [], plugin)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    @property
    def is_rejection(self) -> bool:
        return self.code.is_rejection

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin or self.code in (Code.SUCCESS, Code.SKIP):
            return self
        return Status(self.code, self.reasons, plugin, self.error)

    def __str__(self) -> str:
        msg = self.message()
        who = f"{self.plugin}: " if self.plugin else ""
        return f"{self.code.name} {who}{msg}".rstrip()


# Shared immutable-by-convention instances for the two outcomes returned on every call.
_SUCCESS = Status()
_SKIP = Status(Code.SKIP)


def merge(statuses: list[Status]) -> Status:
    """Combine several statuses into one: the most severe code wins, reasons are joined."""
    if not statuses:
        return _SUCCESS
    worst = max(statuses, key=lambda s: _SEVERITY[s.code])
    if worst.ok:
        return worst
    reasons = [r for s in statuses if s.code == worst.code for r in s.reasons]
    return Status(worst.code, reasons, worst.plugin, worst.error)


_SEVERITY = {
    Code.SUCCESS: 0,
    Code.SKIP: 0,
    Code.WAIT: 1,
    Code.PENDING: 2,
    Code.UNSCHEDULABLE: 3,
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: 4,
    Code.ERROR: 5,
}
