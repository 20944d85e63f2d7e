"""The start-up wait for the caches (netsched.kube.cachesync), as kube-scheduler's WaitForCacheSync.

It ends when every cache has synced or on the stop event (SIGTERM), never on a timer of its own;
while it waits it says which server it cannot list from and what it waits for, in one line for
all the resources, at once and then every REPORT_EVERY seconds, not once per resource per retry.
The clock is a manual one the wait itself moves (POLL per look), with things scripted at given
times: nothing here sleeps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from netsched.clock import ManualClock
from netsched.kube.cachesync import REPORT_EVERY, wait_for_cache_sync

SERVER = "https://10.0.0.1:6443"
CANNOT = "Cannot list from the API server; not scheduling until the caches sync"
WAITING = "Waiting for the caches to sync before scheduling"


@dataclass
class FakeReflector:
    name: str
    has_synced: threading.Event = field(default_factory=threading.Event)
    last_error: str = ""


class ScriptedClock(ManualClock):
    """A manual clock that runs each scripted action once its time has come."""

    def __init__(self, script: dict[float, Callable[[], None]]) -> None:
        super().__init__(start=0.0)
        self._script = sorted(script.items())

    def step(self, seconds: float) -> None:
        super().step(seconds)
        while self._script and self._script[0][0] <= self.now() + 1e-9:
            self._script.pop(0)[1]()


def reflectors(*names: str, error: str = "") -> list[FakeReflector]:
    return [FakeReflector(n, last_error=error) for n in names]


def run(
    rs: list[FakeReflector],
    script: dict[float, Callable[[], None]],
    stop: threading.Event | None = None,
    timeout: float | None = None,
) -> tuple[bool, float]:
    """Whether the wait saw the caches synced, and the (manual) time it returned at."""
    clock = ScriptedClock(script)
    stop = stop or threading.Event()
    synced = wait_for_cache_sync(rs, stop, server=SERVER, clock=clock, timeout=timeout)
    return synced, clock.now()


def lines(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith(message)]


def sync_all(rs: list[FakeReflector]) -> Callable[[], None]:
    def go() -> None:
        for r in rs:
            r.last_error = ""
            r.has_synced.set()

    return go


def test_synced_caches_end_the_wait_at_once_without_a_word(caplog: pytest.LogCaptureFixture) -> None:
    rs = reflectors("nodes", "pods")
    for r in rs:
        r.has_synced.set()
    caplog.set_level(logging.DEBUG, "netsched.kube.cachesync")
    assert run(rs, {}) == (True, 0.0)
    assert not caplog.records


def test_the_stop_event_ends_the_wait_whatever_the_caches_do() -> None:
    stop = threading.Event()
    rs = reflectors("nodes", "pods", error="ConnectionRefusedError: [Errno 111] Connection refused")
    synced, when = run(rs, {5.0: stop.set}, stop)
    assert not synced
    assert when == pytest.approx(5.0)


def test_a_stop_before_the_wait_returns_false_at_once() -> None:
    stop = threading.Event()
    stop.set()
    assert run(reflectors("nodes"), {}, stop) == (False, 0.0)


def test_no_timer_of_its_own_the_wait_outlasts_kube_schedulers_old_minute() -> None:
    rs = reflectors("nodes", "pods", error="timed out")
    synced, when = run(rs, {600.0: sync_all(rs)})
    assert synced
    assert when == pytest.approx(600.0)


def test_an_unreachable_server_is_named_once_for_all_resources_then_at_a_slow_pace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "netsched.kube.cachesync")
    names = ("nodes", "pods", "poddisruptionbudgets", "namespaces", "persistentvolumes")
    rs = reflectors(*names, error="ConnectionRefusedError: [Errno 111] Connection refused")
    stop = threading.Event()
    run(rs, {95.0: stop.set}, stop)
    warned = lines(caplog, CANNOT)
    # At once, then every REPORT_EVERY seconds: 0, 30, 60, 90.
    assert len(warned) == 1 + int(95.0 // REPORT_EVERY)
    assert {r.levelno for r in warned} == {logging.WARNING}
    first = warned[0].getMessage()
    assert f"server={SERVER}" in first
    assert "waitingFor=" + ",".join(names) in first
    assert "failing=5" in first and "Connection refused" in first
    assert not lines(caplog, WAITING)


def test_only_the_resources_still_waiting_are_named(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "netsched.kube.cachesync")
    nodes, pods = reflectors("nodes", "pods")
    nodes.has_synced.set()
    pods.last_error = "403 Forbidden: pods is forbidden"
    stop = threading.Event()
    run([nodes, pods], {1.0: stop.set}, stop)
    (warned,) = lines(caplog, CANNOT)
    assert "waitingFor=pods " in warned.getMessage() and "403 Forbidden" in warned.getMessage()


def test_a_slow_list_without_errors_is_reported_at_info_after_a_while(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "netsched.kube.cachesync")
    rs = reflectors("nodes", "pods")
    synced, _ = run(rs, {75.0: sync_all(rs)})
    assert synced
    waiting = lines(caplog, WAITING)
    assert len(waiting) == 2  # at 30 s and 60 s: a list that takes seconds is not news
    assert {r.levelno for r in waiting} == {logging.INFO}
    assert not lines(caplog, CANNOT)


def test_an_error_that_appears_later_is_reported_when_it_does(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "netsched.kube.cachesync")
    rs = reflectors("nodes")

    def fail() -> None:
        rs[0].last_error = "TimeoutError: timed out"

    stop = threading.Event()
    run(rs, {10.0: fail, 20.0: stop.set}, stop)
    (warned,) = lines(caplog, CANNOT)
    assert "waited=10s" in warned.getMessage()


def test_a_timeout_when_asked_for() -> None:
    rs = reflectors("nodes")
    synced, when = run(rs, {}, timeout=2.5)
    assert not synced
    assert when == pytest.approx(2.5)
