"""EventBroadcaster's own event path: retries without dropping, parallel writers, shutdown flush."""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from typing import Any

import pytest

from netsched.kube.errors import AlreadyExists, ApiError, ServerError, TooManyRequests, Transient
from netsched.kube.events import EVENTS_V1, EventBroadcaster, EventRetry
from netsched.kube.events.sink import Sent, Written
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.events import OneByOneSink

FAST = EventRetry(backoff=0.001, max_backoff=0.01, max_retry_after=0.01)


class FlakySink(OneByOneSink):
    """Fails each create with the next queued error (per note), then succeeds; thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.created: list[dict[str, Any]] = []
        self.errors: list[ApiError] = []  # raised in order by the next creates
        self.always: ApiError | None = None
        self.attempts = 0

    def create(self, api: str, namespace: str, body: dict[str, Any]) -> None:
        with self.lock:
            self.attempts += 1
            if self.always is not None:
                raise self.always
            if self.errors:
                raise self.errors.pop(0)
            self.created.append(body)

    def patch(self, api: str, namespace: str, name: str, body: dict[str, Any]) -> None:
        return None


def pod(i: int) -> Any:
    return make_pod(f"p-{i}").namespace("ns").uid(f"uid-{i}").info()


def test_transient_failures_are_retried_until_written_and_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = FlakySink()
    sink.errors = [ServerError(503, "ServiceUnavailable", "restarting")] * 6 + [
        Transient(0, "ConnectionResetError", "reset by peer")
    ] * 3
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), retry=FAST, workers=1)
    with caplog.at_level(logging.DEBUG, logger="netsched.kube.events"):
        b.new_recorder("netsched").event(pod(0), "Normal", "Scheduled", "Binding", "m")
        assert b.flush(5)
    b.stop()
    assert [c["note"] for c in sink.created] == ["m"]
    assert (b.written, b.failed, b.dropped, b.retries) == (1, 0, 0, 9)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2  # one per kind of failure (503, reset), not one per retry
    assert all("retrying" in w for w in warnings)


def test_retry_after_is_honoured() -> None:
    sink = FlakySink()
    sink.errors = [TooManyRequests(429, "TooManyRequests", "slow down", retry_after=3.0)]
    slept: list[float] = []
    b = EventBroadcaster(
        sink,
        instance="x",
        clock=FakeClock(),
        retry=EventRetry(backoff=0.001, max_backoff=0.01, max_retry_after=30),
        sleep=slept.append,
    )
    b.new_recorder("netsched").event(pod(0), "Normal", "Scheduled", "Binding", "m")
    assert b.flush(5)
    b.stop()
    assert slept == [3.0]
    assert b.written == 1


def test_a_create_whose_reply_was_lost_is_not_written_twice() -> None:
    sink = FlakySink()
    sink.errors = [AlreadyExists(409, "AlreadyExists", 'events "p-0.17" already exists')]
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), retry=FAST)
    b.new_recorder("netsched").event(pod(0), "Normal", "Scheduled", "Binding", "m")
    assert b.flush(5)
    b.stop()
    assert (b.written, b.failed, b.dropped) == (1, 0, 0)


def test_writers_share_the_load_and_keep_each_pods_events_in_order() -> None:
    sink = FlakySink()
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), workers=4, queue_size=10_000)
    rec = b.new_recorder("netsched")
    for step in range(5):
        for i in range(200):
            rec.event(pod(i), "Warning", "FailedScheduling", "Scheduling", f"step {step}")
    assert b.flush(10)
    b.stop()
    by_pod: dict[str, list[str]] = defaultdict(list)
    for body in sink.created:
        by_pod[body["regarding"]["name"]].append(body["note"])
    assert len(by_pod) == 200
    assert all(notes == [f"step {s}" for s in range(5)] for notes in by_pod.values())
    threads = {name for name in (t.name for t in threading.enumerate()) if name.startswith("event-writer")}
    assert not threads  # stop() ended every writer


def test_drops_and_write_delays_reach_the_callbacks() -> None:
    sink = FlakySink()
    gate = threading.Event()
    original = sink.create

    def blocked(api: str, namespace: str, body: dict[str, Any]) -> None:
        gate.wait(5)
        original(api, namespace, body)

    sink.create = blocked  # type: ignore[method-assign]
    clock = FakeClock()
    drops: list[str] = []
    delays: list[float] = []
    b = EventBroadcaster(
        sink,
        instance="x",
        clock=clock,
        workers=1,
        queue_size=1,
        on_drop=drops.append,
        on_written=delays.append,
    )
    rec = b.new_recorder("netsched")
    rec.event(pod(0), "Normal", "Scheduled", "Binding", "in flight")
    assert _wait_until(lambda: b.pending == 0)  # taken by the writer, stuck in create
    rec.event(pod(1), "Normal", "Scheduled", "Binding", "queued")
    rec.event(pod(2), "Normal", "Scheduled", "Binding", "no room")
    clock.step(2)
    gate.set()
    assert b.flush(5)
    b.stop()
    rec.event(pod(3), "Normal", "Scheduled", "Binding", "after stop")
    assert drops == ["full", "stopped"]
    assert delays == [2.0, 2.0]
    assert [c["note"] for c in sink.created] == ["in flight", "queued"]


def test_stop_writes_everything_queued_while_the_server_recovers() -> None:
    sink = FlakySink()
    sink.errors = [ServerError(500, "InternalError", "etcd leader change")] * 50
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), retry=FAST, workers=2)
    rec = b.new_recorder("netsched")
    for i in range(100):
        rec.event(pod(i), "Normal", "Scheduled", "Binding", f"m{i}")
    assert b.stop(timeout=10)
    assert len(sink.created) == 100
    assert (b.dropped, b.failed) == (0, 0)


def test_stop_gives_up_at_its_deadline_and_counts_what_is_left() -> None:
    sink = FlakySink()
    sink.always = ServerError(503, "ServiceUnavailable", "down for good")
    drops: list[str] = []
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), retry=FAST, workers=2, on_drop=drops.append)
    rec = b.new_recorder("netsched")
    for i in range(10):
        rec.event(pod(i), "Normal", "Scheduled", "Binding", f"m{i}")
    assert not b.stop(timeout=0.2)
    assert sink.created == []
    assert b.dropped == 10 and drops == ["shutdown"] * 10
    assert b.failed == 0
    assert sink.attempts > 10  # the writers kept retrying until the deadline


def test_api_groups_are_the_same_for_every_writer() -> None:
    sink = FlakySink()
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), workers=3)
    rec = b.new_recorder("netsched")
    for i in range(30):
        rec.event(pod(i), "Normal", "Scheduled", "Binding", "m")
    assert b.flush(5)
    b.stop()
    assert {c["apiVersion"] for c in sink.created} == {EVENTS_V1}
    assert len({c["metadata"]["name"] for c in sink.created}) == 30


def _wait_until(cond: Any, timeout: float = 5.0) -> bool:
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if cond():
            return True
        done.wait(0.01)
    return bool(cond())


# ---------------------------------------------------------------- batches (pipelined creates)


class BatchSink(FlakySink):
    """A FlakySink that can also create many at once (as KubeEventSink pipelines them): each item
    fails with `fail_by_note[note]` once, if set. Its first write is made one create at a time,
    and the first create waits for `gate`."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []
        self.fail_by_note: dict[str, ApiError] = {}
        self.gate = threading.Event()
        self.entered = threading.Event()

    def create(self, api: str, namespace: str, body: dict[str, Any]) -> None:
        self.entered.set()
        self.gate.wait(5)
        super().create(api, namespace, body)

    def send_many(self, api: str, items: list[tuple[str, dict[str, Any]]], *, reserved: bool = False) -> Sent:
        if self.entered.is_set():
            return super().send_many(api, items)
        return Written(OneByOneSink.create_many(self, api, items))

    def create_many(self, api: str, items: list[tuple[str, dict[str, Any]]]) -> list[Exception | None]:
        out: list[Exception | None] = []
        with self.lock:
            self.batches.append([body["note"] for _, body in items])
            for _, body in items:
                err = self.fail_by_note.pop(body["note"], None)
                out.append(err)
                if err is None:
                    self.created.append(body)
        return out


