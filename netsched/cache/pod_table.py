"""Pods by uid, also indexed by namespace and by the indexes plugins register.

The cache's assigned pods and the event handlers' pending pods are both read
per namespace (Handle.list_pods) and per registered index (Handle.pods_by_index:
a plugin family's key over pods, such as a group label or a workload); a
scan of every pod of the cluster, or of a namespace, per call would grow with
it, the indexes do not.  Only the methods below exist, so every change goes
through the indexes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, KeysView, ValuesView
from typing import TypeVar

from netsched.framework.types import PodInfo

# A registered index's key over pods: "" leaves the pod out of that index.
IndexKey = Callable[[PodInfo], str]


class PodTable:
    __slots__ = ("_by_ns", "_by_uid", "_index_keys", "_indexes")

    def __init__(self) -> None:
        self._by_uid: dict[str, PodInfo] = {}
        self._by_ns: dict[str, dict[str, PodInfo]] = {}
        self._index_keys: dict[str, IndexKey] = {}
        self._indexes: dict[str, dict[str, dict[str, PodInfo]]] = {}

    def add_index(self, name: str, key: IndexKey) -> None:
        """Keep the pods indexed by `key` under `name` from now on, the pods already here
        included; registering a name again keeps the first key (one per plugin family)."""
        if name in self._index_keys:
            return
        self._index_keys[name] = key
        index: dict[str, dict[str, PodInfo]] = {}
        for uid, pod in self._by_uid.items():
            value = key(pod)
            if value:
                index.setdefault(value, {})[uid] = pod
        self._indexes[name] = index

    def __setitem__(self, uid: str, pod: PodInfo) -> None:
        """Add or update: an update keeps the pod's place in the buckets it stays in (the
        namespace's, each index's), so Handle.list_pods and pods_by_index keep their order."""
        old = self._by_uid.get(uid)
        self._by_uid[uid] = pod
        if old is not None and old.namespace != pod.namespace:
            _drop(self._by_ns, old.namespace, uid)
        self._by_ns.setdefault(pod.namespace, {})[uid] = pod
        for name, key in self._index_keys.items():
            index = self._indexes[name]
            value = key(pod)
            if old is not None:
                was = key(old)
                if was != value:
                    _drop(index, was, uid)
            if value:
                index.setdefault(value, {})[uid] = pod

    def pop(self, uid: str, default: None = None) -> PodInfo | None:
        """Remove and return the pod (None when absent)."""
        pod = self._by_uid.pop(uid, None)
        if pod is not None:
            self._unindex(uid, pod)
        return pod

    def _unindex(self, uid: str, pod: PodInfo) -> None:
        _drop(self._by_ns, pod.namespace, uid)
        for name, key in self._index_keys.items():
            _drop(self._indexes[name], key(pod), uid)

    def get(self, uid: str) -> PodInfo | None:
        return self._by_uid.get(uid)

    def in_namespace(self, namespace: str) -> list[PodInfo]:
        return list(self._by_ns.get(namespace, {}).values())

    def by_index(self, name: str, value: str) -> list[PodInfo]:
        """The pods whose key under index `name` is `value` (none when no such index)."""
        return list(self._indexes.get(name, {}).get(value, {}).values())

    def values(self) -> ValuesView[PodInfo]:
        return self._by_uid.values()

    def keys(self) -> KeysView[str]:
        return self._by_uid.keys()

    def items(self) -> list[tuple[str, PodInfo]]:
        return list(self._by_uid.items())

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_uid)

    def __len__(self) -> int:
        return len(self._by_uid)


K = TypeVar("K")


def _drop(index: dict[K, dict[str, PodInfo]], key: K, uid: str) -> None:
    bucket = index.get(key)
    if bucket is not None:
        bucket.pop(uid, None)
        if not bucket:
            del index[key]
