"""Typed services a plugin family shares in one process (Handle.shared).

Plugins of one family (say the gang plugins, or a traffic graph's) often need
one state object between them and across profiles and config reloads: a
manager, a cache, an index.  The core knows nothing of what that object is:
the family declares a `ServiceKey[T]` next to its code and asks the Handle
for it with a builder; the first asker builds it, every later one gets the
same instance, typed as `T` for mypy and checked at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ServiceKey(Generic[T]):
    """Names one shared service and its type: `MANAGER = ServiceKey("gangs", GangManager)`."""

    __slots__ = ("kind", "name")

    def __init__(self, name: str, kind: type[T]) -> None:
        self.name = name
        self.kind = kind

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r}, {self.kind.__name__})"


class SharedServices:
    """One per process (the composition root's), handed to every profile's Handle."""

    def __init__(self) -> None:
        self._services: dict[str, object] = {}
        self._lock = threading.Lock()

    def get(self, key: ServiceKey[T], build: Callable[[], T]) -> T:
        """The service under `key`, built by `build` the first time it is asked for."""
        with self._lock:
            got = self._services.get(key.name)
            if got is None:
                got = self._services[key.name] = build()
        if not isinstance(got, key.kind):
            raise TypeError(
                f"shared service {key.name!r} is a {type(got).__name__}, not the {key.kind.__name__} "
                "its key names: two plugin families use one name"
            )
        return got

    def find(self, key: ServiceKey[T]) -> T | None:
        """The service under `key` when one was built (the composition root's views: explain)."""
        with self._lock:
            got = self._services.get(key.name)
        return got if isinstance(got, key.kind) else None
