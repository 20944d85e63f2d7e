"""Kubernetes Events about pods ("Scheduled", "FailedScheduling"), written off the scheduling thread.

Users read `kubectl describe pod` to learn why a pod is pending, so the events
must look like kube-scheduler's: events.k8s.io/v1 with reportingController set
to the scheduler name, regarding the pod, the reason and a note; core/v1
Events (source.component) when the cluster does not serve events.k8s.io.

Writing them must never slow or break scheduling: `event()` only puts a record
on a bounded queue (dropping, and counting, when it is full) and one
background thread writes. A pod that stays unschedulable produces the same
event on every attempt, so, like kube's event correlator, a repeat within
`dedup_window` bumps the series count of the event already written instead of
creating another: the first repeat at once, later ones at most every
`series_interval` seconds (and on flush/stop).
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from netsched.clock import Clock, SystemClock
from netsched.framework.types import PodInfo
from netsched.kube.api import MERGE_PATCH, microtime, rfc3339
from netsched.kube.client import KubeClient
from netsched.kube.errors import ApiError, NotFound

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
EVENTS_V1 = "events.k8s.io/v1"
CORE_V1 = "v1"
MAX_NOTE_BYTES = 1024  # events.k8s.io rejects longer notes
_MAX_FIELD = 128  # reason, action, reportingController, reportingInstance


class EventSink(Protocol):
    """Where events go; `api` is EVENTS_V1 or CORE_V1. Methods raise ApiError."""

    def create(self, api: str, namespace: str, body: JsonObj) -> None: ...

    def patch(self, api: str, namespace: str, name: str, body: JsonObj) -> None: ...


class KubeEventSink:
    """EventSink over the API server."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def create(self, api: str, namespace: str, body: JsonObj) -> None:
        group = self._client.events if api == EVENTS_V1 else self._client.core
        self._client.call("create", _resource(api), group.create_namespaced_event, namespace, body)

    def patch(self, api: str, namespace: str, name: str, body: JsonObj) -> None:
        group = self._client.events if api == EVENTS_V1 else self._client.core
        self._client.call(
            "patch",
            _resource(api),
            group.patch_namespaced_event,
            name,
            namespace,
            body,
            _content_type=MERGE_PATCH,
        )


def _resource(api: str) -> str:
    return "events.k8s.io/events" if api == EVENTS_V1 else "events"


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


@dataclass(slots=True)
class _Flush:
    done: threading.Event


_STOP = object()


class EventRecorder:
    """Records events for one scheduler name (profile); implements framework EventRecorder."""

    def __init__(self, broadcaster: EventBroadcaster, scheduler_name: str) -> None:
        self._broadcaster = broadcaster
        self.scheduler_name = scheduler_name

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, message: str) -> None:
        """Queue an event about `pod` (type_ Normal|Warning). Never blocks, never raises."""
        try:
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
            )
            self._broadcaster.submit(occ)
        except Exception:  # pragma: no cover - defensive: recording must never fail scheduling
            log.debug(
                "Cannot queue event pod=%s/%s reason=%s", pod.namespace, pod.name, reason, exc_info=True
            )


