"""Reflector and watch-stream line splitting, against scripted list/watch functions."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from netsched import logutil
from netsched.kube.errors import Forbidden, Gone, NotFound, Transient
from netsched.kube.reflector import ExponentialBackoff, ObjectList, Reflector, iter_lines, stop_reflectors

# --- line splitting ------------------------------------------------------------


def test_lines_within_one_chunk() -> None:
    assert list(iter_lines([b'{"a":1}\n{"b":2}\n'])) == [b'{"a":1}', b'{"b":2}']


def test_a_line_split_across_chunks_is_joined() -> None:
    chunks = [b'{"type":"ADD', b'ED","object":{}}\n{"ty', b'pe":"DELETED"}\n']
    assert list(iter_lines(chunks)) == [b'{"type":"ADDED","object":{}}', b'{"type":"DELETED"}']


def test_a_line_arriving_byte_by_byte() -> None:
    line = b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}'
    chunks = [bytes([c]) for c in line + b"\n"]
    assert list(iter_lines(chunks)) == [line]


def test_blank_lines_are_skipped_and_an_unterminated_tail_is_kept() -> None:
    assert list(iter_lines([b"\n\n{}\n", b"\r\n", b'{"x"', b":1}"])) == [b"{}", b'{"x":1}']


def test_newline_at_chunk_boundaries() -> None:
    assert list(iter_lines([b"{}", b"\n", b"{}\n", b"", b"[]"])) == [b"{}", b"{}", b"[]"]


# --- backoff -------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap_and_resets() -> None:
    b = ExponentialBackoff(initial=1.0, maximum=5.0, factor=2.0, jitter=0.5, rand=lambda: 0.0)
    assert [b.next() for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    b.reset()
    assert b.next() == 1.0
    jittery = ExponentialBackoff(initial=1.0, jitter=0.5, rand=lambda: 1.0)
    assert jittery.next() == 1.5


# --- reflector -----------------------------------------------------------------


def obj(name: str, rv: int, uid: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": str(rv)}}


def line(kind: str, o: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": o}).encode() + b"\n"


def bookmark(rv: int) -> bytes:
    return line("BOOKMARK", {"kind": "Node", "metadata": {"resourceVersion": str(rv)}})


def error_event(code: int, reason: str) -> bytes:
    return line("ERROR", {"kind": "Status", "code": code, "reason": reason, "message": "m"})


class FakeStream:
    """Yields its chunks, then raises `then`, or (block=True) waits until closed."""

    def __init__(self, *chunks: bytes, then: BaseException | None = None, block: bool = False) -> None:
        self._chunks = chunks
        self._then = then
        self._block = block
        self.closed = threading.Event()

    def chunks(self) -> Iterator[bytes]:
        yield from self._chunks
        if self._then is not None:
            raise self._then
        if self._block:
            self.closed.wait(5)
            raise ConnectionResetError("closed under us")

    def close(self) -> None:
        self.closed.set()


class Lists:
    """Scripted list function: outcomes in order, the last one repeated."""

    def __init__(self, *outcomes: ObjectList | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    def __call__(self) -> ObjectList:
        self.calls += 1
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class Watches:
    """Scripted watch function; once the script runs out it returns streams that block until closed."""

    def __init__(self, *outcomes: FakeStream | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, int]] = []
        self.last: FakeStream | None = None

    def __call__(self, rv: str, timeout: int) -> FakeStream:
        self.calls.append((rv, timeout))
        outcome = self.outcomes.pop(0) if self.outcomes else FakeStream(block=True)
        if isinstance(outcome, BaseException):
            raise outcome
        self.last = outcome
        return outcome


class InstantClock:
    """Records every backoff wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def now(self) -> float:
        return 0.0

    def wait(self, event: threading.Event, seconds: float) -> bool:
        self.waits.append(round(seconds, 6))
        return event.is_set()


def wait_until(pred: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.002)


