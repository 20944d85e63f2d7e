"""The state behind the fake Kubernetes API server: objects, resourceVersions, watch history.

Kept apart from the HTTP layer so the rules a scheduler relies on (one global
resourceVersion counter like etcd's, 409 on stale writes, 410 once history is
compacted, selector transitions in watches) can be read in one place.

Stored objects are never mutated after they are stored: every write builds a new
top-level dict and a new metadata dict. That lets the HTTP layer serialise
objects and write them to sockets after releasing the lock.

The lock is reentrant: `atomic()` holds it across several reads and writes (an
eviction reads a pod and its budgets, charges a budget and deletes the pod as
one step), and reactors (`on_commit`) run under it after each write, writing
through the same methods (the disruption controller keeps budgets' status).
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import itertools
import json
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from netsched.fakeapi.resources import NAMESPACES, PODS, RESOURCES, ResourceType
from netsched.fakeapi.selection import Matcher, match_all
from netsched.kube.errors import failure_status

JsonObj = dict[str, Any]

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class StatusError(Exception):
    """A failure the server reports as a metav1.Status; raised by the store and the hooks."""

    def __init__(self, code: int, reason: str, message: str, details: JsonObj | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, object]:
        return failure_status(self.code, self.reason, self.message, self.details)


def not_found(rt: ResourceType, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{rt.qualified} "{name}" not found', {"name": name, "kind": rt.plural}
    )


def conflict(rt: ResourceType, name: str) -> StatusError:
    message = (
        f'Operation cannot be fulfilled on {rt.qualified} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    return StatusError(409, "Conflict", message, {"name": name, "kind": rt.plural})


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(slots=True)
class WatchEvent:
    """One committed change; `old` is the previous state, needed for selector transitions."""

    rv: int
    key: str
    type: str
    obj: JsonObj
    old: JsonObj | None
    _line: bytes | None = None

    def line(self, event_type: str) -> bytes:
        """The newline-terminated JSON a watch streams; cached because many watchers send it."""
        if event_type != self.type:
            return encode_event(event_type, self.obj)
        if self._line is None:
            # A benign race: two threads may both encode it; the bytes are identical.
            self._line = encode_event(self.type, self.obj)
        return self._line


def encode_event(event_type: str, obj: JsonObj) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


@dataclass(eq=False, slots=True)
class Watcher:
    """A registered watch: the store pushes events into `queue`; None means "server stopping"."""

    rt: ResourceType
    namespace: str | None
    matcher: Matcher
    replay: list[WatchEvent]
    queue: queue.SimpleQueue[WatchEvent | None] = field(default_factory=queue.SimpleQueue)

    def translate(self, event: WatchEvent) -> str | None:
        """The event type this watcher should see, given its selectors, or None to skip it."""
        meta = event.obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return None
        now = self.matcher(event.obj)
        if event.type != MODIFIED:
            return event.type if now else None
        before = event.old is not None and self.matcher(event.old)
        if before and now:
            return MODIFIED
        if before:
            return DELETED
        return ADDED if now else None


def _object_key(obj: JsonObj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def _with_meta(obj: JsonObj) -> tuple[JsonObj, JsonObj]:
    """A shallow copy with its own metadata dict, safe to stamp without touching the original."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    out["metadata"] = meta
    return out, meta


