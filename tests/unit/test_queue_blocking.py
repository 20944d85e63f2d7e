"""SchedulingQueue across threads: pop waits, add/close wake it, the flush loop follows the clock."""

from __future__ import annotations

import threading

from test_queue_helpers import new_queue, pod

from netsched.framework.types import QueuedPodInfo
from netsched.queue import ACTIVE, BACKOFF
from netsched.testing.clock import FakeClock

# Generous bounds on real waits: they only fail a broken test, never slow a passing one.
WAIT = 5.0


def start_pop(q: object) -> tuple[threading.Thread, threading.Event, list[QueuedPodInfo | None]]:
    started, out = threading.Event(), []

    def run() -> None:
        started.set()
        out.append(q.pop())  # type: ignore[attr-defined]

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert started.wait(WAIT)
    return t, started, out


def test_pop_blocks_until_a_pod_is_added() -> None:
    q = new_queue(FakeClock())
    t, _, out = start_pop(q)
    t.join(0.05)
    assert t.is_alive() and out == []  # nothing to pop yet
    q.add(pod("a"))
    t.join(WAIT)
    assert not t.is_alive()
    assert out[0] is not None and out[0].pod.name == "a"


def test_pop_wakes_when_a_gated_pod_is_ungated() -> None:
    q = new_queue(FakeClock())
    gated = pod("g", gates=["x"])
    q.add(gated)
    t, _, out = start_pop(q)
    t.join(0.05)
    assert t.is_alive()
    q.update(gated, pod("g"))
    t.join(WAIT)
    assert out[0] is not None and out[0].pod.name == "g"


def test_close_wakes_every_waiting_pop() -> None:
    q = new_queue(FakeClock())
    waiters = [start_pop(q) for _ in range(3)]
    q.close()
    for t, _, out in waiters:
        t.join(WAIT)
        assert not t.is_alive() and out == [None]
    q.add(pod("a"))
    assert q.pop(timeout=0) is None  # closed: no more cycles start
    assert q.closed


def test_pop_timeout_returns_none() -> None:
    q = new_queue(FakeClock())
    assert q.pop(timeout=0.01) is None
    assert q.scheduling_cycle == 0


def test_many_producers_and_consumers_lose_no_pod() -> None:
    q = new_queue(FakeClock())
    names = [f"p{i}" for i in range(400)]
    got: list[str] = []
    lock = threading.Lock()

    def consume() -> None:
        while (qp := q.pop(timeout=WAIT)) is not None:
            with lock:
                got.append(qp.pod.name)
            q.done(qp.pod.uid)
            if len(got) == len(names):
                q.close()

    def produce(part: list[str]) -> None:
        for n in part:
            q.add(pod(n))

    consumers = [threading.Thread(target=consume, daemon=True) for _ in range(4)]
    producers = [threading.Thread(target=produce, args=(names[i::4],), daemon=True) for i in range(4)]
    for t in consumers + producers:
        t.start()
    for t in consumers + producers:
        t.join(WAIT * 2)
    assert sorted(got) == sorted(names)
    assert q.in_flight() == []


def test_flush_loop_moves_backoff_and_unschedulable_pods_as_the_clock_advances() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    for n in ("a", "b"):
        q.add(pod(n))
    a = q.pop(timeout=0)
    b = q.pop(timeout=0)
    assert a is not None and b is not None
    q.add_unschedulable_if_not_present(a, error=True)  # 1 s backoff
    q.add_unschedulable_if_not_present(b)  # unschedulable for 5 min
    stop = threading.Event()
    loop = threading.Thread(target=q.run_flush_loop, args=(stop,), daemon=True)
    loop.start()
    try:
        popped = []
        # a pop in this thread waits (real time) while the loop flushes on fake time.
        clock.step(1.0)
        popped.append(q.pop(timeout=WAIT))
        assert q.where("uid-b") is not None and q.counts()[BACKOFF] == 0
        for _ in range(11):  # 330 s, in the loop's 30 s leftover ticks
            clock.step(30.0)
        popped.append(q.pop(timeout=WAIT))
        assert [p.pod.name if p else None for p in popped] == ["a", "b"]
        assert q.counts()[ACTIVE] == 0
    finally:
        stop.set()
        loop.join(WAIT)
    assert not loop.is_alive()


def test_flush_loop_stops_when_queue_closes() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    stop = threading.Event()
    loop = threading.Thread(target=q.run_flush_loop, args=(stop,), daemon=True)
    loop.start()
    q.close()
    for _ in range(500):  # the loop notices close() at its next (fake) tick
        clock.step(1)
        loop.join(0.01)
        if not loop.is_alive():
            break
    assert not loop.is_alive()
    assert not stop.is_set()