class Harness:
    def __init__(self, lists: Lists, watches: Watches, **kwargs: Any) -> None:
        self.events: list[tuple[str, str]] = []
        self.syncs: list[list[str]] = []
        self.clock = InstantClock()
        self.watches = watches
        self.reflector = Reflector(
            "things",
            lists,
            watches,
            lambda kind, o: self.events.append((kind, o["metadata"]["name"])),
            on_sync=lambda items: self.syncs.append([i["metadata"]["name"] for i in items]),
            watch_timeout=60,
            backoff=ExponentialBackoff(initial=1.0, maximum=8.0, jitter=0.0),
            clock=self.clock,
            **kwargs,
        )

    def __enter__(self) -> Harness:
        self.reflector.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.reflector.stop(timeout=2)
        assert not self.reflector.running

    def idle(self, watch_calls: int) -> None:
        """Wait until the reflector has opened `watch_calls` watches and is blocked in the last one."""
        wait_until(lambda: len(self.watches.calls) >= watch_calls and not self.watches.outcomes)


def test_list_then_watch_delivers_events_and_tracks_resource_version() -> None:
    lists = Lists(ObjectList([obj("a", 1)], "5"))
    first = FakeStream(
        line("ADDED", obj("b", 6)), line("MODIFIED", obj("a", 7)), line("DELETED", obj("b", 8)), bookmark(9)
    )
    with Harness(lists, Watches(first)) as h:
        h.idle(2)
        r = h.reflector
        assert r.has_synced.is_set()
        assert h.syncs == [["a"]]
        assert h.events == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
        # The second watch resumes from the bookmark's version; the first started at the list's.
        assert h.watches.calls == [("5", 60), ("9", 60)]
        assert r.resource_version == "9"
        assert (r.lists, r.relists, r.reconnects, r.bookmarks) == (1, 0, 0, 1)
        assert [o["metadata"]["name"] for o in r.objects()] == ["a"]
        assert first.closed.is_set()


def test_error_410_event_relists_and_delivers_only_the_difference() -> None:
    lists = Lists(
        ObjectList([obj("a", 1), obj("b", 1), obj("c", 1), obj("e", 1)], "3"),
        ObjectList([obj("b", 5), obj("c", 6, uid="new-c"), obj("d", 7), obj("e", 1)], "8"),
    )
    with Harness(lists, Watches(FakeStream(error_event(410, "Expired")))) as h:
        h.idle(2)
        assert h.events[4:] == [
            ("DELETED", "a"),
            ("MODIFIED", "b"),
            ("DELETED", "c"),
            ("ADDED", "c"),
            ("ADDED", "d"),
        ]
        assert h.reflector.relists == 1
        assert h.watches.calls[-1] == ("8", 60)
        assert h.syncs[-1] == ["b", "c", "d", "e"]
        assert h.clock.waits == []  # a first expiry relists at once


def test_http_410_on_the_watch_request_relists_too() -> None:
    lists = Lists(ObjectList([], "3"), ObjectList([obj("x", 9)], "9"))
    with Harness(lists, Watches(Gone(410, "Expired", "too old"))) as h:
        h.idle(2)
        assert h.events == [("ADDED", "x")]
        assert h.reflector.relists == 1


def test_connection_errors_rewatch_from_the_last_version_with_backoff_that_resets() -> None:
    lists = Lists(ObjectList([], "3"))
    watches = Watches(
        Transient(0, "ProtocolError", "reset"),
        Transient(0, "ProtocolError", "reset"),
        FakeStream(line("ADDED", obj("a", 4)), then=ConnectionResetError("reset mid-stream")),
        Transient(0, "ProtocolError", "reset"),
    )
    with Harness(lists, watches) as h:
        h.idle(5)
        r = h.reflector
        assert h.clock.waits == [1.0, 2.0, 1.0, 2.0]  # reset to 1 s once a watch delivered
        assert r.reconnects == 4
        assert r.lists == 1
        assert [rv for rv, _ in watches.calls] == ["3", "3", "3", "4", "4"]