class EventBroadcaster:
    """The one queue and writer thread shared by every profile's EventRecorder."""

    def __init__(
        self,
        sink: EventSink,
        *,
        instance: str = "",
        queue_size: int = 1000,
        dedup_window: float = 600.0,
        series_interval: float = 60.0,
        max_series: int = 4096,
        clock: Clock | None = None,
    ) -> None:
        self.sink = sink
        self.clock: Clock = clock or SystemClock()
        self.instance = (instance or socket.gethostname())[:_MAX_FIELD]
        self.dedup_window = dedup_window
        self.series_interval = series_interval
        self.max_series = max_series
        self.api = EVENTS_V1
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, queue_size))
        self._series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self._last_name_ns = 0
        self._last_sweep = self.clock.wall()
        self._logged: set[str] = set()
        self._lock = threading.Lock()
        self._stopped = False
        # Counters, for tests and the scheduler's metrics.
        self.written = 0
        self.patched = 0
        self.deduplicated = 0
        self.dropped = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._run, name="event-writer", daemon=True)
        self._thread.start()

    def new_recorder(self, scheduler_name: str) -> EventRecorder:
        return EventRecorder(self, scheduler_name)

    def submit(self, occ: _Occurrence) -> None:
        if self._stopped:
            self._drop("stopped")
            return
        try:
            self._queue.put_nowait(occ)
        except queue.Full:
            self._drop("full")

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far (and pending series counts) is written."""
        if self._stopped or not self._thread.is_alive():
            return self._queue.empty()
        marker = _Flush(threading.Event())
        try:
            self._queue.put(marker, timeout=timeout)
        except queue.Full:
            return False
        return marker.done.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (within `timeout`), then end the writer thread."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            log.warning("Event queue still full at shutdown, dropping queued events")
            return
        self._thread.join(timeout)

    # --- writer thread -------------------------------------------------------

    def _drop(self, why: str) -> None:
        with self._lock:
            self.dropped += 1
        self._warn_once(f"drop:{why}", "Dropping event, queue %s dropped=%d", why, self.dropped)

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=self.series_interval)
            except queue.Empty:
                self._guarded(self._sweep, False)
                continue
            if item is _STOP:
                self._guarded(self._sweep, True)
                return
            if isinstance(item, _Flush):
                self._guarded(self._sweep, True)
                item.done.set()
                continue
            if isinstance(item, _Occurrence):
                self._guarded(self._record, item)
            if self.clock.wall() - self._last_sweep >= self.series_interval:
                self._guarded(self._sweep, False)

    def _guarded(self, fn: Any, arg: Any) -> None:
        try:
            fn(arg)
        except Exception:  # the writer thread must survive anything
            log.exception("Event writer failed")

    def _record(self, occ: _Occurrence) -> None:
        key = occ.key
        series = self._series.get(key)
        if series is not None and occ.wall - series.last_seen <= self.dedup_window:
            series.count += 1
            series.last_seen = occ.wall
            self._series.move_to_end(key)
            with self._lock:
                self.deduplicated += 1
            if series.written_count == 1:
                self._write_series(key, series)
            return
        created = self._create(occ)
        if created is None:
            return
        self._series[key] = created
        self._series.move_to_end(key)
        while len(self._series) > self.max_series:
            self._series.popitem(last=False)

    def _create(self, occ: _Occurrence) -> _Series | None:
        name = f"{occ.name}.{self._unique_ns(occ.wall):x}"
        for _ in range(2):
            api = self.api
            try:
                self.sink.create(api, occ.namespace, self._body(api, name, occ))
            except NotFound as e:
                if api == EVENTS_V1 and not _namespace_missing(e):
                    log.info("events.k8s.io/v1 is not served, writing core/v1 Events instead")
                    self.api = CORE_V1
                    continue
                self._failed(e, occ)
                return None
            except Exception as e:
                self._failed(e, occ)
                return None
            with self._lock:
                self.written += 1
            return _Series(api, occ.namespace, name, 1, occ.wall, 1, occ.wall)
        return None

    def _write_series(self, key: tuple[str, ...], series: _Series) -> None:
        if series.api == EVENTS_V1:
            patch: JsonObj = {
                "series": {"count": series.count, "lastObservedTime": microtime(series.last_seen)}
            }
        else:
            patch = {"count": series.count, "lastTimestamp": rfc3339(series.last_seen)}
        try:
            self.sink.patch(series.api, series.namespace, series.name, patch)
        except NotFound:
            # Expired (events have a TTL) or deleted: the next repeat starts a new event.
            self._series.pop(key, None)
            return
        except Exception as e:
            self._warn_once(
                f"patch:{type(e).__name__}:{getattr(e, 'status', 0)}", "Cannot update event series err=%s", e
            )
            with self._lock:
                self.failed += 1
            return
        series.written_count = series.count
        series.last_write = self.clock.wall()
        with self._lock:
            self.patched += 1

    def _sweep(self, force: bool) -> None:
        """Write due series counts and forget series past the dedup window."""
        now = self.clock.wall()
        self._last_sweep = now
        for key, series in list(self._series.items()):
            if series.count > series.written_count and (
                force or now - series.last_write >= self.series_interval
            ):
                self._write_series(key, series)
            if now - series.last_seen > self.dedup_window and series.count == series.written_count:
                self._series.pop(key, None)

    def _unique_ns(self, wall: float) -> int:
        # kube names events <object>.<unix nanos in hex>; keep them unique even with a coarse clock.
        ns = max(int(wall * 1e9), self._last_name_ns + 1)
        self._last_name_ns = ns
        return ns

    def _body(self, api: str, name: str, occ: _Occurrence) -> JsonObj:
        ref: JsonObj = {"apiVersion": "v1", "kind": "Pod", "namespace": occ.namespace, "name": occ.name}
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
        with self._lock:
            self.failed += 1
        kind = f"create:{type(e).__name__}:{getattr(e, 'status', 0)}"
        self._warn_once(
            kind, "Cannot write event pod=%s/%s reason=%s err=%s", occ.namespace, occ.name, occ.reason, e
        )

    def _warn_once(self, kind: str, msg: str, *args: Any) -> None:
        """Warn the first time a kind of failure happens; later ones only at debug."""
        with self._lock:
            first = kind not in self._logged
            self._logged.add(kind)
        log.log(logging.WARNING if first else logging.DEBUG, msg, *args)


def _namespace_missing(e: ApiError) -> bool:
    return e.details.get("kind") == "namespaces"


def _truncate(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", "ignore")


def new_event_broadcaster(client: KubeClient, **kwargs: Any) -> EventBroadcaster:
    """An EventBroadcaster writing through `client` (kwargs as for EventBroadcaster)."""
    return EventBroadcaster(KubeEventSink(client), **kwargs)


__all__ = [
    "CORE_V1",
    "EVENTS_V1",
    "MAX_NOTE_BYTES",
    "EventBroadcaster",
    "EventRecorder",
    "EventSink",
    "KubeEventSink",
    "new_event_broadcaster",
]
