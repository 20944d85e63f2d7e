"""The generic slots a plugin family plugs into: shared services, periodic tasks, pod indexes
(served through the Handle), and object references for events about non-pod objects."""

from __future__ import annotations

import threading

import pytest

from netsched.framework import ObjectRef, ServiceKey
from netsched.framework.periodic import PeriodicTasks
from netsched.framework.shared import SharedServices
from netsched.testing.clock import FakeClock
from netsched.testing.handle import RecordingEvents


class Counter:
    def __init__(self) -> None:
        self.n = 0


class Other:
    pass


def test_a_shared_service_is_built_once_and_typed_by_its_key() -> None:
    shared = SharedServices()
    key = ServiceKey("counter", Counter)
    built: list[Counter] = []

    def build() -> Counter:
        built.append(Counter())
        return built[-1]

    first = shared.get(key, build)
    assert shared.get(key, build) is first and len(built) == 1
    assert shared.find(key) is first and shared.find(ServiceKey("nothing", Counter)) is None
    with pytest.raises(TypeError, match="two plugin families use one name"):
        shared.get(ServiceKey("counter", Other), Other)


def test_periodic_tasks_run_when_due_on_the_clock_and_soon_when_asked() -> None:
    clock = FakeClock()
    tasks = PeriodicTasks(clock)
    runs: list[str] = []
    tasks.every("a", 5.0, lambda: runs.append("a"))
    tasks.every("a", 1.0, lambda: runs.append("again"))  # the first registration stays
    assert tasks.run_due() == 0
    clock.step(5.0)
    assert tasks.run_due() == 1 and runs == ["a"]
    tasks.soon("a")
    assert tasks.run_due() == 1 and runs == ["a", "a"]
    assert tasks.run_due() == 0
    with pytest.raises(ValueError, match="every must be positive"):
        tasks.every("b", 0, lambda: None)


def test_a_failing_task_does_not_stop_the_others() -> None:
    clock = FakeClock()
    tasks = PeriodicTasks(clock)
    runs: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    tasks.every("bad", 1.0, boom)
    tasks.every("good", 1.0, lambda: runs.append("good"))
    clock.step(1.0)
    assert tasks.run_due() == 2 and runs == ["good"]


def test_the_loop_ends_with_the_stop_event_after_a_last_run() -> None:
    from netsched.clock import SystemClock

    tasks = PeriodicTasks(SystemClock())
    ran = threading.Event()
    runs: list[int] = []

    def work() -> None:
        runs.append(1)
        ran.set()

    tasks.every("w", 3600.0, work)
    stop = threading.Event()
    loop = threading.Thread(target=tasks.run, args=(stop,), daemon=True)
    loop.start()
    tasks.soon("w")
    assert ran.wait(10)
    stop.set()
    tasks.stop()
    loop.join(10)
    assert not loop.is_alive() and len(runs) >= 2  # the nudged run, then the last one


def test_an_event_about_an_object_reference_names_it() -> None:
    events = RecordingEvents()
    ref = ObjectRef("Widget", "example.com/v1", "default", "w1", uid="u1")
    events.event(ref, "Warning", "Broken", "Scheduling", "it broke")
    assert events.events == [("default/w1", "Warning", "Broken", "Scheduling", "it broke")]
