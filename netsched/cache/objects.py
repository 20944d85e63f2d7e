"""The latest copy of every watched object of the kinds other than pods and nodes.

Pods and nodes feed the ClusterCache (NodeInfo, assumed pods, snapshots).
Everything else a plugin reads (PodDisruptionBudgets, namespaces, and kinds
such as PersistentVolumeClaims or PodGroups) is kept here as the API returned
it, one table per resource key ("namespaces", "policy/poddisruptionbudgets",
"scheduling.x-k8s.io/podgroups": `Resource.key`). One reflector per kind calls
`handler(key)`; plugins read through `Handle.objects` (the ObjectReader
protocol), and the owner subscribes to changes to move waiting pods back to the
queue. Readers get the stored dicts: treat them as read-only.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

log = logging.getLogger(__name__)

JsonObj = Mapping[str, Any]
# (resource key, "ADDED" | "MODIFIED" | "DELETED", old object or None, new object (the last copy when DELETED))
ChangeListener = Callable[[str, str, JsonObj | None, JsonObj], None]


def object_name(obj: JsonObj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class ObjectStore:
    """Thread-safe tables of raw objects by resource key; satisfies framework.handle.ObjectReader."""

    def __init__(self, initial: Mapping[str, Iterable[JsonObj]] | None = None) -> None:
        self._lock = threading.Lock()
        self._tables: dict[str, dict[tuple[str, str], JsonObj]] = {}
        self._listeners: list[ChangeListener] = []
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

    def count(self, key: str) -> int:
        with self._lock:
            return len(self._tables.get(key, {}))
