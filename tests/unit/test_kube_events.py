"""EventBroadcaster: bodies, series de-duplication, core/v1 fallback, never blocking or raising."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from netsched.framework import EventRecorder
from netsched.kube.errors import Forbidden, NotFound
from netsched.kube.events import CORE_V1, EVENTS_V1, EventBroadcaster, KubeEventRecorder
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.events import OneByOneSink


class RecordingSink(OneByOneSink):
    def __init__(self) -> None:
        self.created: list[tuple[str, str, dict[str, Any]]] = []
        self.patched: list[tuple[str, str, str, dict[str, Any]]] = []
        self.fail_create: dict[str, Exception] = {}
        self.gate: threading.Event | None = None
        self.entered = threading.Event()  # set once a create is waiting at the gate

    def create(self, api: str, namespace: str, body: dict[str, Any]) -> None:
        if self.gate is not None:
            self.entered.set()
            self.gate.wait(5)
        if api in self.fail_create:
            raise self.fail_create[api]
        self.created.append((api, namespace, body))

    def patch(self, api: str, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.patched.append((api, namespace, name, body))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall_start=1_700_000_000.0)


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def broadcaster(sink: RecordingSink, clock: FakeClock) -> Iterator[EventBroadcaster]:
    b = EventBroadcaster(sink, instance="sched-0", clock=clock, series_interval=60.0)
    yield b
    b.stop()


POD = make_pod("web-1").namespace("shop").uid("uid-web-1").info()


def test_recorder_implements_the_framework_protocol(broadcaster: EventBroadcaster) -> None:
    recorder: EventRecorder = broadcaster.new_recorder("netsched")
    assert isinstance(recorder, KubeEventRecorder)


def test_event_is_written_as_events_k8s_io(broadcaster: EventBroadcaster, sink: RecordingSink) -> None:
    broadcaster.new_recorder("netsched").event(
        POD, "Normal", "Scheduled", "Binding", "Successfully assigned shop/web-1 to n1"
    )
    assert broadcaster.flush(2)
    [(api, ns, body)] = sink.created
    assert (api, ns) == (EVENTS_V1, "shop")
    assert body["metadata"]["name"].startswith("web-1.")
    assert body["metadata"]["namespace"] == "shop"
    assert body["eventTime"] == "2023-11-14T22:13:20.000000Z"
    assert body["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "shop",
        "name": "web-1",
        "uid": "uid-web-1",
    }
    assert {
        k: body[k] for k in ("reportingController", "reportingInstance", "reason", "action", "note", "type")
    } == {
        "reportingController": "netsched",
        "reportingInstance": "sched-0",
        "reason": "Scheduled",
        "action": "Binding",
        "note": "Successfully assigned shop/web-1 to n1",
        "type": "Normal",
    }
    assert broadcaster.written == 1


def test_repeats_become_a_series_count(
    broadcaster: EventBroadcaster, sink: RecordingSink, clock: FakeClock
) -> None:
    rec = broadcaster.new_recorder("netsched")
    for _ in range(3):
        rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available.")
        clock.step(5)
    assert broadcaster.flush(2)
    assert len(sink.created) == 1
    name = sink.created[0][2]["metadata"]["name"]
    # The first repeat is written at once, later ones on the next sweep (here: flush).
    assert [(p[2], p[3]["series"]["count"]) for p in sink.patched] == [(name, 2), (name, 3)]
    assert sink.patched[-1][3]["series"]["lastObservedTime"] == "2023-11-14T22:13:30.000000Z"
    assert broadcaster.deduplicated == 2


def test_different_messages_and_old_repeats_make_new_events(
    broadcaster: EventBroadcaster, sink: RecordingSink, clock: FakeClock
) -> None:
    rec = broadcaster.new_recorder("netsched")
    rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available.")
    rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes are available.")
    clock.step(601)  # past the 10 minute de-duplication window
    rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available.")
    assert broadcaster.flush(2)
    assert len(sink.created) == 3
    assert len({c[2]["metadata"]["name"] for c in sink.created}) == 3
    assert sink.patched == []


def test_profiles_get_their_own_reporting_controller(
    broadcaster: EventBroadcaster, sink: RecordingSink
) -> None:
    broadcaster.new_recorder("a-scheduler").event(POD, "Normal", "Scheduled", "Binding", "m")
    broadcaster.new_recorder("b-scheduler").event(POD, "Normal", "Scheduled", "Binding", "m")
    assert broadcaster.flush(2)
    assert [c[2]["reportingController"] for c in sink.created] == ["a-scheduler", "b-scheduler"]


def test_falls_back_to_core_v1_when_events_k8s_io_is_not_served(
    broadcaster: EventBroadcaster, sink: RecordingSink
) -> None:
    sink.fail_create[EVENTS_V1] = NotFound(
        404, "NotFound", "the server could not find the requested resource"
    )
    rec = broadcaster.new_recorder("netsched")
    rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "no fit")
    rec.event(POD, "Warning", "FailedScheduling", "Scheduling", "no fit")
    assert broadcaster.flush(2)
    [(api, ns, body)] = sink.created
    assert api == CORE_V1
    assert body["source"] == {"component": "netsched"}
    assert body["involvedObject"]["name"] == "web-1"
    assert (body["reason"], body["message"], body["type"], body["count"]) == (
        "FailedScheduling",
        "no fit",
        "Warning",
        1,
    )
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2023-11-14T22:13:20Z"
    assert sink.patched[0][0] == CORE_V1
    assert sink.patched[0][3]["count"] == 2
    assert broadcaster.api == CORE_V1


def test_a_missing_namespace_does_not_switch_api(broadcaster: EventBroadcaster, sink: RecordingSink) -> None:
    sink.fail_create[EVENTS_V1] = NotFound(
        404, "NotFound", 'namespaces "shop" not found', details={"kind": "namespaces"}
    )
    broadcaster.new_recorder("netsched").event(POD, "Normal", "Scheduled", "Binding", "m")
    assert broadcaster.flush(2)
    assert broadcaster.api == EVENTS_V1
    assert broadcaster.failed == 1


def test_failures_are_warned_once_per_kind_and_never_raised(
    broadcaster: EventBroadcaster, sink: RecordingSink, caplog: pytest.LogCaptureFixture
) -> None:
    # A permanent failure: transient ones (5xx) are retried until they succeed (test_kube_events_retry.py).
    sink.fail_create[EVENTS_V1] = Forbidden(403, "Forbidden", "events is forbidden")
    rec = broadcaster.new_recorder("netsched")
    with caplog.at_level(logging.DEBUG, logger="netsched.kube.events"):
        for i in range(3):
            rec.event(POD, "Normal", "Scheduled", "Binding", f"m{i}")
        assert broadcaster.flush(2)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "Cannot write event" in warnings[0].getMessage()
    assert broadcaster.failed == 3


def test_notes_are_truncated_to_1024_bytes(broadcaster: EventBroadcaster, sink: RecordingSink) -> None:
    broadcaster.new_recorder("netsched").event(POD, "Warning", "FailedScheduling", "Scheduling", "é" * 2000)
    assert broadcaster.flush(2)
    note = sink.created[0][2]["note"]
    assert len(note.encode()) <= 1024
    assert note == "é" * 512


def test_a_full_queue_drops_instead_of_blocking(sink: RecordingSink, clock: FakeClock) -> None:
    sink.gate = threading.Event()  # the writer is stuck on the first event
    b = EventBroadcaster(sink, instance="x", clock=clock, queue_size=2)
    try:
        rec = b.new_recorder("netsched")
        # The writer takes the first event and is stuck writing it before the rest arrive: were
        # they sent at once, it could take several into one batch while they arrive and fewer
        # than 7 would be dropped (seen on a loaded machine).
        rec.event(POD, "Normal", "Scheduled", "Binding", "m0")
        assert sink.entered.wait(10), "the writer never took the first event"
        for i in range(1, 10):
            rec.event(POD, "Normal", "Scheduled", "Binding", f"m{i}")  # returns at once
        assert b.dropped >= 7
    finally:
        sink.gate.set()
        b.stop()
    assert len(sink.created) + b.dropped == 10


def test_events_after_stop_are_dropped_quietly(sink: RecordingSink, clock: FakeClock) -> None:
    b = EventBroadcaster(sink, instance="x", clock=clock)
    rec = b.new_recorder("netsched")
    rec.event(POD, "Normal", "Scheduled", "Binding", "before")
    b.stop()
    rec.event(POD, "Normal", "Scheduled", "Binding", "after")
    assert [c[2]["note"] for c in sink.created] == ["before"]
    assert b.dropped == 1
    assert b.flush(0.1)  # nothing left to write
