"""Kubernetes Events about pods ("Scheduled", "FailedScheduling"), written off the scheduling thread.

Users read `kubectl describe pod` to learn why a pod is pending, so the events
must look like kube-scheduler's: events.k8s.io/v1 with reportingController set
to the scheduler name, regarding the pod, the reason and a note; core/v1
Events (source.component) when the cluster does not serve events.k8s.io.

Writing them must never slow or break scheduling, and must keep up with
bindings: like kube-scheduler, the event path has its own API client and rate
budget (app.py builds it with `netsched.kube.client.derived_client`), so a
burst of bindings never starves events and events never take a binding's
token. `event()` only puts a record on a bounded in-memory queue; `workers`
writer threads (one by default) drain it, each owning the events of a slice
of pods (events about one pod stay in order). A writer takes everything
queued at once (up to BATCH) and creates the new events together, pipelined
over LANES connections (Transport.request_many): a burst costs one wake-up
and one round trip, not one each. A write that fails for a transient reason (429,
5xx, reset, timeout) is retried with backoff (a server's Retry-After wins)
for as long as the process lives: events are dropped only when the queue
bound is hit (counted, `on_drop`, and logged once) or at shutdown. Permanent
failures (403, 422, a deleted namespace) are counted as failed and skipped.

A pod that stays unschedulable produces the same event on every attempt, so,
like kube's event correlator, a repeat within `dedup_window` bumps the series
count of the event already written instead of creating another: the first
repeat at once, later ones at most every `series_interval` seconds (and on
flush/stop).

Shutdown: `stop(timeout)` (SchedulerApp.shutdown, on SIGTERM) writes every
queued event and pending series count within `timeout`, retries included;
what is still unwritten then is dropped and counted (reason "shutdown").
SIGKILL (or an OOM kill) loses what is queued in memory and not yet written,
as it does for kube-scheduler's broadcaster: at most the queue's contents,
normally the last fraction of a second of events.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import tenacity

from netsched.clock import Clock, SystemClock
from netsched.framework.types import PodInfo
from netsched.kube.api import MERGE_PATCH, microtime, rfc3339
from netsched.kube.client import KubeClient, retry_after_first, wait_retry_after
from netsched.kube.errors import AlreadyExists, ApiError, NotFound, is_transient

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
EVENTS_V1 = "events.k8s.io/v1"
CORE_V1 = "v1"
MAX_NOTE_BYTES = 1024  # events.k8s.io rejects longer notes
_MAX_FIELD = 128  # reason, action, reportingController, reportingInstance
# One writer: each wake-up of a writer thread costs as much CPU as the request it sends, so one
# thread that takes what is queued in batches (up to BATCH creates, pipelined over LANES
# connections, so the API server works on them in parallel) beats many (benchmarks/bench_e2e:
# 0.17 vs 0.30 ms of CPU per event with 8 writers) and still keeps up with bursts.
DEFAULT_WORKERS = 1
BATCH = 32
LANES = 4
POOL_SIZE = DEFAULT_WORKERS * LANES  # connections the events client needs (app.py)
_IDLE_WAKE = 0.5  # seconds a writer waits for work before checking for due series and shutdown


class EventSink(Protocol):
    """Where events go; `api` is EVENTS_V1 or CORE_V1. Methods raise ApiError."""

    def create(self, api: str, namespace: str, body: JsonObj) -> None: ...

    def patch(self, api: str, namespace: str, name: str, body: JsonObj) -> None: ...


class KubeEventSink:
    """EventSink over the API server: one attempt per call (the broadcaster owns the retries)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def create(self, api: str, namespace: str, body: JsonObj) -> None:
        self._client.request(
            "create", _resource(api), "POST", _events_path(api, namespace), body=body, retry=False
        )

    def create_many(self, api: str, items: list[tuple[str, JsonObj]]) -> list[Exception | None]:
        """One attempt at each (namespace, body) create, pipelined on one connection; per item
        None or its error.  Safe to repeat: each event has a name of its own (AlreadyExists)."""
        paths = [(_events_path(api, namespace), body) for namespace, body in items]
        replies = self._client.request_many("create", _resource(api), "POST", paths, lanes=LANES)
        return [r if isinstance(r, Exception) else None for r in replies]

    def patch(self, api: str, namespace: str, name: str, body: JsonObj) -> None:
        path = f"{_events_path(api, namespace)}/{quote(name, safe='')}"
        self._client.request(
            "patch", _resource(api), "PATCH", path, body=body, content_type=MERGE_PATCH, retry=False
        )


