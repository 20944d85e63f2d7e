"""List + watch one resource type as raw JSON, forever, in a daemon thread.

The official client's watch helper is broken for raw JSON in 37.x (an
ERROR/410 event raises KeyError and the resourceVersion never advances; see
ECOSYSTEM.md), and typed models are far too slow for thousands of pods. This
is client-go's Reflector reduced to what the scheduler's cache needs:

1. list (items + the list's resourceVersion) and turn the difference from the
   previous list into ADDED / MODIFIED / DELETED events (so a consumer never
   has to diff after a re-list), then call `on_sync(items)`;
2. watch from that resourceVersion with bookmarks, reading the chunked
   response line by line and tracking metadata.resourceVersion;
3. when the server says the version is gone (HTTP 410 or an ERROR event with
   code 410), list again; when the connection breaks, watch again from the last
   version after an exponential backoff that resets once a watch delivers.

`metadata.managedFields` is dropped from every object before it is delivered
(kube-scheduler's informers do the same with TransformStripManagedFields):
nothing netsched reads is in it, and it is a third of a pod's JSON, kept in
memory for every cached object otherwise.

`stop()` closes the open response, so it returns promptly even mid-watch.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, Protocol

from netsched.clock import Clock, SystemClock
from netsched.gcpause import gc_paused
from netsched.kube.errors import ApiError, Forbidden, Gone, NotFound, from_status
from netsched.logutil import V2

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


class ObjectList(NamedTuple):
    """The result of a list: its items and the resourceVersion to watch from."""

    items: list[JsonObj]
    resource_version: str


class WatchStream(Protocol):
    """An open watch response."""

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives; ends when the server ends the watch."""
        ...

    def close(self) -> None:
        """Safe from any thread and more than once; makes a blocked chunks() end or raise."""
        ...


ListFn = Callable[[], ObjectList]
WatchFn = Callable[[str, int], WatchStream]
EventHandler = Callable[[str, JsonObj], None]
SyncHandler = Callable[[list[JsonObj]], None]


def iter_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Split a byte stream into non-empty lines; a line may span many chunks."""
    pending: list[bytes] = []
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if start < len(chunk):
                    pending.append(chunk[start:])
                break
            piece = chunk[start:end]
            if pending:
                pending.append(piece)
                piece = b"".join(pending)
                pending.clear()
            if piece.strip():
                yield piece
            start = end + 1
    tail = b"".join(pending)
    if tail.strip():
        yield tail


class ExponentialBackoff:
    """Exponential delays with jitter: initial, x factor each time, capped; reset() starts over."""

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rand = rand
        self._current = initial

    def next(self) -> float:
        delay = min(self._current, self.maximum)
        self._current = min(self._current * self.factor, self.maximum)
        return delay * (1.0 + self.jitter * self._rand())

    def reset(self) -> None:
        self._current = self.initial


def stop_reflectors(reflectors: Iterable[Reflector], timeout: float) -> None:
    """Stop them all at once and wait at most `timeout` seconds in all, not each: a list held by
    a hung server ends only at the client's timeout, and a shutdown must not wait for each."""
    reflectors = list(reflectors)
    for r in reflectors:
        r.signal_stop()
    deadline = time.monotonic() + timeout
    for r in reflectors:
        r.join(max(0.0, deadline - time.monotonic()))


