"""The PodGroup status writer (netsched.gangs, wired by the composition root): writes off the
caller's thread, and leaves no thread behind when idle."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import netsched.gangs.status as status_mod
from netsched.gangs import PodGroupStatusWriter, StatusUpdate
from netsched.testing.handle import MemoryAPI


def test_idle_writer_thread_ends_and_a_new_mark_starts_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status_mod, "IDLE_EXIT_SECONDS", 0.05)
    api = MemoryAPI()
    computed: list[str] = []
    written = threading.Event()

    def compute(group: str) -> StatusUpdate | None:
        computed.append(group)
        written.set()
        return None  # the group is gone: nothing to write

    writer = PodGroupStatusWriter(api)
    writer.computes_with(compute)
    writer.mark("default/a")
    assert written.wait(5)
    first = writer._thread
    assert first is not None
    first.join(5)
    assert not first.is_alive() and writer._thread is None
    written.clear()
    writer.mark("default/b")
    assert written.wait(5) and computed == ["default/a", "default/b"]


def _update(stored: dict[str, Any], status: dict[str, Any]) -> StatusUpdate:
    return StatusUpdate("default", "g", stored, status)


def test_a_status_is_compared_with_what_the_writer_last_wrote_not_the_lagging_cache() -> None:
    """The cache still shows PreScheduling while the writer already wrote Scheduling: going back
    to PreScheduling must be written (comparing with the cache would skip it and leave the
    server at Scheduling), and no patch carries the cache's stale resourceVersion."""
    api = MemoryAPI()
    cached = {"phase": "PreScheduling", "scheduled": 0, "running": 0}
    wanted = [{"phase": "Scheduling", "scheduled": 0, "running": 0}, dict(cached), dict(cached)]

    writer = PodGroupStatusWriter(api, inline=True)  # write on this thread: the sequence is the test
    writer.computes_with(lambda _g: _update(cached, wanted.pop(0)))
    for _ in range(3):
        writer.mark("default/g")
    phases = [p[3]["status"]["phase"] for p in api.patches]
    assert phases == ["Scheduling", "PreScheduling"]  # the third equals the last write: skipped
    assert all("metadata" not in p[3] for p in api.patches)


def test_a_failed_write_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status_mod, "RETRY_SECONDS", 0.05)
    api = MemoryAPI()
    calls = {"n": 0}
    real = api.patch_object

    def flaky(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("apiserver went away")
        return real(*args, **kw)

    monkeypatch.setattr(api, "patch_object", flaky)
    writer = PodGroupStatusWriter(api)
    writer.computes_with(lambda _g: _update({}, {"phase": "Scheduled", "scheduled": 2, "running": 0}))
    writer.mark("default/g")
    deadline = threading.Event()
    for _ in range(100):
        if api.patches:
            break
        deadline.wait(0.05)
    assert calls["n"] == 2 and api.patches[0][3]["status"]["phase"] == "Scheduled"
