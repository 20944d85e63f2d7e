"""Periodic work a plugin registers (Handle.every), run on the process's one loop.

A plugin family may need work done off the scheduling cycle at a pace: retry
what waited out a backoff, write a status it keeps.  Rather than each starting
a thread or a timer, it registers a task here; the process runs every task on
one loop thread (`run`), on the injected clock, and ends it with the process's
stop event, after one last run of each task (what was marked gets written).

A task belongs to the plugins that register it: while frameworks are built
(`registering`, at start and at each hot reload) the registrations are staged,
and a build that succeeds replaces the task set with them: a name registered
again runs the new plugin's callback at the new interval and keeps its due
time; a task no new plugin registered (its plugin or profile dropped) stops.
The in-memory cluster calls `run_due` itself, between scheduling steps, so
simulations stay deterministic.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from netsched.clock import Clock
from netsched.framework.staging import Staging

log = logging.getLogger(__name__)

# How long the loop sleeps at most when no task is due sooner (a task's `soon()` wakes it).
MAX_IDLE_SECONDS = 1.0


@dataclass(slots=True)
class _Task:
    name: str
    every: float
    run: Callable[[], object]
    due: float


class PeriodicTasks:
    """The registered tasks of one process (shared by every profile and reload)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._tasks: dict[str, _Task] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        # name -> (every, run) registered by the frameworks being built; None between builds
        self._staging: Staging[dict[str, tuple[float, Callable[[], object]]]] = Staging(self._lock)

    def every(self, name: str, seconds: float, run: Callable[[], object]) -> None:
        """Run `run` every `seconds`; a name registered again gets the new callback and
        interval and keeps its due time (during a build: once the build succeeds)."""
        if seconds <= 0:
            raise ValueError(f"periodic task {name}: every must be positive, got {seconds}")
        with self._lock:
            staged = self._staging.staged
            if staged is not None:
                staged[name] = (seconds, run)
                return
            self._put(name, seconds, run)
        self._wake.set()

    @contextmanager
    def registering(self) -> Iterator[None]:
        """Frameworks are built inside: on success their registrations become the task set
        (tasks nobody registered again stop); on failure the tasks stay as they were."""
        with self._staging.build(dict, self._replace):
            yield
        self._wake.set()

    def _replace(self, staged: dict[str, tuple[float, Callable[[], object]]]) -> None:
        """The task set becomes `staged` (lock held): a name kept keeps its due time."""
        self._tasks = {name: self._tasks[name] for name in staged if name in self._tasks}
        for name, (seconds, run) in staged.items():
            self._put(name, seconds, run)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._tasks)

    def due(self, name: str) -> float | None:
        """When task `name` is next due (the clock's now() time; None: no such task): a loop
        that moves time itself (netsched simulate) wakes then."""
        with self._lock:
            task = self._tasks.get(name)
            return task.due if task is not None else None

    def _put(self, name: str, seconds: float, run: Callable[[], object]) -> None:
        """Add or replace a task (lock held); a replaced one keeps its due time."""
        task = self._tasks.get(name)
        if task is None:
            self._tasks[name] = _Task(name, seconds, run, self._clock.now() + seconds)
        else:
            task.every, task.run = seconds, run

    def soon(self, name: str) -> None:
        """Run task `name` at the loop's next turn (work was just marked for it)."""
        with self._lock:
            task = self._tasks.get(name)
            if task is not None:
                task.due = min(task.due, self._clock.now())
        self._wake.set()

    def run_due(self) -> int:
        """Run every task that is due; how many ran.  A task that raises is logged, and the
        others still run: one family's fault does not stop another's work."""
        now = self._clock.now()
        with self._lock:
            due = [t for t in self._tasks.values() if t.due <= now]
            for t in due:
                t.due = now + t.every
        for t in due:
            _run(t)
        return len(due)

    def run_all(self) -> None:
        """Run every task once now (the last run at shutdown)."""
        with self._lock:
            tasks = list(self._tasks.values())
        for t in tasks:
            _run(t)

    def next_due(self) -> float:
        """Seconds until the next task is due (MAX_IDLE_SECONDS when none is sooner)."""
        now = self._clock.now()
        with self._lock:
            soonest = min((t.due for t in self._tasks.values()), default=now + MAX_IDLE_SECONDS)
        return max(0.0, min(soonest - now, MAX_IDLE_SECONDS))

    def run(self, stop: threading.Event) -> None:
        """The loop: run what is due, sleep until the next task is due or one asks to run
        soon, until `stop` is set; then run every task a last time."""
        while not stop.is_set():
            self._wake.clear()
            self.run_due()
            self._clock.wait(self._wake, self.next_due())
        self.run_all()

    def stop(self) -> None:
        """Wake the loop so it sees the stop event at once (set the event first)."""
        self._wake.set()


def _run(task: _Task) -> None:
    try:
        task.run()
    except Exception:
        log.exception("Periodic task failed task=%s", task.name)