class Store:
    """Thread-safe object store with a global resourceVersion and a bounded watch history."""

    def __init__(self, history_size: int = 100_000) -> None:
        self._lock = threading.RLock()
        self._objects: dict[str, dict[tuple[str, str], JsonObj]] = {rt.key: {} for rt in RESOURCES}
        self._watchers: dict[str, set[Watcher]] = {rt.key: set() for rt in RESOURCES}
        self._rv = 0
        self._history: list[WatchEvent] = []
        self._history_size = max(1, history_size)
        # Every event with rv > _floor is still in _history; older resourceVersions get 410.
        self._floor = 0
        self._names = itertools.count(1)
        self._reactors: list[Callable[[WatchEvent], None]] = []
        self._reacting = False

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """Hold the lock across several calls: nothing else reads or writes meanwhile."""
        with self._lock:
            yield

    def on_commit(self, reactor: Callable[[WatchEvent], None]) -> None:
        """Call `reactor(event)` after every write, under the lock, before the writer returns;
        the writes a reactor makes do not call reactors again."""
        with self._lock:
            self._reactors.append(reactor)

    # --- reads ---------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> JsonObj:
        with self._lock:
            obj = self._objects[rt.key].get((namespace or "", name))
        if obj is None:
            raise not_found(rt, name)
        return obj

    def list(
        self, rt: ResourceType, namespace: str | None, matcher: Matcher = match_all
    ) -> tuple[list[JsonObj], int]:
        with self._lock:
            objs = list(self._objects[rt.key].values())
            rv = self._rv
        if namespace is not None:
            objs = [o for o in objs if o["metadata"].get("namespace") == namespace]
        if matcher is not match_all:
            objs = [o for o in objs if matcher(o)]
        return objs, rv

    # --- writes --------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str | None, body: JsonObj) -> JsonObj:
        obj, meta = _with_meta(body)
        if rt.namespaced:
            if namespace and meta.get("namespace") not in (None, "", namespace):
                raise StatusError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{next(self._names):05d}"
        if not meta.get("name"):
            raise StatusError(422, "Invalid", f"{rt.kind} is invalid: metadata.name: Required value")
        meta.pop("resourceVersion", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rt.generation:
            meta["generation"] = 1
        obj["kind"], obj["apiVersion"] = rt.kind, rt.api_version
        _apply_defaults(rt, obj)
        with self._lock:
            if rt.namespaced:
                self._ensure_namespace(meta["namespace"])
            if _object_key(obj) in self._objects[rt.key]:
                raise StatusError(
                    409,
                    "AlreadyExists",
                    f'{rt.qualified} "{meta["name"]}" already exists',
                    {"name": meta["name"], "kind": rt.plural},
                )
            self._commit(rt, ADDED, obj, None)
        return obj

    def mutate(
        self, rt: ResourceType, namespace: str | None, name: str, change: Callable[[JsonObj], JsonObj]
    ) -> JsonObj:
        """Replace an object with change(current), atomically; `change` may raise StatusError.

        If the result carries a resourceVersion that differs from the stored one the
        write is refused with 409, which is how both PUT and a patch with a
        resourceVersion precondition behave upstream.
        """
        with self._lock:
            current = self._objects[rt.key].get((namespace or "", name))
            if current is None:
                raise not_found(rt, name)
            obj, meta = _with_meta(change(current))
            old_meta = current["metadata"]
            sent_rv = meta.get("resourceVersion")
            if sent_rv not in (None, "") and str(sent_rv) != old_meta["resourceVersion"]:
                raise conflict(rt, name)
            if meta.get("name", name) != name:
                raise StatusError(
                    400, "BadRequest", "the name of the object does not match the name on the URL"
                )
            for kept in ("name", "namespace", "uid", "creationTimestamp"):
                if kept in old_meta:
                    meta[kept] = old_meta[kept]
            if rt.generation:
                spec_changed = obj.get("spec") != current.get("spec")
                meta["generation"] = int(old_meta.get("generation") or 1) + (1 if spec_changed else 0)
            obj["kind"], obj["apiVersion"] = rt.kind, rt.api_version
            self._commit(rt, MODIFIED, obj, current)
        return obj

    def bind(
        self,
        namespace: str,
        name: str,
        node: str,
        *,
        uid: str | None = None,
        annotations: dict[str, str] | None = None,
    ) -> JsonObj:
        """What POST pods/{name}/binding does upstream: set spec.nodeName once, mark PodScheduled.

        The node is not checked: the real API server accepts unknown nodes too.
        """

        def assign(pod: JsonObj) -> JsonObj:
            meta = pod["metadata"]
            if uid and meta.get("uid") != uid:
                raise StatusError(
                    409,
                    "Conflict",
                    f"Precondition failed: UID in precondition: {uid}, UID in object: {meta.get('uid')}",
                )
            bound = (pod.get("spec") or {}).get("nodeName")
            if bound:
                message = (
                    f'Operation cannot be fulfilled on pods/binding "{name}": '
                    f'pod {namespace}/{name} is already assigned to node "{bound}"'
                )
                raise StatusError(409, "Conflict", message, {"name": name, "kind": "pods/binding"})
            out, out_meta = _with_meta(pod)
            if annotations:
                out_meta["annotations"] = {**(out_meta.get("annotations") or {}), **annotations}
            out["spec"] = {**(pod.get("spec") or {}), "nodeName": node}
            status = dict(pod.get("status") or {})
            scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()}
            others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            status["conditions"] = [*others, scheduled]
            out["status"] = status
            return out

        return self.mutate(PODS, namespace, name, assign)

    def delete(self, rt: ResourceType, namespace: str | None, name: str) -> JsonObj:
        with self._lock:
            current = self._objects[rt.key].get((namespace or "", name))
            if current is None:
                raise not_found(rt, name)
            if rt is NAMESPACES:
                self._delete_namespace_contents(name)
            return self._delete_locked(rt, current)

    def _delete_locked(self, rt: ResourceType, current: JsonObj) -> JsonObj:
        obj, meta = _with_meta(current)
        meta.setdefault("deletionTimestamp", now_rfc3339())
        # Upstream's DELETED event carries the resourceVersion of the deletion itself.
        self._commit(rt, DELETED, obj, current)
        return obj

    def _delete_namespace_contents(self, namespace: str) -> None:
        for rt in RESOURCES:
            if rt.namespaced:
                doomed = [o for (ns, _), o in self._objects[rt.key].items() if ns == namespace]
                for obj in doomed:
                    self._delete_locked(rt, obj)

    def _ensure_namespace(self, namespace: str) -> None:
        """Creating into a missing namespace creates it: being lenient keeps test setup short."""
        if ("", namespace) in self._objects[NAMESPACES.key]:
            return
        obj: JsonObj = {
            "kind": NAMESPACES.kind,
            "apiVersion": NAMESPACES.api_version,
            "metadata": {"name": namespace, "uid": str(uuid.uuid4()), "creationTimestamp": now_rfc3339()},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        self._commit(NAMESPACES, ADDED, obj, None)

    def _commit(self, rt: ResourceType, event_type: str, obj: JsonObj, old: JsonObj | None) -> None:
        """Stamp the next resourceVersion, store, record history and fan out (lock held)."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        key = _object_key(obj)
        if event_type == DELETED:
            self._objects[rt.key].pop(key, None)
        else:
            self._objects[rt.key][key] = obj
        event = WatchEvent(self._rv, rt.key, event_type, obj, old)
        self._history.append(event)
        if len(self._history) > 2 * self._history_size:
            # Trim in bulk so appends stay amortised O(1).
            drop = len(self._history) - self._history_size
            self._floor = self._history[drop - 1].rv
            del self._history[:drop]
        for watcher in self._watchers[rt.key]:
            watcher.queue.put(event)
        if self._reactors and not self._reacting:
            self._reacting = True
            try:
                for react in self._reactors:
                    react(event)
            finally:
                self._reacting = False

    # --- watches -------------------------------------------------------------

    def watch(self, rt: ResourceType, namespace: str | None, matcher: Matcher, since: int | None) -> Watcher:
        """Register a watcher; `since` None or 0 means "from now", else replay events after it.

        Registration and the replay snapshot happen under one lock hold, so no
        event can fall between the replay and the live queue.
        """
        with self._lock:
            replay: list[WatchEvent] = []
            if since:
                if since < self._floor:
                    raise StatusError(410, "Expired", f"too old resource version: {since} ({self._floor})")
                start = bisect.bisect_right(self._history, since, key=lambda e: e.rv)
                replay = [e for e in itertools.islice(self._history, start, None) if e.key == rt.key]
            watcher = Watcher(rt, namespace, matcher, replay)
            self._watchers[rt.key].add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        with self._lock:
            self._watchers[watcher.rt.key].discard(watcher)

    def bookmark_rv(self, watcher: Watcher) -> int | None:
        """The resourceVersion a bookmark may carry now, or None if events are still queued.

        Checked under the lock because events are queued under it: an empty queue
        then proves the watcher has been handed everything up to the counter.
        """
        with self._lock:
            return self._rv if watcher.queue.empty() else None

    def compact(self) -> None:
        """Forget all history, like an etcd compaction: older resourceVersions now get 410."""
        with self._lock:
            self._history.clear()
            self._floor = self._rv

    def close_watchers(self) -> None:
        with self._lock:
            for watchers in self._watchers.values():
                for watcher in watchers:
                    watcher.queue.put(None)


def _apply_defaults(rt: ResourceType, obj: JsonObj) -> None:
    """The few defaults a scheduler reads: pods start Pending under the default scheduler."""
    if rt is PODS:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("schedulerName", "default-scheduler")
        obj["spec"] = spec
        status = dict(obj.get("status") or {})
        status.setdefault("phase", "Pending")
        obj["status"] = status
    elif rt is NAMESPACES:
        status = dict(obj.get("status") or {})
        status.setdefault("phase", "Active")
        obj["status"] = status


def deep_copy(objs: Iterable[JsonObj]) -> list[JsonObj]:
    """Copies handed to hook callers, so a test mutating its result cannot corrupt the store."""
    return [copy.deepcopy(o) for o in objs]
