"""The PodGroup status writer (netsched.plugins.gangs): marked groups are written by the periodic task
the gang manager registers (the process's loop), and a failed write is retried by the one
retry policy, then left marked for the next run; nothing starts a thread or a timer."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from netsched.plugins.gangs import PodGroupStatusWriter, StatusUpdate
from netsched.plugins.gangs import status as status_module
from netsched.plugins.gangs.status import ATTEMPTS
from netsched.testing.handle import MemoryAPI


def _update(stored: dict[str, Any], status: dict[str, Any]) -> StatusUpdate:
    return StatusUpdate("default", "g", stored, status)


def test_a_mark_asks_the_loop_to_run_soon_and_the_run_writes() -> None:
    api = MemoryAPI()
    nudged: list[int] = []
    writer = PodGroupStatusWriter(api, soon=lambda: nudged.append(1))
    writer.computes_with(lambda _g: _update({}, {"phase": "Scheduled", "scheduled": 2, "running": 0}))
    before = threading.active_count()
    writer.mark("default/g")
    assert nudged == [1] and not api.patches and writer.pending() == 1
    assert threading.active_count() == before  # no thread of its own
    writer.write_marked()
    assert api.patches[0][3]["status"]["phase"] == "Scheduled" and writer.pending() == 0


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


def _flaky(monkeypatch: pytest.MonkeyPatch, api: MemoryAPI, failures: int) -> dict[str, int]:
    calls = {"n": 0}
    real = api.patch_object

    def flaky(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ConnectionError("apiserver went away")
        return real(*args, **kw)

    monkeypatch.setattr(api, "patch_object", flaky)
    return calls


def test_a_failed_write_is_retried_by_the_retry_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    api = MemoryAPI()
    calls = _flaky(monkeypatch, api, failures=1)
    waits: list[float] = []
    writer = PodGroupStatusWriter(api, sleep=waits.append)
    writer.computes_with(lambda _g: _update({}, {"phase": "Scheduled", "scheduled": 2, "running": 0}))
    writer.mark("default/g")
    writer.write_marked()
    assert calls["n"] == 2 and api.patches[0][3]["status"]["phase"] == "Scheduled"
    assert len(waits) == 1 and waits[0] > 0  # the policy's backoff, on the injected sleep


def test_a_write_failing_every_attempt_stays_marked_for_the_next_run(monkeypatch: pytest.MonkeyPatch) -> None:
    api = MemoryAPI()
    calls = _flaky(monkeypatch, api, failures=3)  # every attempt of the first run
    writer = PodGroupStatusWriter(api)
    writer.computes_with(lambda _g: _update({}, {"phase": "Scheduled", "scheduled": 2, "running": 0}))
    writer.mark("default/g")
    writer.write_marked()
    assert calls["n"] == 3 and not api.patches and writer.pending() == 1
    writer.write_marked()
    assert api.patches and writer.pending() == 0


def test_shutdown_ends_the_retries() -> None:
    api = MemoryAPI()
    stopped = threading.Event()
    calls = {"n": 0}

    def failing(*_a: Any, **_kw: Any) -> Any:
        calls["n"] += 1
        stopped.set()  # the process stops while the first write fails
        raise ConnectionError("apiserver went away")

    api.patch_object = failing  # type: ignore[method-assign]
    writer = PodGroupStatusWriter(api, stopped=stopped.is_set)
    writer.computes_with(lambda _g: _update({}, {"phase": "Scheduled", "scheduled": 2, "running": 0}))
    writer.mark("default/g")
    writer.write_marked()
    assert calls["n"] == 1 and writer.pending() == 1


def test_an_outage_ends_the_run_at_the_first_group_that_fails_and_keeps_the_rest_marked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """50 marked groups and the API down: one group's retries, one warning, the loop freed;
    every group still marked, and the next run (API back) writes them all."""
    api = MemoryAPI()
    real = api.patch_object
    down = {"on": True, "calls": 0}

    def patch(*args: Any, **kw: Any) -> Any:
        down["calls"] += 1
        if down["on"]:
            raise ConnectionError("apiserver went away")
        return real(*args, **kw)

    api.patch_object = patch  # type: ignore[method-assign]
    waits: list[float] = []
    writer = PodGroupStatusWriter(api, sleep=waits.append)
    writer.computes_with(
        lambda g: StatusUpdate("default", g, {}, {"phase": "Scheduling", "scheduled": 1, "running": 0})
    )
    for i in range(50):
        writer.mark(f"default/g{i}")
    with caplog.at_level("WARNING"):
        writer.write_marked()
    assert down["calls"] == ATTEMPTS and len(waits) == ATTEMPTS - 1
    assert len([r for r in caplog.records if "Could not update PodGroup status" in r.getMessage()]) == 1
    assert writer.pending() == 50
    down["on"] = False
    writer.write_marked()
    assert writer.pending() == 0 and len(api.patches) == 50


def test_the_last_written_statuses_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer remembers what it last wrote per group (the cache lags): a bounded memory,
    and a group found gone is forgotten."""
    monkeypatch.setattr(status_module, "WRITTEN_BOUND", 100)
    api = MemoryAPI()
    writer = PodGroupStatusWriter(api, inline=True)
    gone: set[str] = set()
    writer.computes_with(
        lambda g: (
            None
            if g in gone
            else StatusUpdate("default", g, {}, {"phase": "Scheduling", "scheduled": 1, "running": 0})
        )
    )
    for i in range(1000):
        writer.mark(f"default/g{i}")
    assert len(api.patches) == 1000 and len(writer._written) <= 100
    gone.add("default/g999")
    writer.mark("default/g999")
    assert writer._written.get("default/g999", 0.0) is None