def object_key(obj: JsonObj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def _meta(obj: JsonObj, field: str) -> str:
    return str((obj.get("metadata") or {}).get(field) or "")


class Reflector:
    """Keeps `on_event` informed about one resource type. See the module docstring.

    `optional` marks a resource the cluster may not serve or RBAC may deny
    (netsched.kube.resources.Resource.optional: PodDisruptionBudgets,
    Namespaces, CRDs): a 404/403 on list is logged once, the reflector
    counts as synced with no objects, and it tries again every
    `optional_retry` seconds.  `unserved`, when given, is asked before each
    list why the API server does not serve the resource ("" when it does: the
    API's discovery, KubeAPI.unserved): an API not served is the same empty,
    synced state, logged once at -v 2 only, since nothing is wrong.  `rbac`
    names where the grant to read the resource ships: a 403 says to apply it.
    """

    def __init__(
        self,
        name: str,
        list_fn: ListFn,
        watch_fn: WatchFn,
        on_event: EventHandler,
        *,
        on_sync: SyncHandler | None = None,
        optional: bool = False,
        unserved: Callable[[], str] | None = None,
        rbac: str = "",
        watch_timeout: int = 300,
        optional_retry: float = 300.0,
        backoff: ExponentialBackoff | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self._list_fn = list_fn
        self._watch_fn = watch_fn
        self._on_event = on_event
        self._on_sync = on_sync
        self.optional = optional
        self._unserved = unserved
        self.rbac = rbac
        self.watch_timeout = watch_timeout
        self.optional_retry = optional_retry
        self._backoff = backoff or ExponentialBackoff()
        self._clock: Clock = clock or SystemClock()
        self.has_synced = threading.Event()
        self.available = True
        self._missing = ""  # why an optional resource is unavailable, as last logged ("" if it is)
        self.resource_version = ""
        self._known: dict[str, JsonObj] = {}
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._gone_in_a_row = 0
        # Why the last list or watch failed ("" once one succeeds again): the start-up wait
        # (netsched.kube.cachesync) reports it for every reflector at once.
        self.last_error = ""
        # Counters, for tests and the scheduler's own metrics.
        self.lists = 0
        self.relists = 0
        self.reconnects = 0
        self.watches = 0
        self.bookmarks = 0
        self.events = 0

    # --- lifecycle -----------------------------------------------------------

    def start(self) -> Reflector:
        if self._thread is not None:
            raise RuntimeError(f"reflector {self.name} already started")
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; closes the open response so the thread exits at once."""
        self.signal_stop()
        self.join(timeout)

    def signal_stop(self) -> None:
        """stop() without the wait: the loop ends at its next step (a list in flight, which
        nothing can interrupt, ends at its reply or the client's timeout)."""
        self._stopping.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout: float | None) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.has_synced.wait(timeout)

    def objects(self) -> list[JsonObj]:
        """The objects as of the last event delivered (the dicts themselves: do not mutate)."""
        with self._lock:
            return list(self._known.values())

    # --- the loop ------------------------------------------------------------

    def run(self) -> None:
        """The reflector loop; `start()` runs it in a daemon thread."""
        need_list = True
        while not self._stopping.is_set():
            try:
                if need_list:
                    if not self._list():
                        self._clock.wait(self._stopping, self.optional_retry)
                        continue
                    need_list = False
                if not self._watch():
                    # The server ended the watch without sending a line: don't spin.
                    self._clock.wait(self._stopping, self._backoff.next())
            except Gone as e:
                if self._stopping.is_set():
                    break
                need_list = True
                self._gone_in_a_row += 1
                log.info(
                    "Watch expired, listing again resource=%s rv=%s err=%s",
                    self.name,
                    self.resource_version,
                    e,
                )
                if self._gone_in_a_row > 1:
                    # A fresh list's version expired again at once: back off rather than spin.
                    self._clock.wait(self._stopping, self._backoff.next())
            except Exception as e:
                if self._stopping.is_set():
                    break
                self.reconnects += 1
                delay = self._backoff.next()
                self.last_error = str(e) or type(e).__name__
                # Until the first sync the start-up wait reports the failures of every
                # reflector in one line (naming the server); each one's own is for -v 4.
                log.log(
                    logging.WARNING if self.has_synced.is_set() else logging.DEBUG,
                    "List/watch failed, retrying resource=%s rv=%s delay=%.2fs err=%s",
                    self.name,
                    self.resource_version,
                    delay,
                    self.last_error,
                )
                self._clock.wait(self._stopping, delay)
        log.debug("Reflector stopped resource=%s", self.name)

    def _list(self) -> bool:
        """List and deliver the difference; False if an optional resource is unavailable."""
        why = self._unserved() if self._unserved is not None else ""
        if why:
            if self._missing != "unserved":
                log.log(
                    V2, "API not served, running without the resource resource=%s reason=%s", self.name, why
                )
            return self._unavailable("unserved")
        try:
            result = self._list_fn()
        except (NotFound, Forbidden) as e:
            if not self.optional:
                raise
            missing = "forbidden" if isinstance(e, Forbidden) else "notFound"
            if self._missing != missing:
                if missing == "forbidden" and self.rbac:
                    log.warning(
                        "Resource forbidden, running without it resource=%s hint=%s err=%s",
                        self.name,
                        f"kubectl apply -k {self.rbac}",
                        e,
                    )
                else:
                    log.warning("Resource not available, running without it resource=%s err=%s", self.name, e)
            return self._unavailable(missing)
        if not self.available:
            log.info("Resource became available resource=%s", self.name)
            self.available = True
            self._missing = ""
        with gc_paused():  # a list builds the cache's records by the thousand, no cycles among them
            self._apply_list(result)
        return True

    def _unavailable(self, missing: str) -> bool:
        """An optional resource cannot be read (`missing` says why): no objects, synced; False."""
        self.available = False
        self._missing = missing
        self._apply_list(ObjectList([], ""))
        return False

    def _apply_list(self, result: ObjectList) -> None:
        fresh = {object_key(obj): obj for obj in result.items}
        with self._lock:
            old, self._known = self._known, fresh
        if self.lists:
            self.relists += 1
        self.lists += 1
        self.resource_version = result.resource_version
        for key, gone in old.items():
            if key not in fresh:
                self._deliver(DELETED, gone)
        for key, obj in fresh.items():
            prev = old.get(key)
            if prev is None:
                self._deliver(ADDED, obj)
            elif _meta(prev, "uid") != _meta(obj, "uid"):
                self._deliver(DELETED, prev)
                self._deliver(ADDED, obj)
            elif _meta(prev, "resourceVersion") != _meta(obj, "resourceVersion"):
                self._deliver(MODIFIED, obj)
        self.last_error = ""
        if self._on_sync is not None:
            try:
                self._on_sync(result.items)
            except Exception:
                log.exception("Sync handler failed resource=%s", self.name)
        self.has_synced.set()

    def _watch(self) -> bool:
        """One watch request; True if it delivered anything. Raises on failure."""
        stream = self._watch_fn(self.resource_version, self.watch_timeout)
        self.last_error = ""  # the server answered
        with self._lock:
            self._stream = stream
        delivered = False
        try:
            if self._stopping.is_set():
                return True
            self.watches += 1
            for line in iter_lines(stream.chunks()):
                if self._stopping.is_set():
                    break
                try:
                    event = json.loads(line)
                except ValueError as e:
                    raise ApiError(0, "InvalidWatchEvent", f"cannot decode watch event: {e}") from e
                if not delivered:
                    delivered = True
                    self._backoff.reset()
                self._handle(event)
        finally:
            with self._lock:
                self._stream = None
            stream.close()
        return delivered

    def _handle(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            obj = {}
        if kind == ERROR:
            err = from_status(obj)
            if isinstance(err, Gone) or err.reason in ("Expired", "Gone"):
                raise Gone(410, err.reason, err.message)
            raise err
        self._gone_in_a_row = 0
        rv = _meta(obj, "resourceVersion")
        if kind == BOOKMARK:
            if rv:
                self.resource_version = rv
            self.bookmarks += 1
            return
        if kind not in (ADDED, MODIFIED, DELETED):
            log.debug("Ignoring watch event resource=%s type=%s", self.name, kind)
            return
        key = object_key(obj)
        with self._lock:
            prev = self._known.pop(key, None) if kind == DELETED else self._known.get(key)
            if kind != DELETED:
                self._known[key] = obj
        if rv:
            self.resource_version = rv
        if kind == ADDED and prev is not None and _meta(prev, "uid") == _meta(obj, "uid"):
            kind = MODIFIED  # a replayed ADDED for an object we already have
        elif kind == ADDED and prev is not None:
            self._deliver(DELETED, prev)
        elif kind == MODIFIED and prev is None:
            kind = ADDED
        self._deliver(kind, obj)

    def _deliver(self, kind: str, obj: JsonObj) -> None:
        self.events += 1
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        try:
            self._on_event(kind, obj)
        except Exception:
            log.exception(
                "Event handler failed resource=%s type=%s object=%s", self.name, kind, object_key(obj)
            )


__all__ = [
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "ERROR",
    "MODIFIED",
    "ExponentialBackoff",
    "ObjectList",
    "Reflector",
    "WatchStream",
    "iter_lines",
    "object_key",
    "stop_reflectors",
]
