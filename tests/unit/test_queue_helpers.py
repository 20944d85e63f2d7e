"""Shared pieces of the scheduling queue tests: QueueSort plugins, PreEnqueue, a queue factory."""

from __future__ import annotations

from typing import Any

from netsched.framework import QueueSortPlugin
from netsched.framework.status import Code, Status
from netsched.framework.types import PodInfo, QueuedPodInfo
from netsched.queue import SchedulingQueue
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock


class LessSort(QueueSortPlugin):
    """PrioritySort through less() only: higher priority first, then older timestamp."""

    name = "LessSort"

    def __init__(self) -> None:
        super().__init__(None, None)  # type: ignore[arg-type]

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        return a.timestamp < b.timestamp


class KeySort(LessSort):
    """The same order with the sort_key fast path."""

    name = "KeySort"

    def sort_key(self, qp: QueuedPodInfo) -> Any:
        return (-qp.pod.priority, qp.timestamp)


def gates_pre_enqueue(pod: PodInfo) -> Status:
    """Like the SchedulingGates plugin."""
    if pod.scheduling_gates:
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            [f"waiting for scheduling gates: {list(pod.scheduling_gates)}"],
            "SchedulingGates",
        )
    return Status.success()


def new_queue(
    clock: FakeClock | None = None, sort: QueueSortPlugin | None = None, **kw: Any
) -> SchedulingQueue:
    return SchedulingQueue(sort or KeySort(), gates_pre_enqueue, clock or FakeClock(), **kw)


def pod(name: str, priority: int = 0, **kw: Any) -> PodInfo:
    b = make_pod(name).uid(f"uid-{name}").priority(priority)
    for g in kw.pop("gates", ()):
        b = b.gate(g)
    for k, v in kw.pop("labels", {}).items():
        b = b.label(k, v)
    if "node" in kw:
        b = b.node(kw.pop("node"))
    if "nominated" in kw:
        b = b.nominated(kw.pop("nominated"))
    assert not kw, kw
    return b.info()
