"""The client-side token bucket, on a fake clock."""

from __future__ import annotations

import pytest

from netsched.kube.ratelimit import TokenBucket


class FakeTime:
    def __init__(self) -> None:
        self.t = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def bucket(qps: float, burst: int) -> tuple[TokenBucket, FakeTime]:
    ft = FakeTime()
    return TokenBucket(qps, burst, clock=ft.clock, sleep=ft.sleep), ft


def test_burst_is_served_without_waiting() -> None:
    tb, ft = bucket(10, 5)
    assert [tb.acquire() for _ in range(5)] == [0.0] * 5
    assert ft.sleeps == []


def test_callers_beyond_the_burst_wait_their_turn_in_order() -> None:
    tb, ft = bucket(10, 2)
    for _ in range(5):
        tb.acquire()
    # Reservations: the 3rd, 4th, 5th callers wait 0.1, 0.2, 0.3 s (time did not move).
    assert ft.sleeps == pytest.approx([0.1, 0.2, 0.3])
    assert tb.waited_seconds == pytest.approx(0.6)


def test_tokens_refill_at_qps_up_to_burst() -> None:
    tb, ft = bucket(10, 3)
    for _ in range(3):
        tb.acquire()
    ft.t += 0.2  # two tokens back: two reservations served at once, the third on credit
    assert tb.reserve() == 0.0
    assert tb.reserve() == 0.0
    assert tb.reserve() > 0.0
    ft.t += 100.0  # a long idle period saves at most `burst`
    assert sum(tb.reserve() == 0.0 for _ in range(10)) == 3


def test_zero_qps_disables_limiting() -> None:
    tb, ft = bucket(0, 1)
    assert not tb.enabled
    for _ in range(1000):
        tb.acquire()
    assert ft.sleeps == []
    assert tb.reserve() == 0.0


def test_burst_below_one_still_admits_one() -> None:
    tb, ft = bucket(5, 0)
    assert tb.acquire() == 0.0
    assert tb.acquire() == pytest.approx(0.2)


def test_try_acquire_takes_a_token_only_when_one_is_there_and_never_on_credit() -> None:
    tb, ft = bucket(10, 2)
    assert tb.try_acquire() and tb.try_acquire()
    assert not tb.try_acquire()  # empty: no token taken on credit
    assert tb.reserve() == pytest.approx(0.1)  # the next waiter is first in line, as if none asked
    ft.t += 0.2
    assert tb.try_acquire()
    assert not tb.try_acquire()
    assert ft.sleeps == []
    off, _ = bucket(0, 1)
    assert all(off.try_acquire() for _ in range(100))
