"""PrioritySort: higher priority first, then earlier queue timestamp; sort_key agrees with less."""

from __future__ import annotations

import functools
import random

from netsched.framework.types import QueuedPodInfo
from netsched.plugins.priority_sort import PrioritySort
from netsched.testing.builders import make_pod
from netsched.testing.framework import build_plugin


def qp(name: str, priority: int, ts: float) -> QueuedPodInfo:
    return QueuedPodInfo(make_pod(name).priority(priority).info(), ts)


def test_less_orders_by_priority_then_timestamp() -> None:
    pl = build_plugin(PrioritySort)
    high, low = qp("high", 100, 5.0), qp("low", 0, 1.0)
    assert pl.less(high, low) and not pl.less(low, high)
    early, late = qp("early", 7, 1.0), qp("late", 7, 2.0)
    assert pl.less(early, late) and not pl.less(late, early)
    assert not pl.less(early, early)
    # Negative priorities (e.g. best-effort batch classes) sort last.
    assert pl.less(qp("zero", 0, 9.0), qp("neg", -10, 0.0))


def test_sort_key_matches_less() -> None:
    pl = build_plugin(PrioritySort)
    rng = random.Random(1)
    pods = [qp(f"p{i}", rng.choice([-5, 0, 10, 1000]), float(rng.randint(0, 5))) for i in range(40)]

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if pl.less(a, b) else (1 if pl.less(b, a) else 0)

    by_key = sorted(pods, key=pl.sort_key)
    by_less = sorted(pods, key=functools.cmp_to_key(cmp))
    assert [pl.sort_key(p) for p in by_key] == [pl.sort_key(p) for p in by_less]
    for a in pods:
        for b in pods:
            assert pl.less(a, b) == (pl.sort_key(a) < pl.sort_key(b))


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert PrioritySort.name == "PrioritySort"
    assert extension_points_of(PrioritySort) == ["queueSort"]
