"""KubeAPI writes and reads over real HTTP against the fake API server, with injected faults."""

from __future__ import annotations

import pytest

from netsched.framework.parse import parse_pod
from netsched.framework.types import PodInfo
from netsched.kube import (
    NODES,
    PODS,
    Conflict,
    KubeAPI,
    KubeClient,
    NotFound,
)
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer, RecordedRequest

pytestmark = pytest.mark.integration


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(client: KubeClient, sleeps: list[float]) -> KubeClient:
    client.retrying = client.retrying.copy(sleep=sleeps.append)  # record waits instead of sleeping
    return client


def pending_pod(server: FakeAPIServer, name: str = "web") -> PodInfo:
    return parse_pod(server.create("pods", make_pod(name).obj()))


def refreshed(server: FakeAPIServer, pod: PodInfo) -> PodInfo:
    return parse_pod(server.get("pods", pod.name, pod.namespace))


def test_bind_then_a_second_bind_conflicts(server: FakeAPIServer, api: KubeAPI) -> None:
    pod = pending_pod(server)
    api.bind(pod, "n1")
    assert server.get("pods", "web")["spec"]["nodeName"] == "n1"
    with pytest.raises(Conflict):
        api.bind(pod, "n2")
    assert RecordedRequest("create", "", "pods", "binding", "default") in server.requests


def test_bind_of_a_missing_pod_is_not_found(api: KubeAPI) -> None:
    with pytest.raises(NotFound):
        api.bind(make_pod("ghost").info(), "n1")


def test_503_is_retried_until_it_succeeds(server: FakeAPIServer, api: KubeAPI, sleeps: list[float]) -> None:
    pod = pending_pod(server)
    fault = server.inject_fault("POST", r"/pods/web/binding", status=503, count=2)
    api.bind(pod, "n1")
    assert fault.hits == 2
    assert len(sleeps) == 2
    assert server.get("pods", "web")["spec"]["nodeName"] == "n1"


def test_429_waits_at_least_retry_after(server: FakeAPIServer, api: KubeAPI, sleeps: list[float]) -> None:
    server.create("nodes", make_node("n1").obj())
    server.inject_fault("GET", r"/api/v1/nodes/n1$", status=429)
    assert api.get_node("n1")["metadata"]["name"] == "n1"
    assert sleeps == [1.0]  # the fake sends Retry-After: 1


def test_a_connection_reset_is_retried(server: FakeAPIServer, api: KubeAPI) -> None:
    server.create("nodes", make_node("n1").obj())
    fault = server.inject_fault("GET", r"/api/v1/nodes", reset=True)
    assert [n["metadata"]["name"] for n in api.list_raw(NODES).items] == ["n1"]
    assert fault.hits == 1


def test_delete_pod_and_deleting_again_is_fine(server: FakeAPIServer, api: KubeAPI) -> None:
    pod = pending_pod(server, "victim")
    api.delete_pod(pod, grace_period_seconds=0)
    assert server.list("pods") == []
    api.delete_pod(pod)


def test_nominated_node_name_set_and_cleared(server: FakeAPIServer, api: KubeAPI) -> None:
    pod = pending_pod(server)
    api.set_nominated_node_name(pod, "n2")
    assert server.get("pods", "web")["status"]["nominatedNodeName"] == "n2"
    api.set_nominated_node_name(pod, "")
    assert "nominatedNodeName" not in server.get("pods", "web")["status"]
    assert RecordedRequest("patch", "", "pods", "status", "default") in server.requests


def test_pod_condition_is_patched_once(server: FakeAPIServer, api: KubeAPI) -> None:
    pod = pending_pod(server)
    condition = {
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes are available: 2 Insufficient cpu.",
    }
    api.update_pod_condition(pod, condition, nominated_node_name="n1")
    status = server.get("pods", "web")["status"]
    [cond] = [c for c in status["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Unschedulable",
        condition["message"],
    )
    assert cond["lastTransitionTime"]
    assert status["nominatedNodeName"] == "n1"
    server.clear_requests()
    api.update_pod_condition(refreshed(server, pod), condition, nominated_node_name="n1")
    assert server.requests == []


def test_annotations_are_added_and_removed(server: FakeAPIServer, api: KubeAPI) -> None:
    pod = pending_pod(server)
    api.patch_pod_annotations(pod, {"netsched.io/explain": "n1=87", "other": "x"})
    api.patch_pod_annotations(pod, {"other": None})
    assert server.get("pods", "web")["metadata"]["annotations"] == {"netsched.io/explain": "n1=87"}


def test_reads(server: FakeAPIServer, api: KubeAPI) -> None:
    server.create("nodes", make_node("n1").label("zone", "a").obj())
    server.create("nodes", make_node("n2").obj())
    server.create("pods", make_pod("bound").node("n1").obj())
    server.create("pods", make_pod("pending").obj())
    assert api.get_node("n1")["metadata"]["labels"]["zone"] == "a"
    nodes = api.list_raw(NODES)
    assert [n["metadata"]["name"] for n in nodes.items] == ["n1", "n2"]
    assert nodes.resource_version == str(server.resource_version)
    assert [n["metadata"]["name"] for n in api.list_raw(NODES.where(label_selector="zone=a")).items] == ["n1"]
    unassigned = api.list_raw(PODS.where(field_selector="spec.nodeName="))
    assert [p["metadata"]["name"] for p in unassigned.items] == ["pending"]
    with pytest.raises(NotFound):
        api.get_node("nope")


def test_patch_object_merges_into_any_kind_and_its_status(server: FakeAPIServer, api: KubeAPI) -> None:
    from netsched.kube.resources import NAMESPACES

    server.create("namespaces", {"metadata": {"name": "team-a", "labels": {"env": "dev"}}})
    out = api.patch_object(NAMESPACES, "", "team-a", {"metadata": {"labels": {"env": "prod", "x": "1"}}})
    assert out["metadata"]["labels"] == {"env": "prod", "x": "1"}
    assert server.get("namespaces", "team-a")["metadata"]["labels"]["env"] == "prod"
    pod = pending_pod(server)
    api.patch_object(
        PODS, pod.namespace, pod.name, {"status": {"nominatedNodeName": "n1"}}, subresource="status"
    )
    assert refreshed(server, pod).nominated_node_name == "n1"
    assert RecordedRequest("patch", "", "pods", "status", "default") in server.requests


def test_patch_object_with_a_stale_resource_version_is_a_conflict(
    server: FakeAPIServer, api: KubeAPI
) -> None:
    from netsched.kube.resources import NAMESPACES

    server.create("namespaces", {"metadata": {"name": "team-a"}})
    stale = server.get("namespaces", "team-a")["metadata"]["resourceVersion"]
    api.patch_object(NAMESPACES, "", "team-a", {"metadata": {"labels": {"a": "1"}}})
    with pytest.raises(Conflict):
        api.patch_object(
            NAMESPACES, "", "team-a", {"metadata": {"resourceVersion": stale, "labels": {"a": "2"}}}
        )
    with pytest.raises(NotFound):
        api.patch_object(NAMESPACES, "", "missing", {"metadata": {"labels": {"a": "1"}}})