def test_other_watch_errors_rewatch_without_relisting() -> None:
    lists = Lists(ObjectList([], "3"))
    with Harness(
        lists, Watches(FakeStream(error_event(500, "InternalError")), FakeStream(b"not json\n"))
    ) as h:
        h.idle(3)
        assert h.reflector.lists == 1
        assert h.reflector.reconnects == 2


def test_a_watch_ending_without_any_line_backs_off_instead_of_spinning() -> None:
    lists = Lists(ObjectList([], "3"))
    with Harness(lists, Watches(FakeStream(), FakeStream(bookmark(4)))) as h:
        h.idle(3)
        assert h.clock.waits == [1.0]
        assert h.reflector.reconnects == 0


def test_replayed_events_are_normalised_against_what_is_known() -> None:
    lists = Lists(ObjectList([obj("a", 1)], "1"))
    stream = FakeStream(
        line("ADDED", obj("a", 2)),  # already known: an update
        line("MODIFIED", obj("n", 3)),  # never seen: an add
        line("ADDED", obj("a", 4, uid="other")),  # same name, new object
    )
    with Harness(lists, Watches(stream)) as h:
        h.idle(2)
        assert h.events == [
            ("ADDED", "a"),
            ("MODIFIED", "a"),
            ("ADDED", "n"),
            ("DELETED", "a"),
            ("ADDED", "a"),
        ]


def test_a_failing_handler_is_logged_and_the_reflector_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def handler(kind: str, o: dict[str, Any]) -> None:
        seen.append(o["metadata"]["name"])
        if o["metadata"]["name"] == "bad":
            raise RuntimeError("handler bug")

    watches = Watches(FakeStream(line("ADDED", obj("bad", 2)), line("ADDED", obj("good", 3))))
    r = Reflector("things", Lists(ObjectList([], "1")), watches, handler, clock=InstantClock()).start()
    try:
        wait_until(lambda: "good" in seen)
    finally:
        r.stop()
    assert "Event handler failed resource=things type=ADDED object=bad" in caplog.text
    assert r.reconnects == 0


def test_optional_resource_that_is_not_served_counts_as_synced_and_is_retried() -> None:
    lists = Lists(
        NotFound(404, "NotFound", "the server could not find the requested resource"),
        ObjectList([obj("p", 2)], "2"),
    )
    with Harness(lists, Watches(), optional=True, optional_retry=120.0) as h:
        h.idle(1)
        assert h.reflector.has_synced.is_set()
        assert h.syncs[0] == []
        assert h.clock.waits == [120.0]
        assert h.reflector.available
        assert h.events == [("ADDED", "p")]