def _queued_behind_a_slow_write(sink: BatchSink, events: list[tuple[int, str, str]]) -> EventBroadcaster:
    """The writer busy with a first event while `events` (pod, reason, note) queue up behind it."""
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), retry=FAST, workers=1)
    rec = b.new_recorder("netsched")
    rec.event(pod(99), "Normal", "Scheduled", "Binding", "first")
    assert sink.entered.wait(5)
    for i, reason, note in events:
        rec.event(pod(i), "Normal", reason, "Binding", note)
    sink.gate.set()
    assert b.flush(5)
    b.stop()
    return b


def _busy_writer(sink: BatchSink, queued: int, **kwargs: Any) -> EventBroadcaster:
    """A broadcaster whose writer is busy with a first event ("first", waiting for sink.gate)
    while `queued` more (notes m0, m1, ...) wait behind it."""
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), retry=FAST, **kwargs)
    rec = b.new_recorder("netsched")
    rec.event(pod(999), "Normal", "Scheduled", "Binding", "first")
    assert sink.entered.wait(5)
    for i in range(queued):
        rec.event(pod(i), "Normal", "Scheduled", "Binding", f"m{i}")
    return b


def test_events_queued_together_are_created_in_one_batch() -> None:
    sink = BatchSink()
    b = _queued_behind_a_slow_write(sink, [(i, "Scheduled", f"m{i}") for i in range(5)])
    assert sink.batches == [[f"m{i}" for i in range(5)]]
    assert [c["note"] for c in sink.created] == ["first"] + [f"m{i}" for i in range(5)]
    assert (b.written, b.failed, b.dropped) == (6, 0, 0)