def _events_path(api: str, namespace: str) -> str:
    prefix = "/apis/events.k8s.io/v1" if api == EVENTS_V1 else "/api/v1"
    return f"{prefix}/namespaces/{quote(namespace, safe='')}/events"


def _resource(api: str) -> str:
    return "events.k8s.io/events" if api == EVENTS_V1 else "events"


@dataclass(frozen=True, slots=True)
class EventRetry:
    """Backoff between attempts at a transiently failing write: from `backoff`, doubling, with up to
    `backoff` of jitter, capped at `max_backoff` (client-go waits 10 s); a server's Retry-After wins
    when longer (capped at `max_retry_after`). There is no attempt limit: only shutdown ends it."""

    backoff: float = 0.1
    max_backoff: float = 10.0
    max_retry_after: float = 30.0


@dataclass(slots=True, frozen=True)
class _Occurrence:
    """One call to EventRecorder.event, as queued (copied out of the PodInfo)."""

    controller: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    type_: str
    reason: str
    action: str
    message: str
    wall: float
    kind: str = "Pod"
    api_version: str = "v1"

    @property
    def key(self) -> tuple[str, ...]:
        return (
            self.controller,
            self.uid or f"{self.namespace}/{self.name}",
            self.type_,
            self.reason,
            self.action,
            self.message,
        )

    @property
    def pod(self) -> str:
        return self.uid or f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class _Series:
    """An event written to the API and the repeats seen since."""

    api: str
    namespace: str
    name: str
    count: int
    last_seen: float
    written_count: int
    last_write: float


class _Flush:
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


class _Abandoned(Exception):
    """Shutdown's deadline passed while a write was still failing."""


_STOP = object()


class EventRecorder:
    """Records events for one scheduler name (profile); implements framework EventRecorder."""

    def __init__(self, broadcaster: EventBroadcaster, scheduler_name: str) -> None:
        self._broadcaster = broadcaster
        self.scheduler_name = scheduler_name

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, message: str) -> None:
        """Queue an event about `pod` (type_ Normal|Warning). Never blocks, never raises.

        A record standing for another object (a PodGroup: `raw` with its kind and
        apiVersion, netsched.framework.object_ref) is referenced as that kind."""
        try:
            raw = pod.raw
            occ = _Occurrence(
                self.scheduler_name,
                pod.namespace,
                pod.name,
                pod.uid,
                pod.resource_version,
                type_,
                reason,
                action,
                message,
                self._broadcaster.clock.wall(),
                str(raw.get("kind") or "Pod"),
                str(raw.get("apiVersion") or "v1"),
            )
            self._broadcaster.submit(occ)
        except Exception:  # pragma: no cover - defensive: recording must never fail scheduling
            log.debug(
                "Cannot queue event pod=%s/%s reason=%s", pod.namespace, pod.name, reason, exc_info=True
            )


