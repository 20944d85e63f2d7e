"""The base of the kit's controllers: what a cluster's controllers do that the fake API server does not.

Nothing runs kube-controller-manager or a kubelet next to a FakeAPIServer, so the kit plays
the few parts tests need (volumes.FakePVController; workloads.FakeReplicaSetController and
FakeKubelet), each a `StoreController`: it watches some kinds in the server's store (no HTTP,
no client: the objects are the server's own), handles the objects already there and then
every change, one at a time on its own thread, and writes back through the server's hooks,
as a controller writes through the API.  Use one as a context manager.

A handler that fails (an object changed under it, or a bug) does not stop the controller:
the error is kept in `errors`, so a test can assert there was none, and the next change of
that object is handled afresh.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Self

from netsched.fakeapi import FakeAPIServer
from netsched.fakeapi.resources import resolve_resource
from netsched.fakeapi.selection import match_all

Obj = dict[str, Any]


class StoreController:
    """Calls `handle(resource key, event type, object)` for every object of `kinds` in `server`'s
    store: ADDED for those there at the start, then each change as the store commits it."""

    def __init__(self, server: FakeAPIServer, kinds: tuple[str, ...], name: str) -> None:
        self.server = server
        self.name = name
        self.errors: list[BaseException] = []
        # Watch first, then list: an object created in between is handled twice, never missed.
        self._watchers = [server.store.watch(resolve_resource(k), None, match_all, None) for k in kinds]
        self._existing = [(k, o) for k in kinds for o in server.list(k)]
        self._stop = False
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # one handler at a time, across the kinds' threads

    def handle(self, key: str, event_type: str, obj: Obj) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._run_one_safely(self._existing)
        self._existing = []
        for w in self._watchers:
            t = threading.Thread(target=self._run, args=(w,), name=self.name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop = True
        for w in self._watchers:
            self.server.store.unwatch(w)
            w.queue.put(None)
        for t in self._threads:
            t.join(timeout=5)

    def _run(self, watcher: Any) -> None:
        while not self._stop:
            event = watcher.queue.get()
            if event is None or self._stop:
                return
            self._run_one_safely([(event.key, event.obj)], event.type)

    def _run_one_safely(self, items: list[tuple[str, Obj]], event_type: str = "ADDED") -> None:
        for key, obj in items:
            with self._lock:
                try:
                    self.handle(key, event_type, obj)
                except Exception as e:  # the object changed under us, or a bug: kept, and go on
                    self.errors.append(e)