class Discovery:
    """Scripted discovery answers (why the API is not served, "" once it is), the last repeated."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)

    def __call__(self) -> str:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def lines_of(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [
        (rec.levelno, rec.getMessage()) for rec in caplog.records if rec.name == "netsched.kube.reflector"
    ]


NOT_SERVED = "the API server serves no g.io/v1"
DENIED = Forbidden(
    403, "Forbidden", 'things.g.io is forbidden: User "netsched" cannot list resource "things"'
)


def test_an_api_not_served_is_not_listed_and_logged_once_at_v2(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logutil.V2, "netsched.kube.reflector")
    lists = Lists(ObjectList([obj("p", 2)], "2"))
    discovery = Discovery(NOT_SERVED, NOT_SERVED, "")
    with Harness(
        lists, Watches(), optional=True, optional_retry=120.0, unserved=discovery, rbac="deploy/x"
    ) as h:
        h.idle(1)
        assert h.syncs == [[], [], ["p"]]  # synced empty while not served, read once it is
        assert h.clock.waits == [120.0, 120.0]
        assert lists.calls == 1  # never listed while discovery said it is not served
        assert h.events == [("ADDED", "p")]
    assert lines_of(caplog) == [
        (logutil.V2, f"API not served, running without the resource resource=things reason={NOT_SERVED}"),
        (logging.INFO, "Resource became available resource=things"),
    ]


def test_a_403_on_a_served_api_is_a_warning_that_names_its_rbac(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logutil.V2, "netsched.kube.reflector")
    lists = Lists(DENIED, DENIED, ObjectList([], "3"))
    discovery = Discovery(NOT_SERVED, "")  # the CRD is installed after the first look
    options = {"optional": True, "unserved": discovery, "rbac": "deploy/optional/appgroup"}
    with Harness(lists, Watches(), **options) as h:
        h.idle(1)
        assert h.syncs == [[], [], [], []] and lists.calls == 3
    warned = [msg for level, msg in lines_of(caplog) if level >= logging.WARNING]
    assert warned == [
        "Resource forbidden, running without it resource=things "
        f"hint=kubectl apply -k deploy/optional/appgroup err={DENIED}"
    ]  # once, not at every retry; the first look (not served) was no warning
    assert lines_of(caplog)[0][0] == logutil.V2


def test_a_required_resource_that_is_not_served_is_retried_with_backoff() -> None:
    lists = Lists(NotFound(404, "NotFound", "x"), ObjectList([], "2"))
    with Harness(lists, Watches()) as h:
        h.idle(1)
        assert h.clock.waits == [1.0]
        assert h.reflector.reconnects == 1


def test_stop_closes_the_open_watch_and_returns_promptly() -> None:
    watches = Watches()
    with Harness(Lists(ObjectList([], "1")), watches) as h:
        h.idle(1)
        started = time.monotonic()
        h.reflector.stop()
        assert time.monotonic() - started < 1.0
        assert not h.reflector.running
        assert watches.last is not None and watches.last.closed.is_set()


class ErrorsSeenClock(InstantClock):
    """At each backoff wait, records what the start-up wait would read: the reflector's last_error."""

    def __init__(self) -> None:
        super().__init__()
        self.reflector: Reflector | None = None
        self.errors: list[str] = []

    def wait(self, event: threading.Event, seconds: float) -> bool:
        assert self.reflector is not None
        self.errors.append(self.reflector.last_error)
        return super().wait(event, seconds)


def test_a_failure_is_kept_for_the_start_up_wait_and_logged_per_resource_only_at_v4_until_synced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, "netsched.kube.reflector")
    lists = Lists(
        Transient(0, "ConnectionRefusedError", "[Errno 111] Connection refused"), ObjectList([], "3")
    )
    watches = Watches(Transient(0, "ProtocolError", "reset"))
    clock = ErrorsSeenClock()
    r = Reflector("things", lists, watches, lambda kind, o: None, clock=clock)
    clock.reflector = r
    r.start()
    try:
        wait_until(lambda: len(watches.calls) >= 2 and not watches.outcomes)
        assert r.has_synced.is_set()
        assert r.last_error == ""  # the second watch is open: nothing failing now
    finally:
        r.stop()
    assert clock.errors == ["ConnectionRefusedError: [Errno 111] Connection refused", "ProtocolError: reset"]
    failed = [rec for rec in caplog.records if rec.getMessage().startswith("List/watch failed")]
    # Before the first sync: -v 4 (the start-up wait names the server once for all); after: a warning.
    assert [rec.levelno for rec in failed] == [logging.DEBUG, logging.WARNING]


def test_stop_reflectors_signals_every_one_before_waiting_for_any() -> None:
    release = threading.Event()

    def hung_list() -> ObjectList:
        release.wait(5)  # a list held by a hung server: only its reply or timeout ends it
        return ObjectList([], "1")

    rs = [
        Reflector(f"r{i}", hung_list, Watches(), lambda kind, o: None, clock=InstantClock()) for i in range(3)
    ]
    for r in rs:
        r.start()
    stop_reflectors(rs, 0.0)
    assert all(r._stopping.is_set() for r in rs)
    release.set()
    for r in rs:
        r.join(5)
    assert not any(r.running for r in rs)