def test_a_batch_member_that_fails_goes_the_single_event_way() -> None:
    from netsched.kube.errors import Forbidden

    sink = BatchSink()
    sink.fail_by_note = {
        "m1": Transient(0, "ConnectionResetError", "no reply"),  # retried alone: written
        "m2": AlreadyExists(409, "AlreadyExists", "exists"),  # an earlier attempt made it: written
        "m3": Forbidden(403, "Forbidden", "no"),  # permanent: counted failed, not sent again
    }
    b = _queued_behind_a_slow_write(sink, [(i, "Scheduled", f"m{i}") for i in range(5)])
    assert sorted(c["note"] for c in sink.created) == ["first", "m0", "m1", "m4"]
    assert sink.attempts == 2  # the first event and m1's retry: m3 was not sent alone
    assert (b.written, b.failed, b.retries) == (5, 1, 1)


def test_a_pods_events_in_one_batch_keep_their_order() -> None:
    sink = BatchSink()
    events = [
        (1, "FailedScheduling", "a1"),
        (2, "Scheduled", "b"),
        (1, "Scheduled", "a2"),
        (3, "Scheduled", "c"),
    ]
    _queued_behind_a_slow_write(sink, events)
    assert sink.batches == [["a1", "b", "c"], ["a2"]]  # pod 1's second event waits for its first
    notes = [c["note"] for c in sink.created]
    assert notes.index("a1") < notes.index("a2")


def test_a_batch_that_fails_transiently_is_retried_together_until_the_server_answers() -> None:
    sink = BatchSink()
    down = Transient(0, "ConnectionRefusedError", "connection refused")
    outage = 3  # attempts at the batch that find the server down
    original = sink.create_many

    def refusing(api: str, items: list[tuple[str, dict[str, Any]]]) -> list[Exception | None]:
        if len(sink.batches) < outage:
            sink.batches.append([body["note"] for _, body in items])
            return [down] * len(items)
        return original(api, items)

    sink.create_many = refusing  # type: ignore[method-assign]
    slept: list[float] = []
    notes = [f"m{i}" for i in range(5)]
    b = _busy_writer(sink, len(notes), sleep=slept.append)
    sink.gate.set()
    assert b.flush(5)
    b.stop()
    # One wait per failed attempt at the whole batch, none per event once it answers.
    assert sink.batches == [notes] * (outage + 1)
    assert (b.written, b.failed, b.dropped, b.retries) == (6, 0, 0, outage)
    assert len(slept) == outage and max(slept) <= FAST.max_backoff + FAST.backoff


