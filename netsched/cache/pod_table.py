"""Pods by uid, also indexed by namespace and by gang (PodGroup).

The cache's assigned pods and the event handlers' pending pods are both read
per namespace (Handle.list_pods) and per gang (the gang manager counts a
gang's members on every PreFilter and Permit, and each status write); a scan
of every pod of the cluster, or of a namespace, per call would grow with it,
the indexes do not.  Only the methods below exist, so every change goes
through the indexes.
"""

from __future__ import annotations

from collections.abc import Iterator, KeysView, ValuesView
from typing import TypeVar

from netsched.framework.types import PodInfo
from netsched.gangs.podgroup import group_name


class PodTable:
    __slots__ = ("_by_group", "_by_ns", "_by_uid")

    def __init__(self) -> None:
        self._by_uid: dict[str, PodInfo] = {}
        self._by_ns: dict[str, dict[str, PodInfo]] = {}
        self._by_group: dict[tuple[str, str], dict[str, PodInfo]] = {}

    def __setitem__(self, uid: str, pod: PodInfo) -> None:
        old = self._by_uid.get(uid)
        if old is not None and (old.namespace != pod.namespace or group_name(old) != group_name(pod)):
            self._unindex(uid, old)
        self._by_uid[uid] = pod
        self._by_ns.setdefault(pod.namespace, {})[uid] = pod
        group = group_name(pod)
        if group:
            self._by_group.setdefault((pod.namespace, group), {})[uid] = pod

    def pop(self, uid: str, default: None = None) -> PodInfo | None:
        """Remove and return the pod (None when absent)."""
        pod = self._by_uid.pop(uid, None)
        if pod is not None:
            self._unindex(uid, pod)
        return pod

    def _unindex(self, uid: str, pod: PodInfo) -> None:
        _drop(self._by_ns, pod.namespace, uid)
        _drop(self._by_group, (pod.namespace, group_name(pod)), uid)

    def get(self, uid: str) -> PodInfo | None:
        return self._by_uid.get(uid)

    def in_namespace(self, namespace: str) -> list[PodInfo]:
        return list(self._by_ns.get(namespace, {}).values())

    def in_group(self, namespace: str, group: str) -> list[PodInfo]:
        """The pods labelled as members of PodGroup namespace/group."""
        return list(self._by_group.get((namespace, group), {}).values())

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