class EventBroadcaster:
    """The queue and writer threads shared by every profile's EventRecorder.

    `queue_size` bounds the events waiting in memory (all writers together);
    `on_drop(reason)` is called for each event dropped ("full", "stopped",
    "shutdown") and `on_written(seconds)` with the delay from `event()` to
    the API server accepting each new event (the scheduler's metrics).
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        instance: str = "",
        queue_size: int = 1000,
        workers: int = DEFAULT_WORKERS,
        dedup_window: float = 600.0,
        series_interval: float = 60.0,
        max_series: int = 4096,
        retry: EventRetry | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], object] | None = None,
        on_drop: Callable[[str], None] | None = None,
        on_written: Callable[[float], None] | None = None,
    ) -> None:
        self.sink = sink
        self.clock: Clock = clock or SystemClock()
        self.instance = (instance or socket.gethostname())[:_MAX_FIELD]
        self.dedup_window = dedup_window
        self.series_interval = series_interval
        self.retry = retry or EventRetry()
        self.api = EVENTS_V1
        self._on_drop = on_drop
        self._on_written = on_written
        self._abandon = threading.Event()  # set when shutdown's deadline passes
        self._sleep: Callable[[float], object] = sleep or self._abandon.wait
        self._last_name_ns = 0
        self._logged: set[str] = set()
        self._lock = threading.Lock()
        self._stopped = False
        # Counters, for tests and the scheduler's metrics.
        self.written = 0
        self.patched = 0
        self.deduplicated = 0
        self.dropped = 0
        self.failed = 0
        self.retries = 0
        n = max(1, workers)
        per_queue = max(1, queue_size // n)
        per_series = max(1, max_series // n)
        self._writers = [_Writer(self, i, per_queue, per_series) for i in range(n)]
        for w in self._writers:
            w.thread.start()

    def new_recorder(self, scheduler_name: str) -> EventRecorder:
        return EventRecorder(self, scheduler_name)

    @property
    def pending(self) -> int:
        """Events (and markers) queued and not yet taken by a writer."""
        return sum(w.queue.qsize() for w in self._writers)

    def submit(self, occ: _Occurrence) -> None:
        if self._stopped:
            self._drop("stopped")
            return
        # One writer per pod keeps a pod's events (and its series) in order.
        writer = self._writers[hash(occ.pod) % len(self._writers)]
        try:
            writer.queue.put_nowait(occ)
        except queue.Full:
            self._drop("full")

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far (and pending series counts) is written."""
        if self._stopped or not any(w.thread.is_alive() for w in self._writers):
            return all(w.queue.empty() for w in self._writers)
        deadline = time.monotonic() + timeout
        marker = _Flush(len(self._writers))
        for w in self._writers:
            try:
                w.queue.put(marker, timeout=max(0.0, deadline - time.monotonic()))
            except queue.Full:
                return False
        return marker.done.wait(max(0.0, deadline - time.monotonic()))

    def stop(self, timeout: float = 5.0) -> bool:
        """Write what is queued (within `timeout`, retries included), then end the writers.

        Returns True when everything was written; what is left at the deadline is dropped
        and counted (reason "shutdown").
        """
        if self._stopped:
            return True
        self._stopped = True
        deadline = time.monotonic() + timeout
        for w in self._writers:
            try:
                w.queue.put(_STOP, timeout=max(0.0, deadline - time.monotonic()))
            except queue.Full:
                break
        for w in self._writers:
            w.thread.join(max(0.0, deadline - time.monotonic()))
        if not any(w.thread.is_alive() for w in self._writers):
            return True
        # Out of time: writers stop retrying and count what is left as dropped.
        before = self.dropped
        self._abandon.set()
        for w in self._writers:
            w.thread.join(1.0)
        log.warning(
            "Events still unwritten at shutdown were dropped dropped=%d timeout=%.1fs",
            self.dropped - before,
            timeout,
        )
        return False

    # --- shared by the writers -------------------------------------------------

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
        base = tenacity.wait_exponential_jitter(multiplier=r.backoff, max=r.max_backoff, jitter=r.backoff)
        return tenacity.Retrying(
            retry=tenacity.retry_if_exception(is_transient),
            wait=wait_retry_after(base, r.max_retry_after),
            stop=_stop_when(self._abandon.is_set),
            sleep=self._wait,
            before_sleep=self._before_retry,
            reraise=True,
        )

    def _wait(self, seconds: float) -> None:
        self._sleep(seconds)  # by default wakes early when shutdown gives up

    def _before_retry(self, state: tenacity.RetryCallState) -> None:
        self._count("retries")
        err = state.outcome.exception() if state.outcome is not None else None
        self._warn_once(
            f"retry:{type(err).__name__}:{getattr(err, 'status', 0)}",
            "Event write failed, retrying until it succeeds err=%s",
            err,
        )

    def _body(self, api: str, name: str, occ: _Occurrence) -> JsonObj:
        ref: JsonObj = {
            "apiVersion": occ.api_version,
            "kind": occ.kind,
            "namespace": occ.namespace,
            "name": occ.name,
        }
        if occ.uid:
            ref["uid"] = occ.uid
        if occ.resource_version:
            ref["resourceVersion"] = occ.resource_version
        note = _truncate(occ.message, MAX_NOTE_BYTES)
        controller = occ.controller[:_MAX_FIELD]
        meta = {"name": name, "namespace": occ.namespace}
        if api == EVENTS_V1:
            return {
                "apiVersion": EVENTS_V1,
                "kind": "Event",
                "metadata": meta,
                "eventTime": microtime(occ.wall),
                "reportingController": controller,
                "reportingInstance": self.instance,
                "action": occ.action[:_MAX_FIELD],
                "reason": occ.reason[:_MAX_FIELD],
                "note": note,
                "type": occ.type_,
                "regarding": ref,
            }
        stamp = rfc3339(occ.wall)
        return {
            "apiVersion": CORE_V1,
            "kind": "Event",
            "metadata": meta,
            "involvedObject": ref,
            "reason": occ.reason[:_MAX_FIELD],
            "message": note,
            "type": occ.type_,
            "action": occ.action[:_MAX_FIELD],
            "source": {"component": controller},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": controller,
            "reportingInstance": self.instance,
        }

    def _failed(self, e: Exception, occ: _Occurrence) -> None:
        self._count("failed")
        kind = f"create:{type(e).__name__}:{getattr(e, 'status', 0)}"
        self._warn_once(
            kind, "Cannot write event pod=%s/%s reason=%s err=%s", occ.namespace, occ.name, occ.reason, e
        )

    def _written(self, occ: _Occurrence) -> None:
        self._count("written")
        if self._on_written is not None:
            self._on_written(max(0.0, self.clock.wall() - occ.wall))

    def _warn_once(self, kind: str, msg: str, *args: Any) -> None:
        """Warn the first time a kind of failure happens; later ones only at debug."""
        with self._lock:
            first = kind not in self._logged
            self._logged.add(kind)
        log.log(logging.WARNING if first else logging.DEBUG, msg, *args)


