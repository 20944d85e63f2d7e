"""The fake Kubernetes API server, driven over real HTTP through the official client.

Every other integration test trusts this fake to behave like kube-apiserver on
the wire; these tests pin the behaviours netsched depends on.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from netsched.testing.fakeapi import FakeAPIServer, RecordedRequest, StatusError
from netsched.testing.kustomize import load_kustomization

pytestmark = pytest.mark.integration

NS = "default"
REPO = Path(__file__).resolve().parents[2]


# --- fixtures and helpers ------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(bookmark_interval=0.2, watch_timeout=5.0) as srv:
        yield srv


@pytest.fixture
def api_client(server: FakeAPIServer, tmp_path: Path) -> Iterator[client.ApiClient]:
    cfg = client.Configuration()
    config.load_kube_config(
        config_file=str(server.write_kubeconfig(tmp_path / "kubeconfig")), client_configuration=cfg
    )
    with client.ApiClient(cfg) as api:
        yield api


@pytest.fixture
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


def pod(
    name: str, labels: dict[str, str] | None = None, node: str | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "pause"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "status": {"allocatable": {"cpu": "4"}}}


def bind_body(pod_name: str, node_name: str) -> dict[str, Any]:
    return {"metadata": {"name": pod_name}, "target": {"kind": "Node", "name": node_name}}


def error_body(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def names(resp: Any) -> list[str]:
    return sorted(item["metadata"]["name"] for item in json.loads(resp.data)["items"])


def read_events(resp: Any, limit: int = 1000) -> list[dict[str, Any]]:
    """Read newline-delimited watch events until `limit` or the end of the stream."""
    events: list[dict[str, Any]] = []
    buffer = b""
    for chunk in resp.stream():
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                events.append(json.loads(line))
            if len(events) >= limit:
                # close(), not release_conn(): an unfinished stream must not go back to the pool.
                resp.close()
                return events
    return events


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def watch_pods(core: client.CoreV1Api, rv: str, timeout: int = 1, **kwargs: Any) -> Any:
    return core.list_namespaced_pod(
        NS, watch=True, resource_version=rv, timeout_seconds=timeout, _preload_content=False, **kwargs
    )


# --- objects, lists, selectors -------------------------------------------------------


def test_create_list_get_nodes_and_pods(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    created = core.create_node(node("n1", {"zone": "a"}))
    core.create_node(node("n2"))
    p = core.create_namespaced_pod(NS, pod("p1"))

    assert created.metadata.uid and created.metadata.creation_timestamp is not None
    assert int(p.metadata.resource_version) > int(created.metadata.resource_version)
    assert p.metadata.namespace == NS and p.status.phase == "Pending"
    assert p.spec.scheduler_name == "default-scheduler"
    assert [n.metadata.name for n in core.list_node().items] == ["n1", "n2"]
    assert core.read_node("n1").metadata.labels == {"zone": "a"}
    assert core.read_node("n1").status.allocatable == {"cpu": "4"}

    raw = json.loads(core.list_namespaced_pod(NS, _preload_content=False).data)
    assert raw["kind"] == "PodList" and raw["apiVersion"] == "v1"
    assert raw["metadata"]["resourceVersion"] == str(server.resource_version)
    assert raw["items"][0]["kind"] == "Pod" and raw["items"][0]["apiVersion"] == "v1"
    assert [ns.metadata.name for ns in core.list_namespace().items] == [NS]  # created on demand


def test_not_found_and_already_exists_are_status_objects(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("p1"))
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("nope", NS)
    assert missing.value.status == 404
    assert error_body(missing.value) | {"details": None} == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "code": 404,
        "details": None,
    }
    with pytest.raises(ApiException) as dup:
        core.create_namespaced_pod(NS, pod("p1"))
    assert dup.value.status == 409 and error_body(dup.value)["reason"] == "AlreadyExists"


def test_label_selectors(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("web1", {"app": "web", "tier": "front"}))
    server.create("pods", pod("web2", {"app": "web"}))
    server.create("pods", pod("db", {"app": "db", "tier": "back"}))
    server.create("pods", pod("bare"))

    def select(selector: str) -> list[str]:
        return names(core.list_namespaced_pod(NS, label_selector=selector, _preload_content=False))

    assert select("app=web") == ["web1", "web2"]
    assert select("app==web,tier=front") == ["web1"]
    assert select("app!=web") == ["bare", "db"]  # != also matches a missing key
    assert select("app in (db, web)") == ["db", "web1", "web2"]
    assert select("tier notin (front),app") == ["db", "web2"]
    assert select("tier") == ["db", "web1"]
    assert select("!tier") == ["bare", "web2"]
    with pytest.raises(ApiException) as bad:
        select("app in (web")
    assert bad.value.status == 400 and error_body(bad.value)["reason"] == "BadRequest"


def test_field_selectors_and_cluster_wide_lists(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("a", node="n1"))
    server.create("pods", pod("b", schedulerName="netsched"))
    server.create("pods", pod("c"), namespace="other")
    server.patch("pods", "a", {"status": {"phase": "Running"}})

    def select(selector: str) -> list[str]:
        return names(core.list_pod_for_all_namespaces(field_selector=selector, _preload_content=False))

    assert select("spec.nodeName=") == ["b", "c"]
    assert select("spec.nodeName!=") == ["a"]
    assert select("spec.schedulerName=netsched") == ["b"]
    assert select("status.phase==Running") == ["a"]
    assert select("metadata.namespace=other") == ["c"]
    assert select("metadata.name!=a,spec.nodeName=") == ["b", "c"]
    # limit/continue are accepted and ignored: everything comes back in one page.
    assert names(core.list_pod_for_all_namespaces(limit=1, _continue="x", _preload_content=False)) == [
        "a",
        "b",
        "c",
    ]


# --- watches ----------------------------------------------------------------------


def test_watch_replays_after_resource_version_then_streams_live(
    server: FakeAPIServer, core: client.CoreV1Api
) -> None:
    server.create("pods", pod("before"))
    rv = json.loads(core.list_namespaced_pod(NS, _preload_content=False).data)["metadata"]["resourceVersion"]
    server.create("pods", pod("p1"))
    server.create("pods", pod("x"), namespace="elsewhere")  # other namespace: filtered out
    resp = watch_pods(core, rv)
    server.patch("pods", "p1", {"metadata": {"labels": {"a": "b"}}})
    server.delete("pods", "p1")

    events = read_events(resp)

    assert summary(events) == [("ADDED", "p1"), ("MODIFIED", "p1"), ("DELETED", "p1")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[-1] == server.resource_version
    assert events[0]["object"]["kind"] == "Pod"


def test_watch_from_zero_sends_nothing_historical(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("old"))
    resp = watch_pods(core, "0")
    server.create("pods", pod("new"))
    assert summary(read_events(resp)) == [("ADDED", "new")]


def test_watch_with_compacted_resource_version_gets_410(
    server: FakeAPIServer, core: client.CoreV1Api
) -> None:
    server.create("pods", pod("p1"))
    stale = str(server.resource_version)
    server.create("pods", pod("p2"))
    server.compact()

    events = read_events(watch_pods(core, stale))

    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert "too old resource version" in status["message"]
    # The current resourceVersion is still fine after compaction.
    current = str(server.resource_version)
    server.create("pods", pod("p3"))
    assert summary(read_events(watch_pods(core, current))) == [("ADDED", "p3")]


def test_watch_history_is_bounded(tmp_path: Path) -> None:
    with FakeAPIServer(history_size=2) as small:
        cfg = client.Configuration()
        config.load_kube_config(
            config_file=str(small.write_kubeconfig(tmp_path / "kc")), client_configuration=cfg
        )
        api = client.CoreV1Api(client.ApiClient(cfg))
        for i in range(6):
            small.create("pods", pod(f"p{i}"))
        assert read_events(watch_pods(api, "1"))[0]["object"]["code"] == 410
        recent = str(small.resource_version - 1)
        assert summary(read_events(watch_pods(api, recent))) == [("ADDED", "p5")]


def test_bookmarks_while_idle(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("p1"))
    resp = watch_pods(core, str(server.resource_version), allow_watch_bookmarks=True)
    events = read_events(resp, limit=2)
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK"]
    assert events[0]["object"] == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(server.resource_version)},
    }


def test_no_bookmarks_unless_asked_and_stream_ends_at_timeout(
    server: FakeAPIServer, core: client.CoreV1Api
) -> None:
    resp = watch_pods(core, str(server.resource_version), timeout=1)
    assert read_events(resp) == []  # returns because the server ended the chunked stream
    assert core.list_node().items == []  # and the kept-alive connection is still usable


def test_selector_watch_sends_transitions(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    rv = str(server.resource_version)
    resp = watch_pods(core, rv, label_selector="app=web")
    server.create("pods", pod("p1", {"app": "web"}))
    server.create("pods", pod("other", {"app": "db"}))
    server.patch("pods", "p1", {"metadata": {"annotations": {"x": "1"}}})
    server.patch("pods", "p1", {"metadata": {"labels": {"app": "db"}}})
    server.patch("pods", "p1", {"metadata": {"labels": {"app": "web"}}})
    server.delete("pods", "other")

    assert summary(read_events(resp)) == [
        ("ADDED", "p1"),
        ("MODIFIED", "p1"),
        ("DELETED", "p1"),
        ("ADDED", "p1"),
    ]


def test_unassigned_pod_watch_sees_binding_as_deleted(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("p1"))
    resp = watch_pods(core, str(server.resource_version), field_selector="spec.nodeName=")
    server.bind(NS, "p1", "n1")
    events = read_events(resp)
    assert summary(events) == [("DELETED", "p1")]
    assert events[0]["object"]["spec"]["nodeName"] == "n1"


def test_stop_ends_open_watches(core: client.CoreV1Api, server: FakeAPIServer) -> None:
    resp = watch_pods(core, "0", timeout=30)
    server.stop()
    # stop() returned once the watch had written its final chunk, not when its wait for open
    # watches gave up (the watch's own 30 s timeout is far off)...
    assert server.open_watches == 0
    # ...so the stream ends cleanly: one cut under its final chunk raises ProtocolError here.
    assert read_events(resp) == []


# --- pods/binding, status, conflicts -------------------------------------------------


def test_binding_sets_node_once(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("p1"))
    resp = watch_pods(core, str(server.resource_version))

    first = core.create_namespaced_pod_binding("p1", NS, bind_body("p1", "n1"), _preload_content=False)
    assert first.status == 201
    assert json.loads(first.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    with pytest.raises(ApiException) as again:
        core.create_namespaced_pod_binding("p1", NS, bind_body("p1", "n2"), _preload_content=False)
    assert again.value.status == 409
    assert 'pod default/p1 is already assigned to node "n1"' in error_body(again.value)["message"]
    with pytest.raises(ApiException) as missing:
        core.create_namespaced_pod_binding("ghost", NS, bind_body("ghost", "n1"), _preload_content=False)
    assert missing.value.status == 404

    bound = server.get("pods", "p1")
    assert bound["spec"]["nodeName"] == "n1"
    assert [c["type"] for c in bound["status"]["conditions"]] == ["PodScheduled"]
    assert summary(read_events(resp)) == [("MODIFIED", "p1")]


def test_legacy_bindings_resource(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("p1"))
    resp = core.create_namespaced_binding(NS, bind_body("p1", "n1"), _preload_content=False)
    assert resp.status == 201 and server.get("pods", "p1")["spec"]["nodeName"] == "n1"


def test_concurrent_bindings_succeed_exactly_once(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    for i in range(20):
        server.create("pods", pod(f"p{i}"))
    outcomes: list[int] = []
    lock = threading.Lock()

    def bind_all(node_name: str) -> None:
        for i in range(20):
            try:
                status = core.create_namespaced_pod_binding(
                    f"p{i}", NS, bind_body(f"p{i}", node_name), _preload_content=False
                ).status
            except ApiException as e:
                status = e.status
            with lock:
                outcomes.append(status)

    threads = [threading.Thread(target=bind_all, args=(f"n{t}",)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [201] * 20 + [409] * 40


def test_stale_update_conflicts(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("p1"))
    seen = core.read_namespaced_pod("p1", NS)
    seen.metadata.labels = {"v": "1"}
    updated = core.replace_namespaced_pod("p1", NS, seen)
    assert int(updated.metadata.resource_version) > int(seen.metadata.resource_version)
    seen.metadata.labels = {"v": "2"}
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_pod("p1", NS, seen)
    assert stale.value.status == 409 and error_body(stale.value)["reason"] == "Conflict"
    assert "the object has been modified" in error_body(stale.value)["message"]


def test_pod_status_patch_merges_conditions_by_type(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    created = server.create("pods", pod("p1"))
    server.patch("pods", "p1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes",
    }

    core.patch_namespaced_pod_status("p1", NS, {"status": {"conditions": [unschedulable]}})
    core.patch_namespaced_pod_status(
        "p1", NS, {"status": {"conditions": [{**unschedulable, "message": "0/4"}]}}
    )

    got = core.read_namespaced_pod_status("p1", NS)
    assert [(c.type, c.status, c.message) for c in got.status.conditions] == [
        ("Ready", "False", None),
        ("PodScheduled", "False", "0/4"),
    ]
    assert got.status.phase == "Pending"
    assert got.spec.scheduler_name == created["spec"]["schedulerName"]


def test_status_and_main_resource_writes_stay_apart(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("p1"))
    # A status write cannot change spec or labels ...
    core.patch_namespaced_pod_status(
        "p1", NS, {"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Running"}}
    )
    # ... and a main-resource write cannot change status.
    core.patch_namespaced_pod("p1", NS, {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Failed"}})
    got = server.get("pods", "p1")
    assert got["status"]["phase"] == "Running" and got["metadata"]["labels"] == {"a": "b"}

    current = core.read_namespaced_pod_status("p1", NS)
    current.status.phase = "Succeeded"
    assert core.replace_namespaced_pod_status("p1", NS, current).status.phase == "Succeeded"
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_pod_status("p1", NS, current)
    assert stale.value.status == 409


def test_json_patch_and_merge_patch(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("nodes", node("n1", {"a": "1", "b": "2"}))
    ops = [
        {"op": "add", "path": "/metadata/labels/c", "value": "3"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "10"},
        {"op": "remove", "path": "/metadata/labels/b"},
        {"op": "add", "path": "/spec", "value": {"taints": []}},
        {"op": "add", "path": "/spec/taints/-", "value": {"key": "k", "effect": "NoSchedule"}},
    ]
    got = core.patch_node("n1", ops)
    assert got.metadata.labels == {"a": "10", "c": "3"} and got.spec.taints[0].key == "k"

    merged = core.patch_node(
        "n1", {"metadata": {"labels": {"a": None, "d": "4"}}}, _content_type="application/merge-patch+json"
    )
    assert merged.metadata.labels == {"c": "3", "d": "4"}

    with pytest.raises(ApiException) as bad:
        core.patch_node("n1", [{"op": "remove", "path": "/metadata/labels/missing"}])
    assert bad.value.status == 422


def test_delete_pod_and_namespace(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.create("pods", pod("p1"), namespace="team")
    server.create("pods", pod("p2"), namespace="team")
    rv = str(server.resource_version)
    resp = core.list_pod_for_all_namespaces(
        watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False
    )

    deleted = core.delete_namespaced_pod("p1", "team", grace_period_seconds=30)
    assert deleted.metadata.name == "p1"
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_pod("p1", "team")
    assert gone.value.status == 404
    core.delete_namespace("team")

    assert summary(read_events(resp)) == [("DELETED", "p1"), ("DELETED", "p2")]
    assert core.list_namespace().items == []


# --- other API groups ---------------------------------------------------------


def test_events_in_both_api_groups(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    events_v1 = client.EventsV1Api(api_client)
    involved = {"kind": "Pod", "name": "p1", "namespace": NS}
    core.create_namespaced_event(
        NS, {"metadata": {"name": "e1"}, "involvedObject": involved, "reason": "Scheduled", "message": "ok"}
    )
    events_v1.create_namespaced_event(
        NS,
        {
            "metadata": {"name": "e2"},
            "regarding": involved,
            "reason": "Scheduled",
            "action": "Binding",
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "netsched",
            "reportingInstance": "netsched-1",
            "type": "Normal",
        },
    )
    assert [e.metadata.name for e in core.list_event_for_all_namespaces().items] == ["e1"]
    assert [e.metadata.name for e in events_v1.list_namespaced_event(NS).items] == ["e2"]
    raw = json.loads(events_v1.list_event_for_all_namespaces(_preload_content=False).data)
    assert raw["apiVersion"] == "events.k8s.io/v1" and raw["items"][0]["kind"] == "Event"


def test_lease_stale_update_conflicts(api_client: client.ApiClient) -> None:
    leases = client.CoordinationV1Api(api_client)
    lease = leases.create_namespaced_lease(
        "kube-system",
        {"metadata": {"name": "netsched"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
    )
    lease.spec.holder_identity = "b"
    renewed = leases.replace_namespaced_lease("netsched", "kube-system", lease)
    assert renewed.spec.holder_identity == "b"
    lease.spec.holder_identity = "c"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as stale:
        leases.replace_namespaced_lease("netsched", "kube-system", lease)
    assert stale.value.status == 409
    assert 'leases.coordination.k8s.io "netsched"' in error_body(stale.value)["message"]
    assert leases.read_namespaced_lease("netsched", "kube-system").spec.holder_identity == "b"


def test_pod_disruption_budgets(api_client: client.ApiClient) -> None:
    policy = client.PolicyV1Api(api_client)
    spec = {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    policy.create_namespaced_pod_disruption_budget(NS, {"metadata": {"name": "web"}, "spec": spec})
    assert policy.read_namespaced_pod_disruption_budget("web", NS).spec.min_available == 1
    assert [p.metadata.name for p in policy.list_pod_disruption_budget_for_all_namespaces().items] == ["web"]
    resp = policy.list_namespaced_pod_disruption_budget(
        NS, watch=True, resource_version="1", timeout_seconds=1, _preload_content=False
    )
    assert summary(read_events(resp)) == [("ADDED", "web")]


# --- faults, recording, misc ------------------------------------------------------


def test_injected_status_faults(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    server.inject_fault("GET", r"/api/v1/nodes", status=503)
    server.inject_fault("POST", r"/namespaces/default/pods$", status=429, count=2)

    with pytest.raises(ApiException) as unavailable:
        core.list_node()
    assert unavailable.value.status == 503 and error_body(unavailable.value)["reason"] == "ServiceUnavailable"
    assert core.list_node().items == []  # count=1: used up
    for _ in range(2):
        with pytest.raises(ApiException) as throttled:
            core.create_namespaced_pod(NS, pod("p1"))
        assert throttled.value.status == 429 and throttled.value.headers["Retry-After"] == "1"
        assert error_body(throttled.value)["reason"] == "TooManyRequests"
    assert core.create_namespaced_pod(NS, pod("p1")).metadata.name == "p1"


def test_injected_reset_and_delay(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    reset = server.inject_fault("POST", r"/pods", reset=True)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        core.create_namespaced_pod(NS, pod("p1"))
    assert reset.hits == 1 and server.list("pods") == []

    # urllib3 retries an idempotent GET once the connection drops, so the caller never notices.
    server.clear_requests()
    server.inject_fault("GET", r"/api/v1/nodes", reset=True)
    assert core.list_node().items == []
    assert [r.verb for r in server.requests] == ["list", "list"]

    slow = server.inject_fault("*", r"/api/v1/nodes", status=None, delay=0.05)
    assert core.list_node().items == [] and slow.hits == 1


def test_requests_are_recorded_as_rbac_tuples(server: FakeAPIServer, api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    server.create("pods", pod("p1"))
    core.list_node()
    core.read_namespaced_pod("p1", NS)
    core.list_pod_for_all_namespaces(watch=True, timeout_seconds=1, _preload_content=False).close()
    core.create_namespaced_pod_binding("p1", NS, bind_body("p1", "n1"), _preload_content=False)
    core.patch_namespaced_pod_status("p1", NS, {"status": {"phase": "Running"}})
    core.replace_namespaced_pod("p1", NS, core.read_namespaced_pod("p1", NS))
    core.delete_namespaced_pod("p1", NS)
    client.EventsV1Api(api_client).list_namespaced_event("kube-system")
    client.CoordinationV1Api(api_client).create_namespaced_lease("kube-system", {"metadata": {"name": "l"}})

    assert server.requests == [
        RecordedRequest("list", "", "nodes", "", ""),
        RecordedRequest("get", "", "pods", "", NS),
        RecordedRequest("watch", "", "pods", "", ""),
        RecordedRequest("create", "", "pods", "binding", NS),
        RecordedRequest("patch", "", "pods", "status", NS),
        RecordedRequest("get", "", "pods", "", NS),
        RecordedRequest("update", "", "pods", "", NS),
        RecordedRequest("delete", "", "pods", "", NS),
        RecordedRequest("list", "events.k8s.io", "events", "", "kube-system"),
        RecordedRequest("create", "coordination.k8s.io", "leases", "", "kube-system"),
    ]


def test_hooks_are_copies_and_enforce_conflicts(server: FakeAPIServer) -> None:
    created = server.create("nodes", node("n1"))
    created["metadata"]["labels"]["mutated"] = "yes"
    assert server.get("nodes", "n1")["metadata"]["labels"] == {}

    server.update("nodes", {**created, "status": {"allocatable": {"cpu": "8"}}})
    assert server.get("nodes", "n1")["status"]["allocatable"] == {"cpu": "8"}  # hooks may set status
    with pytest.raises(StatusError) as stale:
        server.update("nodes", created)
    assert stale.value.code == 409

    lease = server.create("leases", {"metadata": {"name": "l"}}, namespace="kube-system")
    assert lease["apiVersion"] == "coordination.k8s.io/v1"
    assert server.get("coordination.k8s.io/leases", "l", "kube-system")["metadata"]["name"] == "l"
    assert server.list("events.k8s.io/events") == []
    with pytest.raises(KeyError):
        server.list("events.k8s.io")
    assert server.wait_for(lambda: server.list("nodes", label_selector="mutated=yes"), timeout=1)


def test_health_version_and_kubeconfig(server: FakeAPIServer, api_client: client.ApiClient) -> None:
    for path in ("/healthz", "/readyz", "/livez"):
        with urllib.request.urlopen(server.url + path, timeout=2) as resp:
            assert resp.read() == b"ok"
    assert client.VersionApi(api_client).get_code().major == "1"
    assert api_client.configuration.host == server.url


# --- CustomResourceDefinitions and discovery -----------------------------------------

AG = "appgroup.diktyo.x-k8s.io/appgroups"
AG_GROUP_VERSION = "/apis/appgroup.diktyo.x-k8s.io/v1alpha1"


def get(server: FakeAPIServer, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def served_names(server: FakeAPIServer, path: str) -> list[str]:
    code, body = get(server, path)
    assert code == 200 and body["kind"] == "APIResourceList", body
    return [r["name"] for r in body["resources"]]


def test_a_crd_kind_is_served_only_while_its_crd_exists(server: FakeAPIServer) -> None:
    collection = AG_GROUP_VERSION + "/namespaces/default/appgroups"
    assert get(server, AG_GROUP_VERSION)[0] == 404  # discovery: no such group/version
    assert get(server, collection)[0] == 404
    with pytest.raises(StatusError, match=r"create_crd\('appgroup.diktyo.x-k8s.io/appgroups'\)"):
        server.create(AG, {"metadata": {"name": "shop"}})
    crd = server.create_crd(AG)
    assert crd["metadata"]["name"] == "appgroups.appgroup.diktyo.x-k8s.io"
    assert served_names(server, AG_GROUP_VERSION) == ["appgroups", "appgroups/status"]
    server.create(AG, {"metadata": {"name": "shop"}})
    code, body = get(server, collection)
    assert code == 200 and [o["metadata"]["name"] for o in body["items"]] == ["shop"]
    # A CRD whose version is no longer served, then none: kube stops serving it either way.
    versions = [{**crd["spec"]["versions"][0], "served": False}]
    server.patch(
        "apiextensions.k8s.io/customresourcedefinitions",
        crd["metadata"]["name"],
        {"spec": {"versions": versions}},
    )
    assert get(server, AG_GROUP_VERSION)[0] == 404 and get(server, collection)[0] == 404
    server.delete("apiextensions.k8s.io/customresourcedefinitions", crd["metadata"]["name"])
    assert get(server, collection)[0] == 404
    assert get(server, "/apis/scheduling.x-k8s.io/v1alpha1")[0] == 404  # the other CRD kind too


def test_a_crd_manifest_posted_over_http_serves_its_kind(server: FakeAPIServer) -> None:
    manifest = [
        o
        for o in load_kustomization(REPO / "deploy/optional/coscheduling")
        if o["kind"] == "CustomResourceDefinition"
    ]
    code, _, _ = post(server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", manifest[0])
    assert code == 201
    assert served_names(server, "/apis/scheduling.x-k8s.io/v1alpha1") == ["podgroups", "podgroups/status"]


def test_discovery_lists_the_built_in_kinds_of_a_group_version(server: FakeAPIServer) -> None:
    core = served_names(server, "/api/v1")
    assert {"pods", "pods/status", "nodes", "namespaces", "configmaps"} <= set(core)
    assert served_names(server, "/apis/coordination.k8s.io/v1") == ["leases"]
    assert get(server, "/apis/coordination.k8s.io/v2")[0] == 404


# --- pods/eviction (kube's eviction handler; the budget rules are tested in
# tests/unit/test_disruption_budgets.py, KubeAPI.evict in test_eviction_http.py) ----------------


def eviction(name: str, **delete_options: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": NS},
        "deleteOptions": delete_options,
    }


def post(server: FakeAPIServer, path: str, body: object) -> tuple[int, dict[str, str], dict[str, Any]]:
    request = urllib.request.Request(
        server.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def test_the_official_client_evicts(server: FakeAPIServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("p", node="n1"))
    resp = core.create_namespaced_pod_eviction(
        "p",
        NS,
        client.V1Eviction(metadata=client.V1ObjectMeta(name="p", namespace=NS)),
        _preload_content=False,
    )
    assert resp.status == 201
    assert json.loads(resp.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    assert server.list("pods") == []
    assert RecordedRequest("create", "", "pods", "eviction", NS) in server.requests


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "/api/v1/namespaces/default/pods/p/eviction",
            eviction("q"),
            "name in URL does not match name in Eviction object",
        ),
        (
            "/api/v1/namespaces/default/pods/p/eviction",
            {"kind": "Pod", "metadata": {"name": "p"}},
            "not a Eviction object",
        ),
        (
            "/api/v1/namespaces/default/pods/p/eviction?dryRun=All",
            eviction("p", dryRun=["Bogus"]),
            "Non-matching dry-run options in request and content: ['All'] and ['Bogus']",
        ),
        (
            "/api/v1/namespaces/default/pods/p/eviction",
            eviction("p", dryRun=["Bogus"]),
            "Invalid dry run value",
        ),
    ],
)
def test_a_malformed_eviction_is_a_400(server: FakeAPIServer, path: str, body: object, message: str) -> None:
    server.create("pods", pod("p", node="n1"))
    code, _, status = post(server, path, body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert message in status["message"]
    assert len(server.list("pods")) == 1


def test_a_budgets_retry_after_travels_as_a_header(server: FakeAPIServer) -> None:
    server.create("pods", {**pod("p", {"app": "web"}, node="n1"), "status": {"phase": "Running"}})
    budget = {
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "web"}}},
    }
    server.create("poddisruptionbudgets", budget)  # generation 1, never observed: no status
    code, headers, status = post(server, "/api/v1/namespaces/default/pods/p/eviction", eviction("p"))
    assert (code, headers.get("Retry-After"), status["details"]["retryAfterSeconds"]) == (429, "10", 10)
    server.patch(
        "poddisruptionbudgets", "web", {"status": {"observedGeneration": 1, "disruptionsAllowed": 0}}
    )
    code, headers, status = post(server, "/api/v1/namespaces/default/pods/p/eviction", eviction("p"))
    assert (code, "Retry-After" in headers, "retryAfterSeconds" in status["details"]) == (429, False, False)
    with pytest.raises(StatusError) as refused:
        server.evict(NS, "p")  # the hook answers as the request does
    assert refused.value.code == 429
    code, _, status = post(server, "/api/v1/namespaces/default/pods/p/eviction?dryRun=All", eviction("p"))
    assert code == 429


def test_only_create_is_served_on_eviction(server: FakeAPIServer) -> None:
    server.create("pods", pod("p"))
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(server.url + "/api/v1/namespaces/default/pods/p/eviction", timeout=5)
    assert e.value.code == 405
