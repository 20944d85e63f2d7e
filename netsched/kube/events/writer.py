"""The writer threads: take queued occurrences in batches and write them, retrying transient failures.

Each wake-up of a writer thread costs as much CPU as the request it sends, so
a writer takes everything queued at once (up to BATCH) and creates the new
events together, pipelined over the sink's connections: a burst costs one
wake-up and one round trip, not one each. It does not wait for a batch's
replies before sending the next: up to IN_FLIGHT batches are out at once, and
the writer reads each batch's replies when they come (its Inbox wakes it for
a new event or a reply, whichever is first), so an event waits in memory for
at most a wake-up, not for the round trip of the batch before it (what a
SIGKILL loses is what is held unwritten). A write that fails for a transient
reason (429, 5xx, reset, timeout) is retried with backoff (a server's
Retry-After wins) until it succeeds or shutdown gives up (`Delivery.abandon`);
the members of a batch that failed so are retried together, so a backlog
built up in an outage drains a batch per round trip once the server answers;
permanent failures (403, 422, a deleted namespace) are counted and skipped.
A pod's events are written in order: one writer owns each pod, a batch never
holds two new events of one pod, and an event of a pod whose earlier create
is still unanswered is held back until that one is written (or given up).

`Delivery` is what every writer shares (the sink and the API group it serves,
the retry policy, counters and once-only warnings); the EventBroadcaster is
one, with the queues and threads on top.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

import tenacity

from netsched.clock import Clock, SystemClock
from netsched.kube.client import JsonObj
from netsched.kube.errors import AlreadyExists, ApiError, NotFound, is_transient, retry_after_hint
from netsched.kube.events.inbox import Inbox
from netsched.kube.events.recorder import MAX_FIELD, Occurrence, event_body
from netsched.kube.events.series import EventSeries, SeriesCache
from netsched.kube.events.sink import CORE_V1, EVENTS_V1, EventSink, Sent, Written
from netsched.retry import policy, retry_after_first

log = logging.getLogger(__name__)

BATCH = 32  # new events one writer creates together
IN_FLIGHT = 4  # batches of creates one writer has sent and not yet read the replies of
_IDLE_WAKE = 0.5  # seconds a writer waits for work before checking for due series and shutdown


@dataclass(frozen=True, slots=True)
class EventRetry:
    """Backoff between attempts at a transiently failing write: from `backoff`, doubling, with up to
    `backoff` of jitter, capped at `max_backoff`; a server's Retry-After wins when longer (capped at
    `max_retry_after`). There is no attempt limit: only shutdown ends it.

    The cap is how long events can stay stuck after the API server answers again (plus one
    write's timeout, sink.TIMEOUT, when the last attempt hung on a dead connection). client-go
    sleeps 10 s; with that cap a backlog waited up to 10 s after a restart. A writer retries
    one batch (up to BATCH creates) at a time, so 2 s costs a down server that every 2 s."""

    backoff: float = 0.1
    max_backoff: float = 2.0
    max_retry_after: float = 30.0


class Flush:
    """A marker put on every writer's queue; done once each writer has reached it."""

    def __init__(self, writers: int) -> None:
        self._left = writers
        self._lock = threading.Lock()
        self.done = threading.Event()

    def arrive(self) -> None:
        with self._lock:
            self._left -= 1
            if self._left <= 0:
                self.done.set()


STOP = object()  # the marker that ends a writer, once what was queued before it is written


class Abandoned(Exception):
    """Shutdown's deadline passed while a write was still failing."""


class DeliveryOptions(TypedDict, total=False):
    """Delivery's keyword arguments, for the classes built on it."""

    instance: str
    dedup_window: float
    series_interval: float
    retry: EventRetry | None
    clock: Clock | None
    sleep: Callable[[float], object] | None
    on_drop: Callable[[str], None] | None
    on_written: Callable[[float], None] | None


class Delivery:
    """What every writer thread shares: the sink and the API group it serves, the retry policy,
    the counters (for tests and the scheduler's metrics) and the once-only warnings.

    `on_drop(reason)` is called for each event dropped ("full", "stopped",
    "shutdown") and `on_written(seconds)` with the delay from `event()` to
    the API server accepting each new event.
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        instance: str = "",
        dedup_window: float = 600.0,
        series_interval: float = 60.0,
        retry: EventRetry | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], object] | None = None,
        on_drop: Callable[[str], None] | None = None,
        on_written: Callable[[float], None] | None = None,
    ) -> None:
        self.sink = sink
        self.clock: Clock = clock or SystemClock()
        self.instance = (instance or socket.gethostname())[:MAX_FIELD]
        self.dedup_window = dedup_window
        self.series_interval = series_interval
        self.retry = retry or EventRetry()
        self.api = EVENTS_V1
        self._on_drop = on_drop
        self._on_written = on_written
        self._abandon = threading.Event()  # set when shutdown's deadline passes
        self._sleep = sleep  # between retries; by default a wait that abandon() cuts short
        self._last_name_ns = 0
        self._logged: set[str] = set()
        self._lock = threading.Lock()
        self.written = 0
        self.patched = 0
        self.deduplicated = 0
        self.dropped = 0
        self.failed = 0
        self.retries = 0

    def _drop(self, why: str) -> None:
        with self._lock:
            self.dropped += 1
        if self._on_drop is not None:
            self._on_drop(why)
        self._warn_once(f"drop:{why}", "Dropping event reason=%s dropped=%d", why, self.dropped)

    def _unique_ns(self, wall: float) -> int:
        # kube names events <object>.<unix nanos in hex>; keep them unique even with a coarse clock.
        with self._lock:
            ns = max(int(wall * 1e9), self._last_name_ns + 1)
            self._last_name_ns = ns
            return ns

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def _retrying(self) -> tenacity.Retrying:
        r = self.retry
        return policy(
            is_transient,
            backoff=r.backoff,
            max_backoff=r.max_backoff,
            stop=tenacity.stop_never,
            sleep=self._sleep,
            before_sleep=self._before_retry,
            retry_after=retry_after_hint,
            max_retry_after=r.max_retry_after,
            cancel=self._abandon,
        )

    def _before_retry(self, state: tenacity.RetryCallState) -> None:
        self._count("retries")
        err = state.outcome.exception() if state.outcome is not None else None
        self._warn_once(
            f"retry:{type(err).__name__}:{getattr(err, 'status', 0)}",
            "Event write failed, retrying until it succeeds err=%s",
            err,
        )

    def _body(self, api: str, name: str, occ: Occurrence) -> JsonObj:
        return event_body(api, name, occ, self.instance)

    def _failed(self, e: Exception, occ: Occurrence) -> None:
        self._count("failed")
        kind = f"create:{type(e).__name__}:{getattr(e, 'status', 0)}"
        self._warn_once(
            kind, "Cannot write event pod=%s/%s reason=%s err=%s", occ.namespace, occ.name, occ.reason, e
        )

    def _written(self, occ: Occurrence) -> None:
        self._count("written")
        if self._on_written is not None:
            self._on_written(max(0.0, self.clock.wall() - occ.wall))

    def _warn_once(self, kind: str, msg: str, *args: Any) -> None:
        """Warn the first time a kind of failure happens; later ones only at debug."""
        with self._lock:
            first = kind not in self._logged
            self._logged.add(kind)
        log.log(logging.WARNING if first else logging.DEBUG, msg, *args)


@dataclass(slots=True, eq=False)
class _Batch:
    """New events sent together (EventSink.send_many), their replies still to read."""

    api: str
    pending: list[tuple[Occurrence, str]]  # (occurrence, event name)
    sent: Sent


class DirectWrite:
    """A create another thread is sending (Writer.send_now), as the writer finds it queued."""

    __slots__ = ("batch", "occ", "ready")

    def __init__(self, occ: Occurrence) -> None:
        self.occ = occ
        self.ready = threading.Event()  # set once `batch` is there
        self.batch: _Batch | None = None


class Writer:
    """One writer thread, its queue, and the series (correlator state) of the pods it owns."""

    def __init__(self, owner: Delivery, index: int, queue_size: int, max_series: int) -> None:
        self.owner = owner
        self.queue = Inbox(queue_size)
        self.series = SeriesCache(max_series, owner.dedup_window)
        self.last_sweep = owner.clock.wall()
        self.retrying = owner._retrying()
        # Occurrences taken off the queue and not yet written, failed, merged into a series or
        # dropped: each settles on its own, so a half-written batch counts only what is left.
        self.in_flight = 0
        self.written_off = False  # stop() has counted what this writer holds as dropped
        self._held = threading.Lock()
        self._batches: list[_Batch] = []  # sent, oldest first
        self._busy: set[str] = set()  # pods with a create in a batch not yet answered
        self._waiting: list[Occurrence] = []  # events of busy pods, in order, held until answered
        self.thread = threading.Thread(target=self._run, name=f"event-writer-{index}", daemon=True)

    def _run(self) -> None:
        o = self.owner
        try:
            while True:
                items = self.queue.take(BATCH)
                if not items:
                    if o._abandon.is_set() and not self._batches:
                        return
                    self._await(_IDLE_WAKE)
                    if not self._batches and self.queue.empty():
                        self._sweep_if_due()
                    continue
                occs: list[Occurrence] = []
                for item in items:
                    if isinstance(item, Occurrence):
                        occs.append(item)
                        continue
                    self._take(occs)
                    occs = []
                    if isinstance(item, DirectWrite):
                        self._guarded(self._adopt, item)
                        continue
                    # A marker: everything queued before it is written (or given up) first.
                    self._take(occs)
                    occs = []
                    self._guarded(self._drain, None)
                    self._guarded(self._sweep, True)
                    if item is STOP:
                        return
                    if isinstance(item, Flush):
                        item.arrive()
                self._take(occs)
                self._sweep_if_due()
        finally:
            self.queue.close()

    def send_now(self, occ: Occurrence) -> bool:
        """Create `occ` from the calling thread (a binding thread that has just bound its pod),
        without waking the writer, when nothing of its pod is owed (queued, held or unanswered),
        fewer than IN_FLIGHT batches are out, it repeats no series and its rate-limit token is
        there now: the event leaves the process with the thread already running, instead of
        after a hand-over to the writer. The writer reads the reply when it next wakes, and
        retries a failure as any other. False: queue it."""
        o = self.owner
        if o._abandon.is_set():
            return False
        direct = DirectWrite(occ)
        if not self.queue.claim(
            occ.pod, IN_FLIGHT, lambda: self.series.repeat_of(occ) is None and o.sink.reserve(), direct
        ):
            return False
        api, name = o.api, ""
        try:
            name = self._name(occ)
            sent = o.sink.send_many(api, [(occ.namespace, o._body(api, name, occ))], reserved=True)
        except Exception as e:  # the writer treats it as the create's failure
            sent = Written([e])
        direct.batch = _Batch(api, [(occ, name or self._name(occ))], sent)
        direct.ready.set()
        return True

    def _adopt(self, direct: DirectWrite) -> None:
        """A create another thread sent (send_now): read its reply like the writer's own."""
        direct.ready.wait()
        batch = direct.batch
        assert batch is not None
        with self._held:
            self.in_flight += 1
        self._busy.add(direct.occ.pod)
        if batch.sent.filenos():
            self._batches.append(batch)
        else:
            self._settle_batch(batch)

    def _sweep_if_due(self) -> None:
        if self.owner.clock.wall() - self.last_sweep >= self.owner.series_interval:
            self._guarded(self._sweep, False)

    def _take(self, occs: list[Occurrence]) -> None:
        """Occurrences just taken off the queue: counted as held, then recorded."""
        if not occs:
            return
        with self._held:
            self.in_flight += len(occs)
        self._guarded(self._record_all, occs)

    def _await(self, timeout: float) -> None:
        """Wait up to `timeout` for an item or a reply, and read the replies that came."""
        fds, timeout = self._lanes(timeout)
        self._read(set(self.queue.wait(fds, timeout)))

    def _lanes(self, timeout: float) -> tuple[list[int], float]:
        """The connections whose replies are awaited, and how long to wait for them: `timeout`, cut
        to the first batch's deadline, or 0 when a batch has nothing left to read."""
        fds: list[int] = []
        for b in self._batches:
            lanes = b.sent.filenos()
            if not lanes:
                timeout = 0.0
            elif b.sent.deadline is not None:
                timeout = max(0.0, min(timeout, b.sent.deadline - time.monotonic()))
            fds.extend(lanes)
        return fds, timeout

    def _read(self, ready: set[int]) -> None:
        """Read the lanes in `ready`, then settle every batch that has all its replies (or whose
        deadline passed)."""
        now = time.monotonic()
        for batch in list(self._batches):
            if batch not in self._batches:
                continue  # settled along with another batch's retry
            for fd in batch.sent.filenos():
                if fd in ready:
                    batch.sent.read(fd)
            deadline = batch.sent.deadline
            if not batch.sent.filenos() or (deadline is not None and deadline <= now):
                self._batches.remove(batch)
                self._guarded(self._settle_batch, batch)

    def _drain(self, _: object = None) -> None:
        """Until no batch is out and no event is held back: read replies, send what they free."""
        while self._batches or self._waiting:
            if not self._batches:  # held events whose pods are free (a settle that failed)
                waiting, self._waiting = self._waiting, []
                self._busy.clear()
                self._record_all(waiting)
                continue
            fds, timeout = self._lanes(_IDLE_WAKE)
            ready, _, _ = select.select(fds, [], [], timeout) if fds and timeout else (fds, [], [])
            self._read(set(ready))

    def _settle(self, occ: Occurrence) -> None:
        self.queue.settled(occ.pod)
        with self._held:
            self.in_flight = max(0, self.in_flight - 1)

    def _written(self, occ: Occurrence) -> None:
        self._settle(occ)
        self.owner._written(occ)

    def _failed(self, e: Exception, occ: Occurrence) -> None:
        self._settle(occ)
        self.owner._failed(e, occ)

    def _dropped(self, occ: Occurrence) -> None:
        """Drop a held occurrence at shutdown, unless stop() has counted it already (write_off)."""
        self.queue.settled(occ.pod)
        with self._held:
            if self.written_off:
                return
            self.in_flight = max(0, self.in_flight - 1)
        self.owner._drop("shutdown")

    def write_off(self) -> int:
        """How many occurrences this writer holds, now counted as dropped by the caller: a
        writer still stuck in a request drops none of them again when the request returns."""
        with self._held:
            self.written_off = True
            held, self.in_flight = self.in_flight, 0
        return held

    def _guarded(self, fn: Any, arg: Any) -> None:
        try:
            fn(arg)
        except Exception:  # the writer thread must survive anything
            log.exception("Event writer failed")
            # What the failed step held is lost: count only what is still held back or out.
            with self._held:
                self.in_flight = len(self._waiting) + sum(len(b.pending) for b in self._batches)

    def _call(self, fn: Callable[..., None], *args: Any, first: Exception | None = None) -> None:
        """fn(*args), retrying transient failures until it succeeds or shutdown gives up; with
        `first`, the first attempt was made already (in a pipelined batch) and failed so."""
        if first is None:
            try:
                fn(*args)
                return
            except Exception as e:
                if not is_transient(e):
                    raise
                first = e
        elif not is_transient(first):
            raise first
        try:
            retry_after_first(self.retrying, first, fn, *args)
        except Exception as e:
            if self.owner._abandon.is_set() and is_transient(e):
                raise Abandoned from e
            raise

    def _record_all(self, occs: list[Occurrence]) -> None:
        """Record occurrences in order: new events about pods with nothing unanswered are sent
        together as one batch; a repeat of a series is handled in its place; an event of a pod
        whose earlier create is unanswered (or held) waits for it."""
        o = self.owner
        run: list[Occurrence] = []
        for occ in occs:
            if o._abandon.is_set():
                self._dropped(occ)
                continue
            if occ.pod in self._busy:
                self._waiting.append(occ)
            elif self.series.repeat_of(occ) is not None:
                self._record(occ)
            else:
                run.append(occ)
                self._busy.add(occ.pod)  # a second event of the pod in this run waits for it
        if run:
            self._send(run)

    def _record(self, occ: Occurrence) -> None:
        series = self.series.repeat_of(occ)
        if series is None:
            self.series.remember(occ, self._create(occ))
            return
        self._settle(occ)  # merged into its series: the series' own write carries it
        self.owner._count("deduplicated")
        if self.series.seen_again(occ, series):
            self._write_series(occ.key, series)

    def _send(self, occs: list[Occurrence]) -> None:
        """Send new events as one batch (after the oldest batch is answered, when IN_FLIGHT are
        out already)."""
        while len(self._batches) >= IN_FLIGHT:
            oldest = self._batches.pop(0)
            self._guarded(self._settle_batch, oldest)
        o = self.owner
        api = o.api
        pending = [(occ, self._name(occ)) for occ in occs]
        bodies = [(occ.namespace, o._body(api, name, occ)) for occ, name in pending]
        try:
            sent = o.sink.send_many(api, bodies)
        except Exception as e:  # the sink itself failed, not one of its writes
            self._release([occ for occ, _ in pending])
            for occ, _ in pending:
                self._failed(e, occ)
            raise
        self.queue.sending()
        batch = _Batch(api, pending, sent)
        if sent.filenos():
            self._batches.append(batch)
        else:  # written already (or failed at once): nothing to wait for
            self._settle_batch(batch)

    def _settle_batch(self, batch: _Batch) -> None:
        """A batch's replies (read now if they are not yet): the written and the permanently
        failed are done with. What failed transiently is tried again together with what failed
        so in every other batch out (the server is likely failing them all: one backoff wait for
        the lot, then a batch per round trip), with the policy's waits, until written or
        abandoned at shutdown. Then the held events of their pods go on."""
        settled = [batch]
        try:
            again = self._results(batch.api, batch.pending, batch.sent.finish())
            if again:
                others, self._batches = self._batches, []
                settled += others
                failed = {batch.api: again}
                for other in others:
                    failed.setdefault(other.api, []).extend(
                        self._results(other.api, other.pending, other.sent.finish())
                    )
                for api, members in failed.items():
                    if members:
                        self._retry_together(api, members)
        finally:
            self.queue.answered(len(settled))
            self._release([occ for b in settled for occ, _ in b.pending])

    def _release(self, occs: list[Occurrence]) -> None:
        """The pods of `occs` have nothing unanswered any more: their held events go on, in order."""
        for occ in occs:
            self._busy.discard(occ.pod)
        freed = {occ.pod for occ in occs}
        if not any(w.pod in freed for w in self._waiting):
            return
        waiting, self._waiting = self._waiting, []
        self._record_all(waiting)

    def _retry_together(self, api: str, failed: list[tuple[Occurrence, str, Exception]]) -> None:
        """Transiently failed creates, tried again together (one attempt each, a round trip per
        attempt) with the policy's waits: so after an outage a batch drains in one round trip as
        soon as the server answers, not one backoff wait and one request per event."""
        o = self.owner
        pending = [(occ, name) for occ, name, _ in failed]

        def attempt() -> None:
            nonlocal pending
            again = self._try_many(api, pending)
            pending = [(occ, name) for occ, name, _ in again]
            if again:
                raise again[0][2]

        try:
            retry_after_first(self.retrying, failed[0][2], attempt)
        except Exception:
            if not o._abandon.is_set():
                raise
            for occ, _ in pending:  # only shutdown ends the retries of transient failures
                self._dropped(occ)

    def _try_many(
        self, api: str, pending: list[tuple[Occurrence, str]]
    ) -> list[tuple[Occurrence, str, Exception]]:
        """One attempt at each (occurrence, name) create, together, now: see `_results`."""
        o = self.owner
        bodies = [(occ.namespace, o._body(api, name, occ)) for occ, name in pending]
        errors = o.sink.create_many(api, bodies) if len(bodies) > 1 else [self._try_one(api, *bodies[0])]
        return self._results(api, pending, errors)

    def _results(
        self, api: str, pending: list[tuple[Occurrence, str]], errors: list[Exception | None]
    ) -> list[tuple[Occurrence, str, Exception]]:
        """The outcome of one attempt at each create: the written and the permanently failed are
        done with; what failed transiently is returned with its error."""
        again: list[tuple[Occurrence, str, Exception]] = []
        for (occ, name), err in zip(pending, errors, strict=True):
            if err is None or isinstance(err, AlreadyExists):
                self._written(occ)
                self.series.remember(occ, EventSeries.first(api, name, occ))
            elif is_transient(err):
                again.append((occ, name, err))
            else:  # permanent, or the API group not served: the single-event way decides
                self.series.remember(occ, self._create(occ, name, api, err))
        return again

    def _try_one(self, api: str, namespace: str, body: JsonObj) -> Exception | None:
        try:
            self.owner.sink.create(api, namespace, body)
        except Exception as e:
            return e
        return None

    def _name(self, occ: Occurrence) -> str:
        return f"{occ.name}.{self.owner._unique_ns(occ.wall):x}"

    def _create(
        self, occ: Occurrence, name: str = "", api: str = "", first: Exception | None = None
    ) -> EventSeries | None:
        """Create one event (its first attempt already made when `first` is given)."""
        o = self.owner
        name = name or self._name(occ)
        for _ in range(2):
            api = api or o.api
            try:
                self._call(o.sink.create, api, occ.namespace, o._body(api, name, occ), first=first)
            except AlreadyExists:
                pass  # an attempt whose reply was lost did create it: the name is ours alone
            except NotFound as e:
                if api == EVENTS_V1 and not _namespace_missing(e):
                    if o.api == EVENTS_V1:
                        log.info("events.k8s.io/v1 is not served, writing core/v1 Events instead")
                    o.api = CORE_V1
                    api, first = "", None
                    continue
                self._failed(e, occ)
                return None
            except Abandoned:
                self._dropped(occ)
                return None
            except Exception as e:
                self._failed(e, occ)
                return None
            self._written(occ)
            return EventSeries.first(api, name, occ)
        return None

    def _write_series(self, key: tuple[str, ...], series: EventSeries) -> None:
        o = self.owner
        try:
            self._call(o.sink.patch, series.api, series.namespace, series.name, series.patch())
        except NotFound:
            # Expired (events have a TTL) or deleted: the next repeat starts a new event.
            self.series.forget(key)
            return
        except Exception as e:
            o._warn_once(
                f"patch:{type(e).__name__}:{getattr(e, 'status', 0)}", "Cannot update event series err=%s", e
            )
            o._count("failed")
            return
        series.written_count = series.count
        series.last_write = o.clock.wall()
        o._count("patched")

    def _sweep(self, force: bool) -> None:
        """Write due series counts and forget series past the dedup window."""
        o = self.owner
        now = o.clock.wall()
        self.last_sweep = now
        for key, series in self.series.items():
            if o._abandon.is_set():
                return
            if not force and key[1] in self._busy:
                continue  # a create of the pod is unanswered: its series waits, in order
            if series.due(now, force, o.series_interval):
                self._write_series(key, series)
            if self.series.expired(series, now):
                self.series.forget(key)


def _namespace_missing(e: ApiError) -> bool:
    return e.details.get("kind") == "namespaces"
