"""The event writer keeps up to IN_FLIGHT batches out, reading each one's replies when they come;
a binding thread sends its pod's Scheduled event itself when the writer owes nothing of the pod.

A SIGKILL loses what the process holds unwritten, so the writer does not wait for a batch's
replies before sending the next. What must not change with it: a pod's events are written in
order (an event of a pod whose earlier create is unanswered waits for it), and transient
failures are retried as before (the failed members of every batch out together, after one wait,
until written). The sink here answers each batch only when the test says so, on a real socket, so
the writer waits for it exactly as it waits for the API server.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from netsched.kube.errors import ServerError
from netsched.kube.events import EventBroadcaster, EventRetry
from netsched.kube.events.writer import IN_FLIGHT
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.events import OneByOneSink
from netsched.testing.wait import wait_until

FAST = EventRetry(backoff=0.001, max_backoff=0.01, max_retry_after=0.01)


class HeldBatch:
    """A batch sent and unanswered until `answer()`: its one lane is a socket pair the writer
    selects on, readable once answered."""

    def __init__(self, notes: list[str], errors: list[Exception | None]) -> None:
        self.notes = notes
        self.errors = errors
        self._ours, self._theirs = socket.socketpair()
        self.deadline: float | None = None
        self.answered = False

    def answer(self) -> None:
        self._theirs.send(b"\0")

    def filenos(self) -> Sequence[int]:
        return () if self.answered else (self._ours.fileno(),)

    def read(self, fd: int) -> None:
        self._ours.recv(1)
        self.answered = True

    def finish(self) -> list[Exception | None]:
        if not self.answered:
            self.read(self._ours.fileno())
        self._ours.close()
        self._theirs.close()
        return self.errors


class HeldSink(OneByOneSink):
    """Every batch waits for the test to answer it; `fail` (notes) fail once, transiently; what
    is tried again is created at once (create_many, the writer's retries)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[HeldBatch] = []
        self.created: list[str] = []
        self.retried: list[list[str]] = []
        self.fail: set[str] = set()
        self.senders: dict[str, str] = {}  # note -> the thread that sent it
        self.tokens: int | None = None  # rate-limit tokens left for reserve(); None: no limit

    def reserve(self) -> bool:
        with self.lock:
            if self.tokens is None:
                return True
            if self.tokens <= 0:
                return False
            self.tokens -= 1
            return True

    def send_many(
        self, api: str, items: list[tuple[str, dict[str, Any]]], *, reserved: bool = False
    ) -> HeldBatch:
        notes = [body["note"] for _, body in items]
        with self.lock:
            self.senders.update(dict.fromkeys(notes, threading.current_thread().name))
            errors: list[Exception | None] = [
                ServerError(503, "ServiceUnavailable", "down") if n in self.fail else None for n in notes
            ]
            self.created.extend(n for n, e in zip(notes, errors, strict=True) if e is None)
            batch = HeldBatch(notes, errors)
            self.sent.append(batch)
        return batch

    def create_many(self, api: str, items: list[tuple[str, dict[str, Any]]]) -> list[Exception | None]:
        notes = [body["note"] for _, body in items]
        with self.lock:
            self.retried.append(notes)
            self.created.extend(notes)
        return [None] * len(items)

    def create(self, api: str, namespace: str, body: dict[str, Any]) -> None:
        self.create_many(api, [(namespace, body)])

    def patch(self, api: str, namespace: str, name: str, body: dict[str, Any]) -> None:
        return None

    def batches(self) -> list[list[str]]:
        with self.lock:
            return [b.notes for b in self.sent]


def pod(i: int) -> Any:
    return make_pod(f"p-{i}").namespace("ns").uid(f"uid-{i}").info()


MADE: list[tuple[EventBroadcaster, HeldSink]] = []


@pytest.fixture(autouse=True)
def stopped() -> Iterator[None]:
    """Every broadcaster a test made is stopped, its batches answered, even when the test fails
    (a writer left running would be seen by other tests)."""
    yield
    while MADE:
        b, sink = MADE.pop()
        for batch in list(sink.sent):
            with contextlib.suppress(OSError):
                batch.answer()
        b.stop(timeout=2)


def broadcaster(sink: HeldSink, **kwargs: Any) -> tuple[EventBroadcaster, Any]:
    b = EventBroadcaster(sink, instance="x", clock=FakeClock(), retry=FAST, workers=1, **kwargs)
    MADE.append((b, sink))
    return b, b.new_recorder("netsched")


def test_batches_go_out_while_earlier_ones_wait_and_at_most_in_flight_of_them() -> None:
    sink = HeldSink()
    b, rec = broadcaster(sink)
    for i in range(IN_FLIGHT + 2):
        rec.event(pod(i), "Normal", "Scheduled", "Binding", f"m{i}")
        if i < IN_FLIGHT:  # each goes out on its own while those before it are unanswered
            wait_until(lambda i=i: len(sink.batches()) == i + 1, what=f"batch {i} sent")  # type: ignore[misc]
    assert sink.batches() == [[f"m{i}"] for i in range(IN_FLIGHT)]
    assert b.unwritten == IN_FLIGHT + 2  # sent, unanswered, and the two queued behind them
    sink.sent[0].answer()
    # The oldest answered: what was queued goes out in its place. The two queued events go out
    # together when the writer took them off its queue together; taken one by one, the second
    # needs a slot of its own, freed when the next oldest is answered: never more than
    # IN_FLIGHT unanswered (a flake before: the test waited for both after one answer).
    queued = [f"m{IN_FLIGHT}", f"m{IN_FLIGHT + 1}"]
    first = wait_until(lambda: sink.batches()[IN_FLIGHT:], what="the first queued one sent")
    answered = 1
    if first[0] != queued:
        assert first == [queued[:1]]
        assert len(sink.batches()) == IN_FLIGHT + 1  # the second waits for a slot
        sink.sent[1].answer()
        answered = 2
    wait_until(lambda: sum(sink.batches()[IN_FLIGHT:], []) == queued, what="the queued ones sent")
    for batch in sink.sent[answered:]:
        batch.answer()
    assert b.flush(5)
    assert (b.written, b.failed, b.dropped, b.unwritten) == (IN_FLIGHT + 2, 0, 0, 0)
    b.stop()


def test_a_pods_next_event_waits_until_its_earlier_create_is_answered() -> None:
    sink = HeldSink()
    b, rec = broadcaster(sink)
    rec.event(pod(1), "Warning", "FailedScheduling", "Scheduling", "a1")
    wait_until(lambda: len(sink.batches()) == 1, what="a1 sent")
    rec.event(pod(1), "Normal", "Scheduled", "Binding", "a2")
    rec.event(pod(2), "Normal", "Scheduled", "Binding", "b")
    wait_until(lambda: len(sink.batches()) == 2, what="b sent")
    assert sink.batches() == [["a1"], ["b"]]  # a2 held back, b went out beside a1
    assert b.unwritten == 3
    sink.sent[1].answer()
    wait_until(lambda: b.written == 1, what="b written")
    assert len(sink.batches()) == 2  # b's answer frees nothing of pod 1
    sink.sent[0].answer()
    wait_until(lambda: len(sink.batches()) == 3, what="a2 sent once a1 is answered")
    assert sink.batches()[2] == ["a2"]
    sink.sent[2].answer()
    assert b.flush(5)
    assert sink.created == ["a1", "b", "a2"]
    b.stop()


def test_transient_failures_of_every_batch_out_are_retried_together_after_one_wait() -> None:
    sink = HeldSink()
    sink.fail = {"m0", "m1", "m2"}
    slept: list[float] = []
    b, rec = broadcaster(sink, sleep=slept.append)
    for i in range(3):
        rec.event(pod(i), "Normal", "Scheduled", "Binding", f"m{i}")
        wait_until(lambda i=i: len(sink.batches()) == i + 1, what=f"batch {i} sent")  # type: ignore[misc]
    rec.event(pod(3), "Normal", "Scheduled", "Binding", "m3")
    wait_until(lambda: len(sink.batches()) == 4, what="m3 sent")
    sink.sent[3].answer()  # written
    wait_until(lambda: b.written == 1, what="m3 written")
    for batch in sink.sent[:3]:  # failed: the first settled gathers the other batches out
        batch.answer()
    assert b.flush(5)
    assert len(sink.retried) == 1 and sorted(sink.retried[0]) == ["m0", "m1", "m2"]  # after one wait
    assert len(slept) == 1 and (b.retries, b.written, b.failed, b.dropped) == (1, 4, 0, 0)
    assert sorted(sink.created) == ["m0", "m1", "m2", "m3"]
    b.stop()


def _from_a_binding_thread(b: EventBroadcaster, fn: Any) -> None:
    """fn() on a thread that may write its own events, as the binding pool's threads may."""

    def run() -> None:
        b.write_from_this_thread()
        fn()

    t = threading.Thread(target=run, name="bind_0")
    t.start()
    t.join(5)


def test_a_binding_thread_sends_its_pods_event_itself_and_the_writer_reads_the_reply() -> None:
    sink = HeldSink()
    b, rec = broadcaster(sink)
    _from_a_binding_thread(b, lambda: rec.event(pod(1), "Normal", "Scheduled", "Binding", "m1"))
    assert sink.senders == {"m1": "bind_0"}  # sent before the call returned, by the caller
    assert b.unwritten == 1
    rec.event(pod(2), "Normal", "Scheduled", "Binding", "m2")  # this thread may not: queued
    wait_until(lambda: "m2" in sink.senders, what="m2 sent")
    assert sink.senders["m2"].startswith("event-writer")
    for batch in sink.sent:
        batch.answer()
    assert b.flush(5)
    assert (b.written, b.unwritten, b.dropped) == (2, 0, 0)
    b.stop()


def test_a_binding_thread_queues_its_event_when_the_writer_owes_something_of_the_pod() -> None:
    sink = HeldSink()
    b, rec = broadcaster(sink)
    rec.event(pod(1), "Warning", "FailedScheduling", "Scheduling", "a1")  # the scheduling thread's
    wait_until(lambda: len(sink.batches()) == 1, what="a1 sent")
    _from_a_binding_thread(b, lambda: rec.event(pod(1), "Normal", "Scheduled", "Binding", "a2"))
    assert "a2" not in sink.senders  # a1 unanswered: a2 waits behind it, in order
    sink.sent[0].answer()
    wait_until(lambda: "a2" in sink.senders, what="a2 sent after a1 is answered")
    assert sink.senders["a2"].startswith("event-writer")
    sink.sent[1].answer()
    assert b.flush(5)
    assert sink.created == ["a1", "a2"]
    b.stop()


def test_a_binding_thread_never_waits_for_a_rate_limit_token_nor_past_in_flight_batches() -> None:
    sink = HeldSink()
    b, rec = broadcaster(sink)
    sink.tokens = 0
    _from_a_binding_thread(b, lambda: rec.event(pod(1), "Normal", "Scheduled", "Binding", "t"))
    wait_until(lambda: "t" in sink.senders, what="t sent")
    assert sink.senders["t"].startswith("event-writer")  # no token now: the writer's way
    sink.tokens = None
    for i in range(2, 2 + IN_FLIGHT):
        _from_a_binding_thread(
            b,
            lambda i=i: rec.event(pod(i), "Normal", "Scheduled", "Binding", f"m{i}"),  # type: ignore[misc]
        )
    direct = [n for n, t in sink.senders.items() if t == "bind_0"]
    assert len(direct) == IN_FLIGHT - 1  # "t" is out too: the last one queued
    for batch in list(sink.sent):
        batch.answer()
    wait_until(lambda: len(sink.sent) == IN_FLIGHT + 1, what="the queued one sent")
    sink.sent[-1].answer()
    assert b.flush(5)
    assert (b.written, b.unwritten) == (IN_FLIGHT + 1, 0)
    b.stop()