def test_a_batch_still_failing_at_the_shutdown_deadline_is_counted_dropped() -> None:
    sink = BatchSink()
    sink.create_many = lambda api, items: [  # type: ignore[method-assign]
        ServerError(503, "ServiceUnavailable", "down") for _ in items
    ]
    drops: list[str] = []
    b = _busy_writer(sink, 4, on_drop=drops.append)
    sink.gate.set()
    assert _wait_until(lambda: b.retries >= 2)
    assert not b.stop(timeout=0.2)
    assert [c["note"] for c in sink.created] == ["first"]
    assert drops == ["shutdown"] * 4 and b.failed == 0


# ---------------------------------------------------------------- what a SIGKILL would lose


def test_what_is_held_unwritten_is_the_queue_and_at_most_one_batch_taken() -> None:
    from netsched.kube.events.writer import BATCH

    sink = BatchSink()
    in_batch = threading.Event()
    release = threading.Event()
    original = sink.create_many

    def slow(api: str, items: list[tuple[str, dict[str, Any]]]) -> list[Exception | None]:
        in_batch.set()
        release.wait(5)
        return original(api, items)

    sink.create_many = slow  # type: ignore[method-assign]
    b = _busy_writer(sink, BATCH + 8)
    assert b.unwritten == 1 + BATCH + 8  # the one being written and all queued
    sink.gate.set()
    assert in_batch.wait(5)
    assert b.unwritten == BATCH + 8 and b.pending == 8  # one batch taken, the rest queued
    release.set()
    assert b.flush(5)
    assert b.unwritten == 0
    b.stop()


def test_stop_counts_what_a_writer_stuck_in_a_request_still_holds() -> None:
    sink = BatchSink()  # its first create waits for the gate: a request left hanging
    drops: list[str] = []
    b = _busy_writer(sink, 3, on_drop=drops.append)
    assert not b.stop(timeout=0.1)
    assert drops == ["shutdown"] * 4  # the one in the hanging request and the three queued
    sink.gate.set()


def test_a_half_written_batch_holds_only_its_rest_and_is_dropped_once_at_shutdown() -> None:
    # The reviewer's probe: a first round writes 4 of 12, the rest get 503, and the retry hangs on
    # a dead connection past stop()'s deadline. Only the 8 unwritten are held, and dropped once.
    sink = BatchSink()
    hung = threading.Event()
    release = threading.Event()
    down = ServerError(503, "ServiceUnavailable", "down")

    def half_then_hang(api: str, items: list[tuple[str, dict[str, Any]]]) -> list[Exception | None]:
        if not sink.batches:
            sink.batches.append([body["note"] for _, body in items])
            sink.created.extend(body for _, body in items[:4])
            return [None] * 4 + [down] * (len(items) - 4)
        hung.set()
        release.wait(5)
        return [down] * len(items)

    sink.create_many = half_then_hang  # type: ignore[method-assign]
    drops: list[str] = []
    b = _busy_writer(sink, 12, on_drop=drops.append)
    sink.gate.set()
    assert hung.wait(5)
    assert (b.written, b.unwritten) == (5, 8)  # "first" and 4 of the batch written
    assert not b.stop(timeout=0.1)
    assert drops == ["shutdown"] * 8
    release.set()
    assert _wait_until(lambda: not any(w.thread.is_alive() for w in b._writers))
    assert drops == ["shutdown"] * 8 and b.dropped == 8  # not dropped again when the request returns
