"""Events written over real HTTP: events.k8s.io/v1, series counts, and the core/v1 fallback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from netsched.framework.parse import parse_pod
from netsched.kube import EventBroadcaster, KubeClient, new_event_broadcaster
from netsched.testing.builders import make_pod
from netsched.testing.fakeapi import FakeAPIServer, RecordedRequest

pytestmark = pytest.mark.integration


@pytest.fixture
def broadcaster(client: KubeClient) -> Iterator[EventBroadcaster]:
    b = new_event_broadcaster(client, instance="netsched-0")
    yield b
    b.stop()


def test_events_are_written_to_events_k8s_io(server: FakeAPIServer, broadcaster: EventBroadcaster) -> None:
    pod = parse_pod(server.create("pods", make_pod("web").namespace("shop").obj()))
    recorder = broadcaster.new_recorder("netsched")
    recorder.event(pod, "Normal", "Scheduled", "Binding", "Successfully assigned shop/web to n1")
    for _ in range(3):
        recorder.event(
            pod, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: 1 Insufficient cpu."
        )
    assert broadcaster.flush(2)

    events = {e["reason"]: e for e in server.list("events.k8s.io/events", namespace="shop")}
    assert set(events) == {"Scheduled", "FailedScheduling"}
    scheduled = events["Scheduled"]
    assert scheduled["regarding"]["uid"] == pod.uid
    assert (scheduled["reportingController"], scheduled["reportingInstance"]) == ("netsched", "netsched-0")
    assert scheduled["note"] == "Successfully assigned shop/web to n1"
    assert scheduled["type"] == "Normal"
    assert scheduled["eventTime"]
    assert events["FailedScheduling"]["series"]["count"] == 3
    assert server.list("events") == []
    assert RecordedRequest("create", "events.k8s.io", "events", "", "shop") in server.requests


def test_falls_back_to_core_events_when_events_k8s_io_is_missing(
    server: FakeAPIServer, broadcaster: EventBroadcaster
) -> None:
    server.inject_fault("POST", r"^/apis/events\.k8s\.io/", status=404, count=-1)
    pod = parse_pod(server.create("pods", make_pod("web").obj()))
    broadcaster.new_recorder("my-scheduler").event(
        pod, "Warning", "FailedScheduling", "Scheduling", "no nodes"
    )
    assert broadcaster.flush(2)
    [event] = server.list("events")
    assert event["source"]["component"] == "my-scheduler"
    assert event["involvedObject"]["name"] == "web"
    assert (event["reason"], event["message"], event["count"]) == ("FailedScheduling", "no nodes", 1)
    assert server.list("events.k8s.io/events") == []
