"""netsched.retry: the one retry-policy factory and entering a policy after a failed first attempt."""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tenacity

from netsched.clock import ManualClock
from netsched.retry import policy, retry_after_first


class Flaky(Exception):
    def __init__(self, retry_after: float = 0.0) -> None:
        super().__init__("flaky")
        self.retry_after = retry_after


class Broken(Exception):
    pass


def transient(e: BaseException) -> bool:
    return isinstance(e, Flaky)


def make(sleeps: list[float], **overrides: Any) -> tenacity.Retrying:
    """A policy for `transient` recording its waits in `sleeps`; keywords override the defaults."""
    kw: dict[str, Any] = {
        "backoff": 0.0,
        "max_backoff": 0.0,
        "stop": tenacity.stop_after_attempt(3),
        "sleep": sleeps.append,
        **overrides,
    }
    return policy(transient, **kw)


def failing(errors: list[BaseException], result: str = "ok") -> tuple[list[int], Callable[[], str]]:
    """A function raising `errors` in turn, then returning `result`; and its call count."""
    calls = [0]

    def fn() -> str:
        calls[0] += 1
        if errors:
            raise errors.pop(0)
        return result

    return calls, fn


def test_transient_failures_are_retried_with_growing_jittered_waits() -> None:
    sleeps: list[float] = []
    r = make(sleeps, backoff=1.0, max_backoff=3.0, stop=tenacity.stop_after_attempt(5))
    calls, fn = failing([Flaky(), Flaky(), Flaky(), Flaky()])
    assert r(fn) == "ok"
    assert calls == [5]
    # 1, 2, 3 (capped), 3 seconds, each plus up to `backoff` of jitter and never above the cap.
    assert len(sleeps) == 4
    for got, base in zip(sleeps, (1.0, 2.0, 3.0, 3.0), strict=True):
        assert base <= got <= min(base + 1.0, 3.0)


def test_a_permanent_failure_is_raised_at_once_as_itself() -> None:
    r = make([], stop=tenacity.stop_after_attempt(5))
    calls, fn = failing([Broken()])
    with pytest.raises(Broken):
        r(fn)
    assert calls == [1]


def test_the_last_transient_failure_is_raised_when_the_policy_stops() -> None:
    r = make([])
    calls, fn = failing([Flaky(), Flaky(), Flaky(), Flaky()])
    with pytest.raises(Flaky):
        r(fn)
    assert calls == [3]


@pytest.mark.parametrize(
    ("hint", "cap", "want_min", "want_max"),
    [
        (0.0, 30.0, 0.1, 0.2),  # no hint: the backoff
        (5.0, 30.0, 5.0, 5.0),  # a longer hint wins
        (50.0, 30.0, 30.0, 30.0),  # ... capped
        (0.05, 30.0, 0.1, 0.2),  # a shorter hint does not shorten the backoff
    ],
)
def test_retry_after_hint(hint: float, cap: float, want_min: float, want_max: float) -> None:
    sleeps: list[float] = []
    r = make(
        sleeps,
        backoff=0.1,
        max_backoff=1.0,
        retry_after=lambda e: e.retry_after if isinstance(e, Flaky) else 0.0,
        max_retry_after=cap,
    )
    _, fn = failing([Flaky(hint)])
    r(fn)
    assert len(sleeps) == 1 and want_min <= sleeps[0] <= want_max


def test_a_deadline_caps_waits_and_stops_before_an_attempt_that_could_only_start_at_it() -> None:
    clock = ManualClock()
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        clock.step(s)

    r = make(
        sleeps,
        backoff=4.0,
        max_backoff=4.0,
        stop=tenacity.stop_after_attempt(10),
        sleep=sleep,
        deadline=(clock.now, clock.now() + 6.0),
    )
    calls, fn = failing([Flaky()] * 10)
    with pytest.raises(Flaky):
        r(fn)
    # Attempts at 0 s and 4 s; the next wait is cut to the 2 s left, and an attempt then could
    # only start at the deadline: none is made, the last failure is raised.
    assert calls == [2] and sleeps == [4.0]


def test_retry_after_first_counts_the_failed_first_attempt() -> None:
    sleeps: list[float] = []
    states: list[int] = []
    r = make(sleeps, backoff=0.5, max_backoff=0.5, before_sleep=lambda s: states.append(s.attempt_number))
    calls, fn = failing([Flaky(), Flaky(), Flaky()])
    with pytest.raises(Flaky):
        retry_after_first(r, Flaky(), fn)
    # Attempt 1 was the caller's: the policy makes attempts 2 and 3 only.
    assert calls == [2] and states == [1, 2] and len(sleeps) == 2


def test_retry_after_first_returns_the_retried_result_and_passes_the_arguments() -> None:
    r = make([])
    seen: list[tuple[str, int]] = []

    def fn(a: str, b: int) -> str:
        seen.append((a, b))
        return f"{a}{b}"

    assert retry_after_first(r, Flaky(), fn, "x", 1) == "x1"
    assert seen == [("x", 1)]


def test_retry_after_first_with_a_permanent_first_failure_raises_it() -> None:
    r = make([])
    first = Broken()
    calls, fn = failing([])
    with pytest.raises(Broken) as info:
        retry_after_first(r, first, fn)
    assert info.value is first and calls == [0]


def test_policies_are_built_only_by_the_factory() -> None:
    """One way to retry: no module but netsched/retry.py constructs a tenacity.Retrying."""
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for path in sorted([*(root / "netsched").rglob("*.py"), *(root / "plugins").rglob("*.py")]):
        if path == root / "netsched" / "retry.py" or (root / "netsched" / "plugins") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if name in ("Retrying", "AsyncRetrying", "retry"):
                    offenders.append(f"{path.relative_to(root)}:{node.lineno} {name}(...)")
    assert not offenders, "\n".join(offenders)


def test_cancel_during_a_wait_raises_the_failure_before_it_with_no_further_attempt() -> None:
    cancel = threading.Event()
    waited: list[float] = []

    def sleep(s: float) -> None:  # shutdown arrives during the first wait
        waited.append(s)
        cancel.set()

    r = make(
        [], backoff=5.0, max_backoff=5.0, stop=tenacity.stop_after_attempt(10), sleep=sleep, cancel=cancel
    )
    failures = [Flaky(), Flaky()]
    first = failures[0]
    calls, fn = failing(failures)
    with pytest.raises(Flaky) as info:
        r(fn)
    assert calls == [1] and len(waited) == 1 and info.value is first


def test_cancel_set_before_a_failure_stops_without_waiting() -> None:
    cancel = threading.Event()
    cancel.set()
    sleeps: list[float] = []
    r = make(sleeps, backoff=5.0, max_backoff=5.0, stop=tenacity.stop_after_attempt(10), cancel=cancel)
    calls, fn = failing([Flaky(), Flaky()])
    with pytest.raises(Flaky):
        retry_after_first(r, Flaky(), fn)
    assert calls == [0] and sleeps == []


def test_cancel_ends_a_real_wait_at_once() -> None:
    """The default sleep is the cancel event's wait: a 30 s backoff ends when it is set."""
    cancel = threading.Event()
    r = policy(transient, backoff=30.0, max_backoff=30.0, stop=tenacity.stop_after_attempt(3), cancel=cancel)
    calls, fn = failing([Flaky(), Flaky(), Flaky()])
    timer = threading.Timer(0.1, cancel.set)
    timer.start()
    with pytest.raises(Flaky):
        r(fn)
    timer.join()
    assert calls == [1]
