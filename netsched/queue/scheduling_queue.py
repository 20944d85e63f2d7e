"""The scheduling queue: which pending pod to try next, and when to retry a failed one.

One queue serves every profile (as in kube-scheduler, so all profiles share one
QueueSort).  A pending pod is in exactly one place:

- activeQ: ready to be tried, a heap in QueueSort order; pop() takes its head.
- backoffQ: failed recently, a heap by backoff expiry (initial x 2^(attempts-1),
  capped); flush moves expired ones to activeQ.
- unschedulable pool: failed and waiting for a cluster event that may help
  (move_all_to_active_or_backoff), or for max_unschedulable_seconds to pass.
  Pods rejected by PreEnqueue are kept here too, marked gated, and only an
  update of the pod itself (or activate) lets them out.

A popped pod is "in flight" until done(uid).  Cluster events and updates of the
pod seen meanwhile are remembered, so a pod that fails right after the cluster
changed under it retries after its backoff instead of waiting in the
unschedulable pool for an event that already happened.

Cluster events carry queueing hints (hints.py): with `queueing_hints` on (the
default) an event moves only the parked pods one of their rejecting plugins
says it may help, and an event that changed nothing any plugin reads (a node
heartbeat: ActionType 0) moves nothing.  Off, every event moves every parked
pod, as before hints existed.  A plain string event ("NodeAdd") is a wildcard.

A QueueSort key may read more than the pod (an object the pod refers to, such
as its group's creation time): the events its plugin names (sort_key_events)
re-sort the active pods they concern, so a pod queued before that object was
known does not keep the key it got without it.

Every entry into activeQ runs the pod's PreEnqueue plugins (kube's
moveToActiveQ).  The PreEnqueue function and the metrics hook run under the
queue lock: they must not call back into the queue.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from netsched.clock import Clock, SystemClock
from netsched.framework.cluster_events import WILDCARD, ActionType, ClusterEvent, QueueingHint
from netsched.framework.extension_points import AnyArgs, QueueSortPlugin
from netsched.framework.status import Status
from netsched.framework.types import PodInfo, QueuedPodInfo
from netsched.queue.heap import KeyedHeap, KeyFn
from netsched.queue.hints import HintMap, ask, is_wildcard
from netsched.queue.nominator import Nominator
from netsched.queue.policy import MetricsHook, PendingReporter, backoff_duration, pod_changed

log = logging.getLogger(__name__)

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
QUEUE_NAMES = (ACTIVE, BACKOFF, UNSCHEDULABLE, GATED)
"""The `queue` label values of scheduler_pending_pods."""

DEFAULT_INITIAL_BACKOFF = 1.0  # podInitialBackoffSeconds
DEFAULT_MAX_BACKOFF = 10.0  # podMaxBackoffSeconds
DEFAULT_MAX_UNSCHEDULABLE_SECONDS = 300.0  # kube's podMaxInUnschedulablePodsDuration
BACKOFF_FLUSH_INTERVAL = 1.0  # kube flushes backoffQ every second...
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0  # ...and looks for unschedulable leftovers every 30 s

PreEnqueueFn = Callable[[PodInfo], Status]
HintsFor = Callable[[str], HintMap | None]  # schedulerName -> that profile's hints
RECENT_EVENTS = 256  # hinted events kept to judge failed attempts; older attempts assume "moved"


@dataclass(slots=True)
class _InFlight:
    """What happened to a popped pod while it was being scheduled (until done())."""

    cycle: int
    moved: bool = False  # a wildcard event, activation or pod update arrived
    pod: PodInfo | None = None  # the latest version of the pod, if it was updated
    gone: bool = False  # deleted or bound meanwhile: never requeue it


class _LessKey:
    """Heap key for a QueueSort plugin without sort_key(): compares with less(), then FIFO."""

    __slots__ = ("qp", "seq", "less")

    def __init__(
        self, qp: QueuedPodInfo, seq: int, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]
    ) -> None:
        self.qp = qp
        self.seq = seq
        self.less = less

    def __lt__(self, other: _LessKey) -> bool:
        if self.less(self.qp, other.qp):
            return True
        if self.less(other.qp, self.qp):
            return False
        return self.seq < other.seq


def _active_key(sort: QueueSortPlugin[AnyArgs]) -> KeyFn[QueuedPodInfo]:
    if type(sort).sort_key is QueueSortPlugin.sort_key:
        less = sort.less
        return lambda qp, seq: _LessKey(qp, seq, less)

    def key(qp: QueuedPodInfo, seq: int) -> Any:
        k = sort.sort_key(qp)
        if k is None:
            raise TypeError(f"QueueSort plugin {sort.name!r} overrides sort_key() but returned None")
        return k

    return key


class SchedulingQueue:
    """kube-scheduler's PriorityQueue: activeQ, backoffQ and the unschedulable pool. Thread-safe."""

    def __init__(
        self,
        less_or_key: QueueSortPlugin[AnyArgs],
        pre_enqueue: PreEnqueueFn | None = None,
        clock: Clock | None = None,
        initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        max_unschedulable_seconds: float = DEFAULT_MAX_UNSCHEDULABLE_SECONDS,
        metrics: MetricsHook | None = None,
        nominator: Nominator | None = None,
        hints: HintsFor | None = None,
        queueing_hints: bool = True,
    ) -> None:
        """`hints` gives the HintMap of a profile (None: every event moves every pod);
        `queueing_hints=False` ignores hints altogether (kube's SchedulerQueueingHints off)."""
        if initial_backoff <= 0:
            raise ValueError(f"initial_backoff must be > 0, got {initial_backoff}")
        if max_backoff < initial_backoff:
            raise ValueError(f"max_backoff ({max_backoff}) must be >= initial_backoff ({initial_backoff})")
        if max_unschedulable_seconds <= 0:
            raise ValueError(f"max_unschedulable_seconds must be > 0, got {max_unschedulable_seconds}")
        self._pre_enqueue = pre_enqueue
        self._sort_name = less_or_key.name
        self._sort_events = tuple(less_or_key.sort_key_events())
        self._clock: Clock = clock if clock is not None else SystemClock()
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable_seconds = max_unschedulable_seconds
        self.nominator = nominator if nominator is not None else Nominator()
        self._metrics = PendingReporter(metrics)
        self._hints = hints
        self.queueing_hints = queueing_hints

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._active: KeyedHeap[QueuedPodInfo] = KeyedHeap(_active_key(less_or_key))
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap(lambda qp, seq: self.backoff_expiry(qp))
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, _InFlight] = {}
        self._scheduling_cycle = 0
        self._move_request_cycle = -1
        # Hinted events by the cycle they arrived in: a failed attempt of cycle c is judged
        # against those of cycle >= c (kube's inFlightEvents), binding failures included.
        self._recent: deque[tuple[int, ClusterEvent, object, object]] = deque()
        self._recent_floor = -1  # the newest cycle whose events were dropped from _recent
        self._closed = False
        self._report()

    # ------------------------------------------------------------ informer events

    def add(self, pod: PodInfo) -> bool:
        """A new pending pod. False if it is not queued: bound already, or being scheduled.

        A pod already queued is treated as an update of itself.
        """
        if pod.node_name:
            return False
        with self._lock:
            found = self._find(pod.uid)
            if found is not None:
                where, qp = found
                self.nominator.update_nominated(qp.pod, pod)
                self._update_queued(where, qp, qp.pod, pod)
            elif pod.uid in self._in_flight:
                self._note_in_flight_update(None, pod)
                return False
            else:
                self.nominator.add_nominated(pod)
                self._to_active(QueuedPodInfo(pod=pod, timestamp=self._clock.now()), "PodAdd")
            self._report()
            return True

    def update(self, old: PodInfo | None, new: PodInfo) -> None:
        """The pod changed. A bound pod leaves the queue; a gated one re-runs PreEnqueue.

        An unschedulable pod whose spec or labels changed moves to backoffQ (still
        backing off) or activeQ; attempts and timestamps are kept.  A pod not
        queued at all is added, as kube does.
        """
        with self._lock:
            self.nominator.update_nominated(old, new)
            if new.node_name:
                self._forget(new.uid)
            else:
                found = self._find(new.uid)
                if found is not None:
                    self._update_queued(found[0], found[1], old, new)
                elif new.uid in self._in_flight:
                    self._note_in_flight_update(old, new)
                else:
                    self._to_active(QueuedPodInfo(pod=new, timestamp=self._clock.now()), "PodUpdate")
            self._report()

    def delete(self, pod: PodInfo | str) -> bool:
        """The pod was deleted (pod or uid): it leaves the queue. True if it was queued."""
        uid = pod if isinstance(pod, str) else pod.uid
        with self._lock:
            self.nominator.delete_nominated(uid)
            removed = self._forget(uid)
            self._report()
            return removed

    # ------------------------------------------------------------ scheduling loop

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """The head of activeQ, waiting for one; None once closed or after timeout seconds.

        The timeout is real time (it is a wait, not queue bookkeeping).  The pod
        is in flight until done(uid).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                qp = self._active.pop()
                if qp is not None:
                    break
                if deadline is None:
                    self._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    self._cond.wait(remaining)
            qp.attempts += 1
            # As kube's pop: the rejectors of the last attempt leave with it (this attempt
            # records its own on failure), so scheduler_unschedulable_pods never keeps a stale one.
            qp.unschedulable_plugins = frozenset()
            qp.pending_plugins = frozenset()
            if qp.initial_attempt_timestamp is None:
                qp.initial_attempt_timestamp = self._clock.now()
            self._scheduling_cycle += 1
            self._in_flight[qp.pod.uid] = _InFlight(self._scheduling_cycle)
            self._report()
            return qp

    def done(self, uid: str) -> None:
        """Scheduling (and binding) of the pod ended; stop tracking events for it. Idempotent."""
        with self._lock:
            self._in_flight.pop(uid, None)

    def add_unschedulable_if_not_present(
        self, qp: QueuedPodInfo, pod_scheduling_cycle: int | None = None, *, error: bool = False
    ) -> bool:
        """Requeue a pod after a failed attempt. False if it is queued already or gone.

        error=True (an Error status, not a rejection) and a cluster event or pod
        update since the attempt's cycle started send it to backoffQ; otherwise it
        waits in the unschedulable pool.  pod_scheduling_cycle defaults to the
        cycle recorded when the pod was popped.  Call this before done(uid).
        """
        uid = qp.pod.uid
        with self._lock:
            flight = self._in_flight.get(uid)
            if self._find(uid) is not None or (flight is not None and flight.gone):
                return False
            if flight is not None and flight.pod is not None:
                qp.pod = flight.pod
            if qp.pod.node_name:
                return False
            cycle = pod_scheduling_cycle
            if cycle is None:
                cycle = flight.cycle if flight is not None else self._scheduling_cycle
            moved = (
                self._move_request_cycle >= cycle
                or (flight is not None and flight.moved)
                or self._helped_since(qp, cycle)
            )
            qp.timestamp = self._clock.now()
            qp.gated = False
            if error or moved:
                self._backoff.push(uid, qp)
                where = BACKOFF
            else:
                self._unschedulable[uid] = qp
                where = UNSCHEDULABLE
            log.debug(
                "Pod requeued after failure pod=%s queue=%s attempts=%d", qp.pod.key, where, qp.attempts
            )
            self._report()
            return True

    # ------------------------------------------------------------ moving pods

    def move_all_to_active_or_backoff(
        self,
        event: str | ClusterEvent,
        pre_check: Callable[[PodInfo], bool] | None = None,
        *,
        old: object = None,
        new: object = None,
    ) -> int:
        """A cluster event (NodeAdd, NodeUpdate, AssignedPodDelete...) may help unschedulable pods.

        A ClusterEvent moves the pods its queueing hints select (old/new: the object
        before and after, for the hint functions); a string is a wildcard event that
        moves them all.  Pods still backing off go to backoffQ, the others to
        activeQ; gated pods stay gated; pre_check, if given, selects the pods worth
        moving.  Pods in flight remember the event, so a failure the event may have
        overtaken sends them to backoffQ.  Active pods whose place in the order the
        event may change (the QueueSort plugin's sort_key_events) are sorted again.
        Returns how many pods left the unschedulable pool.
        """
        if isinstance(event, str):
            event = ClusterEvent(WILDCARD, ActionType.ALL, event)
        hinted = self.queueing_hints and not is_wildcard(event)
        if hinted and not event.action:
            return 0  # nothing any plugin reads changed (a node heartbeat)
        with self._lock:
            self._resort_active(event, old, new)
            moving = [
                qp
                for qp in self._unschedulable.values()
                if (pre_check is None or pre_check(qp.pod))
                and (not hinted or self._worth(qp, event, old, new))
            ]
            for qp in moving:
                del self._unschedulable[qp.pod.uid]
                self._requeue(qp, str(event))
            if hinted:
                self._recent.append((self._scheduling_cycle, event, old, new))
                if len(self._recent) > RECENT_EVENTS:
                    self._recent_floor = self._recent.popleft()[0]
            else:
                self._move_request_cycle = self._scheduling_cycle
                for flight in self._in_flight.values():
                    flight.moved = True
            if moving:
                log.debug("Moved unschedulable pods event=%s count=%d", event, len(moving))
            self._report()
            return len(moving)

    def activate(self, pods: Iterable[PodInfo | str]) -> int:
        """Move the given pods (or uids) from backoffQ or the unschedulable pool to activeQ now.

        Gated pods re-run PreEnqueue.  Returns how many pods entered activeQ.
        """
        activated = 0
        with self._lock:
            for pod in pods:
                uid = pod if isinstance(pod, str) else pod.uid
                qp = (
                    self._backoff.remove(uid)
                    or self._unschedulable.pop(uid, None)
                    or self._gated.pop(uid, None)
                )
                if qp is not None:
                    activated += self._to_active(qp, "ForceActivate")
                elif uid in self._in_flight:
                    self._in_flight[uid].moved = True
            self._report()
        return activated

    def flush(self) -> None:
        """Both periodic moves: expired backoffs, then unschedulable leftovers."""
        self.flush_backoff_completed()
        self.flush_unschedulable_leftover()

    def flush_backoff_completed(self) -> int:
        """Move pods whose backoff expired from backoffQ to activeQ; returns how many left backoffQ."""
        moved = 0
        with self._lock:
            now = self._clock.now()
            while (qp := self._backoff.peek()) is not None and self.backoff_expiry(qp) <= now:
                self._backoff.pop()
                self._to_active(qp, "BackoffComplete")
                moved += 1
            if moved:
                self._report()
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """Move pods unschedulable for over max_unschedulable_seconds to activeQ/backoffQ."""
        with self._lock:
            now = self._clock.now()
            stale = [
                qp
                for qp in self._unschedulable.values()
                if now - qp.timestamp > self.max_unschedulable_seconds
            ]
            for qp in stale:
                del self._unschedulable[qp.pod.uid]
                self._requeue(qp, "UnschedulableTimeout")
            if stale:
                self._report()
            return len(stale)

    def run_flush_loop(
        self,
        stop_event: threading.Event,
        interval: float = BACKOFF_FLUSH_INTERVAL,
        unschedulable_interval: float = UNSCHEDULABLE_FLUSH_INTERVAL,
    ) -> None:
        """Flush backoffQ every interval and unschedulable leftovers every unschedulable_interval.

        Runs in the caller's thread until stop_event is set or the queue is closed
        (noticed at the next tick).  Waits through the clock when it can wait, so a
        FakeClock drives it.
        """
        last_leftover = self._clock.now()
        while not stop_event.is_set() and not self._closed:
            try:
                self.flush_backoff_completed()
                if self._clock.now() - last_leftover >= unschedulable_interval:
                    last_leftover = self._clock.now()
                    self.flush_unschedulable_leftover()
            except Exception:
                log.exception("Scheduling queue flush failed")
            self._clock.wait(stop_event, interval)

    def close(self) -> None:
        """Stop the queue: pop() returns None from now on, waiting callers wake up."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    # ------------------------------------------------------------ inspection

    @property
    def scheduling_cycle(self) -> int:
        """How many pods were popped so far (kube's schedulingCycle)."""
        with self._lock:
            return self._scheduling_cycle

    @property
    def closed(self) -> bool:
        return self._closed

    def backoff_expiry(self, qp: QueuedPodInfo) -> float:
        """When the pod's backoff ends: its last failure time + the backoff for its attempts."""
        return qp.timestamp + backoff_duration(qp.attempts, self.initial_backoff, self.max_backoff)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return self._counts()

    def pending_pods(self) -> dict[str, list[PodInfo]]:
        """Queued pods by queue name (QUEUE_NAMES); order within a queue is unspecified."""
        with self._lock:
            return {
                ACTIVE: [qp.pod for qp in self._active.items()],
                BACKOFF: [qp.pod for qp in self._backoff.items()],
                UNSCHEDULABLE: [qp.pod for qp in self._unschedulable.values()],
                GATED: [qp.pod for qp in self._gated.values()],
            }

    def rejections(self) -> dict[tuple[str, str], int]:
        """Queued pods per (plugin that rejected them, schedulerName): kube's
        scheduler_unschedulable_pods, which counts a pod from its failed attempt to its next pop.
        Gated pods are not counted (kube reports them as pending_pods{queue="gated"})."""
        out: dict[tuple[str, str], int] = {}
        with self._lock:
            queued = (*self._active.items(), *self._backoff.items(), *self._unschedulable.values())
            for qp in queued:
                for plugin in qp.unschedulable_plugins | qp.pending_plugins:
                    key = (plugin, qp.pod.scheduler_name)
                    out[key] = out.get(key, 0) + 1
        return out

    def get(self, uid: str) -> QueuedPodInfo | None:
        """The queued entry of the pod, wherever it is (not pods in flight)."""
        with self._lock:
            found = self._find(uid)
            return None if found is None else found[1]

    def where(self, uid: str) -> str | None:
        """The name of the queue holding the pod, or None."""
        with self._lock:
            found = self._find(uid)
            return None if found is None else found[0]

    def in_flight(self) -> list[str]:
        """Uids of pods popped and not yet done()."""
        with self._lock:
            return list(self._in_flight)

    def __contains__(self, pod: object) -> bool:
        uid = pod.uid if isinstance(pod, PodInfo) else pod
        if not isinstance(uid, str):
            return False
        with self._lock:
            return self._find(uid) is not None

    def __len__(self) -> int:
        with self._lock:
            return len(self._active) + len(self._backoff) + len(self._unschedulable) + len(self._gated)

    # ------------------------------------------------------------ internals (lock held)

    def _counts(self) -> dict[str, int]:
        return {
            ACTIVE: len(self._active),
            BACKOFF: len(self._backoff),
            UNSCHEDULABLE: len(self._unschedulable),
            GATED: len(self._gated),
        }

    def _report(self) -> None:
        self._metrics.report(self._counts())

    def _find(self, uid: str) -> tuple[str, QueuedPodInfo] | None:
        qp = self._active.get(uid)
        if qp is not None:
            return ACTIVE, qp
        qp = self._backoff.get(uid)
        if qp is not None:
            return BACKOFF, qp
        qp = self._unschedulable.get(uid)
        if qp is not None:
            return UNSCHEDULABLE, qp
        qp = self._gated.get(uid)
        if qp is not None:
            return GATED, qp
        return None

    def _remove(self, uid: str) -> QueuedPodInfo | None:
        return (
            self._active.remove(uid)
            or self._backoff.remove(uid)
            or self._unschedulable.pop(uid, None)
            or self._gated.pop(uid, None)
        )

    def _forget(self, uid: str) -> bool:
        """The pod was deleted or bound: drop it, and never requeue it if in flight."""
        flight = self._in_flight.get(uid)
        if flight is not None:
            flight.gone = True
        return self._remove(uid) is not None

    def _resort_active(self, event: ClusterEvent, old: object, new: object) -> None:
        """Sort again the active pods whose place the event may change (the QueueSort plugin's
        sort_key_events): a pod queued before the object its key reads was known sorted by its own time."""
        if is_wildcard(event):
            return
        regs = [r for r in self._sort_events if r.event.match(event)]
        if not regs or not len(self._active):
            return
        for qp in list(self._active.items()):
            if any(ask(r, self._sort_name, qp, old, new) is QueueingHint.QUEUE for r in regs):
                self._active.push(qp.pod.uid, qp)

    def _worth(self, qp: QueuedPodInfo, event: ClusterEvent, old: object, new: object) -> bool:
        hints = self._hints(qp.pod.scheduler_name) if self._hints is not None else None
        return hints is None or hints.worth_requeuing(qp, event, old, new)

    def _helped_since(self, qp: QueuedPodInfo, cycle: int) -> bool:
        """Could an event since the attempt's cycle began have helped the pod? (kube's inFlightEvents)"""
        if cycle <= self._recent_floor:
            return True  # some of them are forgotten: assume one helps
        for ev_cycle, event, old, new in reversed(self._recent):
            if ev_cycle < cycle:
                break
            if self._worth(qp, event, old, new):
                return True
        return False

    def _backing_off(self, qp: QueuedPodInfo) -> bool:
        return not qp.gated and self.backoff_expiry(qp) > self._clock.now()

    def _requeue(self, qp: QueuedPodInfo, event: str) -> None:
        """Place a pod that left the unschedulable pool: backoffQ if still backing off."""
        if self._backing_off(qp):
            self._backoff.push(qp.pod.uid, qp)
        else:
            self._to_active(qp, event)

    def _to_active(self, qp: QueuedPodInfo, event: str) -> bool:
        """Run PreEnqueue, then push to activeQ (True) or keep the pod gated (False).

        The caller has taken qp out of wherever it was.
        """
        uid = qp.pod.uid
        status = self._run_pre_enqueue(qp.pod)
        if not status.ok:
            qp.gated = True
            if status.plugin:
                qp.unschedulable_plugins = frozenset({status.plugin})
            self._gated[uid] = qp
            log.debug("Pod gated pod=%s event=%s status=%s", qp.pod.key, event, status)
            return False
        qp.gated = False
        self._active.push(uid, qp)
        self._cond.notify()
        return True

    def _run_pre_enqueue(self, pod: PodInfo) -> Status:
        if self._pre_enqueue is None:
            return Status.success()
        try:
            return self._pre_enqueue(pod)
        except Exception as e:
            # kube logs a PreEnqueue error and keeps the pod gated; one bad plugin must
            # not break the informer thread that called add/update.
            log.exception("PreEnqueue failed pod=%s", pod.key)
            return Status.as_error(e)

    def _update_queued(self, where: str, qp: QueuedPodInfo, old: PodInfo | None, new: PodInfo) -> None:
        uid = new.uid
        changed = old is None or pod_changed(old, new)
        qp.pod = new
        if where == ACTIVE:
            self._active.push(uid, qp)  # re-key: the sort order may depend on the pod
        elif where == GATED:
            del self._gated[uid]
            self._to_active(qp, "PodUpdate")
        elif where == UNSCHEDULABLE and changed:
            del self._unschedulable[uid]
            self._requeue(qp, "PodUpdate")
        # backoffQ keeps its order: it depends on attempts and failure time only.

    def _note_in_flight_update(self, old: PodInfo | None, new: PodInfo) -> None:
        flight = self._in_flight[new.uid]
        previous = flight.pod if flight.pod is not None else old
        if previous is None or pod_changed(previous, new):
            flight.moved = True
        flight.pod = new
