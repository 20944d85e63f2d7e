"""The latest copy of every watched object of the kinds other than pods and nodes.

Pods and nodes feed the ClusterCache (NodeInfo, assumed pods, snapshots).
Everything else a plugin reads (PodDisruptionBudgets, namespaces, and kinds
such as PersistentVolumeClaims or a plugin's CRD) is kept here as the API returned
it, one table per resource key ("namespaces", "policy/poddisruptionbudgets",
"storage.k8s.io/csinodes": `Resource.key`). One reflector per kind calls
`handler(key)`; plugins read through `Handle.objects` (the ObjectReader
protocol), and the owner subscribes to changes to move waiting pods back to the
queue. Readers get the stored dicts: treat them as read-only.

Indexes (client-go's Indexer): `add_index(key, name, fn)` keeps, for every
object of `key`, the values `fn(obj)` returns, updated on every change under
the store's lock, so `by_index(key, name, value)` answers without a scan (the
PersistentVolumes of one StorageClass that no claim holds yet, say).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

JsonObj = Mapping[str, Any]
# (resource key, "ADDED" | "MODIFIED" | "DELETED", old object or None, new object (the last copy when DELETED))
ChangeListener = Callable[[str, str, JsonObj | None, JsonObj], None]
# The index values of one object ([] when it is not indexed); an exception counts as [].
IndexFn = Callable[[JsonObj], Iterable[str]]


def object_name(obj: JsonObj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class ObjectStore:
    """Thread-safe tables of raw objects by resource key; satisfies framework.handle.ObjectReader."""

    def __init__(self, initial: Mapping[str, Iterable[JsonObj]] | None = None) -> None:
        self._lock = threading.Lock()
        self._tables: dict[str, dict[tuple[str, str], JsonObj]] = {}
        self._listeners: list[ChangeListener] = []
        # (key, index name) -> (fn, value -> object names)
        self._indexes: dict[tuple[str, str], tuple[IndexFn, dict[str, set[tuple[str, str]]]]] = {}
        for key, objs in (initial or {}).items():
            for obj in objs:
                self.apply(key, "ADDED", obj)

    def handler(self, key: str) -> Callable[[str, dict[str, Any]], None]:
        """The reflector callback `(event kind, object)` that keeps table `key` current."""
        return lambda kind, obj: self.apply(key, kind, obj)

    def subscribe(self, listener: ChangeListener) -> None:
        """Call `listener` after every change (on the reflector's thread; keep it quick)."""
        self._listeners.append(listener)

    def apply(self, key: str, kind: str, obj: JsonObj) -> None:
        name = object_name(obj)
        with self._lock:
            table = self._tables.setdefault(key, {})
            old = table.pop(name, None) if kind == "DELETED" else table.get(name)
            if kind != "DELETED":
                table[name] = obj
            for (k, _), (fn, index) in self._indexes.items():
                if k == key:
                    if old is not None:
                        _unindex(index, fn, name, old)
                    if kind != "DELETED":
                        _index(index, fn, name, obj)
        for listener in self._listeners:
            try:
                listener(key, kind, old, obj)
            except Exception:  # a listener bug must not stop the informer
                log.exception("Object change listener failed key=%s", key)

    def list(self, key: str, namespace: str | None = None) -> list[JsonObj]:
        """Every object of `key` (in `namespace` when given)."""
        with self._lock:
            table = self._tables.get(key, {})
            if namespace is None:
                return list(table.values())
            return [o for (ns, _), o in table.items() if ns == namespace]

    def get(self, key: str, namespace: str, name: str) -> JsonObj | None:
        """One object ("" namespace for cluster-scoped kinds), None when not (yet) seen."""
        with self._lock:
            return self._tables.get(key, {}).get((namespace, name))

    def add_index(self, key: str, name: str, fn: IndexFn) -> None:
        """Index objects of `key` by `fn` under `name` (once: a second call with the name keeps
        the first function), including the objects already stored."""
        with self._lock:
            if (key, name) in self._indexes:
                return
            index: dict[str, set[tuple[str, str]]] = {}
            for obj_name, obj in self._tables.get(key, {}).items():
                _index(index, fn, obj_name, obj)
            self._indexes[(key, name)] = (fn, index)

    def by_index(self, key: str, name: str, value: str) -> Sequence[JsonObj]:
        """The objects of `key` whose index `name` has `value` (KeyError: no such index)."""
        with self._lock:
            _, index = self._indexes[(key, name)]
            table = self._tables.get(key, {})
            return [table[n] for n in index.get(value, ()) if n in table]

    def count(self, key: str) -> int:
        with self._lock:
            return len(self._tables.get(key, {}))


def _values(fn: IndexFn, obj: JsonObj) -> Iterable[str]:
    try:
        return list(fn(obj))
    except Exception:  # a malformed object is simply not indexed; its readers report it
        return []


def _index(index: dict[str, set[tuple[str, str]]], fn: IndexFn, name: tuple[str, str], obj: JsonObj) -> None:
    for value in _values(fn, obj):
        index.setdefault(value, set()).add(name)


def _unindex(
    index: dict[str, set[tuple[str, str]]], fn: IndexFn, name: tuple[str, str], obj: JsonObj
) -> None:
    for value in _values(fn, obj):
        names = index.get(value)
        if names is not None:
            names.discard(name)
            if not names:
                del index[value]
