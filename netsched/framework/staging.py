"""What plugins register while frameworks are built, kept aside until the build succeeds.

The process's shared registries (periodic tasks, debug pages) belong to the
plugins that register into them.  At start and at each hot reload every
framework is built anew; what its plugins register meanwhile is staged, and
only a build that succeeds replaces what the registry holds (so an entry goes
when the plugin or profile that made it does).  A failed build leaves the
registry as it was.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class Staging(Generic[T]):
    """The registrations of the build under way (`staged`: None between builds), guarded by
    the registry's own lock."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.staged: T | None = None

    @contextmanager
    def build(self, empty: Callable[[], T], commit: Callable[[T], None]) -> Iterator[None]:
        """Stage into `empty()` while the body runs; on success `commit(staged)` under the lock,
        on failure drop what was staged."""
        with self._lock:
            self.staged = empty()
        try:
            yield
        except BaseException:
            with self._lock:
                self.staged = None
            raise
        with self._lock:
            staged, self.staged = self.staged, None
            if staged is not None:
                commit(staged)