class _Writer:
    """One writer thread, its queue, and the series (correlator state) of the pods it owns."""

    def __init__(self, owner: EventBroadcaster, index: int, queue_size: int, max_series: int) -> None:
        self.owner = owner
        self.queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        self.max_series = max_series
        self.series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self.last_sweep = owner.clock.wall()
        self.retrying = owner._retrying()
        self.thread = threading.Thread(target=self._run, name=f"event-writer-{index}", daemon=True)

    def _run(self) -> None:
        o = self.owner
        held: object = None  # a marker met while taking a batch: handled next, in its place
        while True:
            if held is not None:
                item, held = held, None
            else:
                try:
                    item = self.queue.get(timeout=0 if o._abandon.is_set() else _IDLE_WAKE)
                except queue.Empty:
                    if o._abandon.is_set():
                        return
                    if o.clock.wall() - self.last_sweep >= o.series_interval:
                        self._guarded(self._sweep, False)
                    continue
            if item is _STOP:
                self._guarded(self._sweep, True)
                return
            if isinstance(item, _Flush):
                self._guarded(self._sweep, True)
                item.arrive()
                continue
            if isinstance(item, _Occurrence):
                if o._abandon.is_set():
                    o._drop("shutdown")
                    continue
                # What else is queued now goes too: one wake-up and one pipelined write for a burst.
                batch = [item]
                while len(batch) < BATCH:
                    try:
                        nxt = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if not isinstance(nxt, _Occurrence):
                        held = nxt
                        break
                    batch.append(nxt)
                self._guarded(self._record_all, batch)
            if o.clock.wall() - self.last_sweep >= o.series_interval:
                self._guarded(self._sweep, False)

    def _guarded(self, fn: Any, arg: Any) -> None:
        try:
            fn(arg)
        except Exception:  # the writer thread must survive anything
            log.exception("Event writer failed")

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
                raise _Abandoned from e
            raise

    def _record_all(self, occs: list[_Occurrence]) -> None:
        """Record occurrences in order: runs of new events about different pods are created
        together (pipelined where the sink can); a repeat of a series is handled in its place."""
        run: list[_Occurrence] = []
        pods: set[str] = set()  # a pod's events are written one after another, in order
        for occ in occs:
            if occ.pod in pods:
                self._create_all(run)
                run, pods = [], set()
            if self._repeat_of(occ) is not None:
                self._record(occ)
            else:
                run.append(occ)
                pods.add(occ.pod)
        self._create_all(run)

    def _repeat_of(self, occ: _Occurrence) -> _Series | None:
        series = self.series.get(occ.key)
        if series is not None and occ.wall - series.last_seen <= self.owner.dedup_window:
            return series
        return None

    def _record(self, occ: _Occurrence) -> None:
        series = self._repeat_of(occ)
        if series is None:
            self._remember(occ, self._create(occ))
            return
        key = occ.key
        series.count += 1
        series.last_seen = occ.wall
        self.series.move_to_end(key)
        self.owner._count("deduplicated")
        if series.written_count == 1:
            self._write_series(key, series)

    def _remember(self, occ: _Occurrence, created: _Series | None) -> None:
        if created is None:
            return
        key = occ.key
        self.series[key] = created
        self.series.move_to_end(key)
        while len(self.series) > self.max_series:
            self.series.popitem(last=False)

    def _create_all(self, occs: list[_Occurrence]) -> None:
        """Create new events: one pipelined attempt at all of them when the sink can (the API
        path's create_many), then each that failed goes the single-event way (retries included)."""
        o = self.owner
        create_many = getattr(o.sink, "create_many", None)
        if len(occs) < 2 or create_many is None or o._abandon.is_set():
            for occ in occs:
                self._remember(occ, self._create(occ))
            return
        api = o.api
        names = [self._name(occ) for occ in occs]
        errors = create_many(
            api, [(occ.namespace, o._body(api, n, occ)) for occ, n in zip(occs, names, strict=True)]
        )
        for occ, name, err in zip(occs, names, errors, strict=True):
            if err is None or isinstance(err, AlreadyExists):
                o._written(occ)
                self._remember(occ, _Series(api, occ.namespace, name, 1, occ.wall, 1, occ.wall))
            else:
                self._remember(occ, self._create(occ, name, api, err))

    def _name(self, occ: _Occurrence) -> str:
        return f"{occ.name}.{self.owner._unique_ns(occ.wall):x}"

    def _create(
        self, occ: _Occurrence, name: str = "", api: str = "", first: Exception | None = None
    ) -> _Series | None:
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
                o._failed(e, occ)
                return None
            except _Abandoned:
                o._drop("shutdown")
                return None
            except Exception as e:
                o._failed(e, occ)
                return None
            o._written(occ)
            return _Series(api, occ.namespace, name, 1, occ.wall, 1, occ.wall)
        return None

    def _write_series(self, key: tuple[str, ...], series: _Series) -> None:
        if series.api == EVENTS_V1:
            patch: JsonObj = {
                "series": {"count": series.count, "lastObservedTime": microtime(series.last_seen)}
            }
        else:
            patch = {"count": series.count, "lastTimestamp": rfc3339(series.last_seen)}
        o = self.owner
        try:
            self._call(o.sink.patch, series.api, series.namespace, series.name, patch)
        except NotFound:
            # Expired (events have a TTL) or deleted: the next repeat starts a new event.
            self.series.pop(key, None)
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
        for key, series in list(self.series.items()):
            if o._abandon.is_set():
                return
            if series.count > series.written_count and (
                force or now - series.last_write >= o.series_interval
            ):
                self._write_series(key, series)
            if now - series.last_seen > o.dedup_window and series.count == series.written_count:
                self.series.pop(key, None)


class _stop_when(tenacity.stop.stop_base):
    """Stop retrying once `flag()` is true (named like tenacity's strategies)."""

    def __init__(self, flag: Callable[[], bool]) -> None:
        self.flag = flag

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self.flag()


def _namespace_missing(e: ApiError) -> bool:
    return e.details.get("kind") == "namespaces"


def _truncate(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", "ignore")


def new_event_broadcaster(client: KubeClient, **kwargs: Any) -> EventBroadcaster:
    """An EventBroadcaster writing through `client` (kwargs as for EventBroadcaster).

    Give it a client of its own (`derived_client`), as app.py does, so events and
    bindings never wait for each other's rate-limit tokens.
    """
    return EventBroadcaster(KubeEventSink(client), **kwargs)


__all__ = [
    "CORE_V1",
    "DEFAULT_WORKERS",
    "EVENTS_V1",
    "MAX_NOTE_BYTES",
    "POOL_SIZE",
    "EventBroadcaster",
    "EventRecorder",
    "EventRetry",
    "EventSink",
    "KubeEventSink",
    "new_event_broadcaster",
]
