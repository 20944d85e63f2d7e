"""The one way netsched retries: tenacity policies, all built by `policy()`.

Three things retry transient failures: API requests (netsched.kube.client),
event writes (netsched.kube.events.writer) and Prometheus queries
(netsched.metrics.poller). Each says what is transient, where its backoff
starts and ends, and when to stop; `policy()` builds the tenacity.Retrying
the same way for all of them: exponential backoff with jitter, a server's
Retry-After honoured when the caller can read one, waits never past a
deadline on an injected clock, a cancel event that ends the waits (shutdown)
with no further attempt, the failure re-raised as itself, sleep injectable
so tests never wait.

`retry_after_first()` enters a policy with attempt 1 already made and
failed. Hot paths make their first attempt outside tenacity (its loop costs
about 8 µs of CPU a call on this project's machine, a sixth of a request on
the keep-alive transport) and enter the policy only after a transient
failure, through tenacity's public API (Retrying.__call__).

The strategies below are named like tenacity's own (wait_*, stop_*), so a
policy reads as one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import tenacity
from tenacity import RetryCallState
from tenacity.stop import stop_base
from tenacity.wait import wait_base

R = TypeVar("R")


def policy(
    transient: Callable[[BaseException], bool],
    *,
    backoff: float,
    max_backoff: float,
    stop: stop_base,
    sleep: Callable[[float], Any] | None = None,
    before_sleep: Callable[[RetryCallState], None] | None = None,
    retry_after: Callable[[BaseException], float] | None = None,
    max_retry_after: float = 0.0,
    deadline: tuple[Callable[[], float], float] | None = None,
    cancel: threading.Event | None = None,
) -> tenacity.Retrying:
    """A retry policy: failures for which `transient` is true are tried again until `stop`.

    Waits start at `backoff` and double up to `max_backoff`, with up to `backoff`
    of jitter. `retry_after(error)` is the server's Retry-After hint in seconds
    (0: none); a hint longer than the wait wins, capped at `max_retry_after`.
    `deadline` is (now, when) on the caller's clock: no wait runs past it and no
    attempt is made that could only start at it (tenacity decides the stop after the wait, so
    a wait that would cross the deadline is never slept).  `cancel` set ends retrying: no
    wait starts, a wait under way ends at once (`sleep` defaults to `cancel.wait`), and
    the failure before it is raised with no further attempt.  `sleep` defaults to
    time.sleep otherwise.
    """
    wait: wait_base = tenacity.wait_exponential_jitter(multiplier=backoff, max=max_backoff, jitter=backoff)
    if retry_after is not None:
        wait = wait_retry_after(wait, retry_after, max_retry_after)
    if deadline is not None:
        stop = stop | stop_at_deadline(*deadline)
    if cancel is not None:
        stop = stop | stop_when(cancel.is_set)
        sleep, before_sleep = _cancellable(cancel, sleep or cancel.wait, before_sleep)
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(transient),
        wait=wait,
        stop=stop,
        sleep=sleep or time.sleep,
        before_sleep=before_sleep,
        reraise=True,
    )


def _cancellable(
    cancel: threading.Event,
    sleep: Callable[[float], Any],
    before_sleep: Callable[[RetryCallState], None] | None,
) -> tuple[Callable[[float], None], Callable[[RetryCallState], None]]:
    """`sleep` and `before_sleep` for a policy that `cancel` ends: tenacity makes the next attempt
    straight after a sleep, so a sleep that ends with `cancel` set raises the failure it followed
    (remembered per thread by before_sleep: one policy serves many threads)."""
    failures = threading.local()

    def remember(state: RetryCallState) -> None:
        failures.last = state.outcome.exception() if state.outcome is not None else None
        if before_sleep is not None:
            before_sleep(state)

    def wait(seconds: float) -> None:
        sleep(seconds)
        last = getattr(failures, "last", None)
        if cancel.is_set() and last is not None:
            raise last

    return wait, remember


def retry_after_first(
    retrying: tenacity.Retrying, first: BaseException, fn: Callable[..., R], *args: Any
) -> R:
    """fn(*args) under `retrying`, attempt 1 being the one already made, which failed with `first`:
    waits, Retry-After, stops and before_sleep are exactly the policy's from there on."""
    pending = [first]

    def attempt(*a: Any) -> R:
        if pending:
            raise pending.pop()
        return fn(*a)

    return retrying(attempt, *args)


class wait_retry_after(wait_base):
    """An inner wait, unless the failure carries a longer Retry-After hint (capped at `cap`)."""

    def __init__(self, inner: wait_base, hint: Callable[[BaseException], float], cap: float) -> None:
        self.inner = inner
        self.hint = hint
        self.cap = cap

    def __call__(self, retry_state: RetryCallState) -> float:
        wait = float(self.inner(retry_state))
        outcome = retry_state.outcome
        if outcome is not None and outcome.failed:
            exc = outcome.exception()
            hinted = self.hint(exc) if exc is not None else 0.0
            if hinted > wait:
                return min(hinted, self.cap)
        return wait


class stop_at_deadline(stop_base):
    """Stop when the wait before the next attempt would reach a deadline on the injected clock.

    Like tenacity's stop_before_delay (which uses time.monotonic): an attempt
    that could only start at the deadline is not made, so a call that keeps
    failing ends with its own error (timeout, 503), not with "no time left".
    """

    def __init__(self, now: Callable[[], float], deadline: float) -> None:
        self.now = now
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.now() + retry_state.upcoming_sleep >= self.deadline


class stop_when(stop_base):
    """Stop retrying once `flag()` is true (shutdown giving up on a write)."""

    def __init__(self, flag: Callable[[], bool]) -> None:
        self.flag = flag

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.flag()


__all__ = [
    "policy",
    "retry_after_first",
    "stop_at_deadline",
    "stop_when",
    "wait_retry_after",
]
