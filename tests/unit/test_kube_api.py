"""KubeAPI request shapes and outcome handling, with the wire (the ApiClient's urllib3 pool) stubbed out."""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

import pytest
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from netsched.framework import ClusterAPI
from netsched.kube.api import MERGE_PATCH, STRATEGIC_MERGE_PATCH, KubeAPI, RawWatch
from netsched.kube.client import KubeClient
from netsched.kube.errors import Conflict, Forbidden, Gone, ServerError, TooManyRequests, Transient
from netsched.kube.resources import (
    ACTIVE_PODS_SELECTOR,
    APPGROUPS,
    NAMESPACES,
    NODES,
    PODDISRUPTIONBUDGETS,
    PODS,
    Resource,
)
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock


class FakeResponse:
    def __init__(self, status: int = 200, body: Any = None) -> None:
        self.status = status
        self.reason = ""
        self.headers: dict[str, str] = {}
        self.data = b"" if body is None else json.dumps(body).encode()

    def release_conn(self) -> None:
        pass


class Request(NamedTuple):
    method: str
    path: str
    query: dict[str, str]
    timeout: Any
    body: Any
    content_type: str | None
    headers: dict[str, str]


class Wire(ApiClient):  # type: ignore[misc]
    """The real ApiClient (configuration, default headers); its pool records each request and answers from a script."""

    def __init__(self) -> None:
        cfg = Configuration(host="https://example.invalid")
        cfg.api_key = {"authorization": "t0ken"}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        super().__init__(cfg)
        self.requests: list[Request] = []
        self.replies: list[Any] = []
        self.rest_client.pool_manager = self

    def request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        headers: Any = None,
        timeout: Any = None,
        **_: Any,
    ) -> Any:
        parts = urlsplit(url)
        headers = dict(headers or {})
        sent = None if body is None else json.loads(body)
        self.requests.append(
            Request(
                method,
                parts.path,
                dict(parse_qsl(parts.query)),
                timeout.total
                if timeout.total is not None
                else (timeout.connect_timeout, timeout.read_timeout),
                sent,
                headers.get("Content-Type"),
                headers,
            )
        )
        outcome = self.replies.pop(0) if self.replies else FakeResponse(200, {})
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def only(self, method: str, path: str) -> list[Request]:
        return [r for r in self.requests if (r.method, r.path) == (method, path)]


def status_exc(code: int, reason: str) -> ApiException:
    return ApiException(
        status=code, reason=reason, body=json.dumps({"kind": "Status", "code": code, "reason": reason})
    )


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
def api(wire: Wire) -> KubeAPI:
    client = KubeClient(wire, sleep=lambda _s: None)
    return KubeAPI(client, clock=FakeClock(wall_start=1_700_000_000.0))


def test_kube_api_is_a_cluster_api(api: KubeAPI) -> None:
    cluster_api: ClusterAPI = api
    assert cluster_api is api


def test_bind_posts_a_binding_with_the_pod_uid(api: KubeAPI, wire: Wire) -> None:
    pod = make_pod("web").namespace("team").uid("u-1").info()
    wire.replies.append(FakeResponse(201, {"kind": "Status", "code": 201}))
    api.bind(pod, "n1")
    [request] = wire.requests
    assert (request.method, request.path) == ("POST", "/api/v1/namespaces/team/pods/web/binding")
    assert request.body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web", "namespace": "team", "uid": "u-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    assert request.content_type == "application/json"
    # The lean path keeps the credentials and the client's own headers.
    assert request.headers["authorization"] == "Bearer t0ken"
    assert request.headers["Accept"] == "application/json"
    assert request.timeout == api.client.timeout


def test_bind_conflict_on_the_first_attempt_is_raised(api: KubeAPI, wire: Wire) -> None:
    wire.replies.append(status_exc(409, "Conflict"))
    with pytest.raises(Conflict):
        api.bind(make_pod("p").info(), "n1")
    assert [r.method for r in wire.requests] == ["POST"]  # no read of the pod


def test_bind_conflict_reply_from_the_server_is_raised(api: KubeAPI, wire: Wire) -> None:
    wire.replies.append(
        FakeResponse(409, {"kind": "Status", "code": 409, "reason": "Conflict", "message": "bound"})
    )
    with pytest.raises(Conflict, match="bound"):
        api.bind(make_pod("p").info(), "n1")
    assert len(wire.requests) == 1


def test_bind_conflict_after_an_unanswered_attempt_checks_who_bound_it(api: KubeAPI, wire: Wire) -> None:
    pod = make_pod("p").uid("u-p").info()
    mine = {"metadata": {"name": "p", "uid": "u-p"}, "spec": {"nodeName": "n1"}}
    wire.replies += [
        Transient(0, "ProtocolError", "reset"),
        status_exc(409, "Conflict"),
        FakeResponse(200, mine),
    ]
    api.bind(pod, "n1")  # our first attempt had gone through: success
    assert [(r.method, r.path) for r in wire.requests][-1] == ("GET", "/api/v1/namespaces/default/pods/p")

    other = {"metadata": {"name": "p", "uid": "u-p"}, "spec": {"nodeName": "n2"}}
    wire.replies += [
        Transient(0, "ProtocolError", "reset"),
        status_exc(409, "Conflict"),
        FakeResponse(200, other),
    ]
    with pytest.raises(Conflict):
        api.bind(pod, "n1")


def test_delete_pod_sends_uid_precondition_and_grace_period(api: KubeAPI, wire: Wire) -> None:
    api.delete_pod(make_pod("v").namespace("ns").uid("u-v").info(), grace_period_seconds=0)
    [request] = wire.requests
    assert (request.method, request.path) == ("DELETE", "/api/v1/namespaces/ns/pods/v")
    assert request.query == {"gracePeriodSeconds": "0"}
    assert request.body == {"preconditions": {"uid": "u-v"}}


@pytest.mark.parametrize(("code", "reason"), [(404, "NotFound"), (409, "Conflict")])
def test_delete_pod_already_gone_is_done(api: KubeAPI, wire: Wire, code: int, reason: str) -> None:
    wire.replies.append(status_exc(code, reason))
    api.delete_pod(make_pod("v").info())
    wire.replies.append(FakeResponse(code, {"kind": "Status", "code": code, "reason": reason}))
    api.delete_pod(make_pod("v").info())
    assert len(wire.requests) == 2


def status_patches(wire: Wire) -> list[Request]:
    return wire.only("PATCH", "/api/v1/namespaces/default/pods/p/status")


def test_nominated_node_name_is_a_merge_patch_and_empty_clears_it(api: KubeAPI, wire: Wire) -> None:
    pod = make_pod("p").info()
    api.set_nominated_node_name(pod, "n3")
    api.set_nominated_node_name(pod, "")
    bodies = [(r.body, r.content_type) for r in status_patches(wire)]
    assert bodies == [
        ({"status": {"nominatedNodeName": "n3"}}, MERGE_PATCH),
        ({"status": {"nominatedNodeName": None}}, MERGE_PATCH),
    ]


UNSCHEDULABLE = {"status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available."}


def test_update_pod_condition_patches_pod_scheduled(api: KubeAPI, wire: Wire) -> None:
    api.update_pod_condition(make_pod("p").info(), UNSCHEDULABLE)
    [request] = status_patches(wire)
    assert request.content_type == STRATEGIC_MERGE_PATCH
    assert request.body == {
        "status": {
            "conditions": [
                {"type": "PodScheduled", **UNSCHEDULABLE, "lastTransitionTime": "2023-11-14T22:13:20Z"}
            ]
        }
    }


def test_update_pod_condition_skips_an_unchanged_condition(api: KubeAPI, wire: Wire) -> None:
    existing = {"type": "PodScheduled", **UNSCHEDULABLE, "lastTransitionTime": "2020-01-01T00:00:00Z"}
    pod = make_pod("p").set("status.conditions", [existing]).info()
    api.update_pod_condition(pod, UNSCHEDULABLE)
    assert wire.requests == []


def test_update_pod_condition_keeps_transition_time_when_status_is_unchanged(
    api: KubeAPI, wire: Wire
) -> None:
    existing = {"type": "PodScheduled", **UNSCHEDULABLE, "lastTransitionTime": "2020-01-01T00:00:00Z"}
    pod = make_pod("p").set("status.conditions", [existing]).info()
    api.update_pod_condition(pod, {**UNSCHEDULABLE, "message": "0/4 nodes are available."})
    [request] = status_patches(wire)
    assert request.body["status"]["conditions"][0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"


def test_update_pod_condition_can_nominate_in_the_same_write(api: KubeAPI, wire: Wire) -> None:
    existing = {"type": "PodScheduled", **UNSCHEDULABLE}
    pod = make_pod("p").set("status.conditions", [existing]).info()
    api.update_pod_condition(pod, UNSCHEDULABLE, nominated_node_name="n2")
    [request] = status_patches(wire)
    assert request.body["status"]["nominatedNodeName"] == "n2"


def test_patch_pod_annotations_sets_and_removes(api: KubeAPI, wire: Wire) -> None:
    api.patch_pod_annotations(make_pod("p").info(), {"a": "1", "gone": None})
    [request] = wire.only("PATCH", "/api/v1/namespaces/default/pods/p")
    assert request.body == {"metadata": {"annotations": {"a": "1", "gone": None}}}
    assert request.content_type == MERGE_PATCH


def test_patch_object_merge_patches_any_kind_and_subresource(api: KubeAPI, wire: Wire) -> None:
    wire.replies.append(FakeResponse(200, {"status": {"phase": "Running"}}))
    groups = Resource("podgroups", group="scheduling.x-k8s.io", version="v1alpha1", namespaced=True)
    out = api.patch_object(groups, "team", "g", {"status": {"phase": "Running"}}, subresource="status")
    assert out == {"status": {"phase": "Running"}}
    [request] = wire.requests
    assert request.path == "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team/podgroups/g/status"
    assert (request.method, request.content_type) == ("PATCH", MERGE_PATCH)


def test_a_retry_after_header_is_kept_on_the_mapped_error(api: KubeAPI, wire: Wire) -> None:
    busy = FakeResponse(429, {"kind": "Status", "code": 429, "reason": "TooManyRequests"})
    busy.headers["Retry-After"] = "3"
    wire.replies.append(busy)
    with pytest.raises(TooManyRequests) as exc:
        api.list_raw(NODES, retry=False)
    assert exc.value.retry_after == 3.0


def test_list_follows_continue_tokens(api: KubeAPI, wire: Wire) -> None:
    wire.replies += [
        FakeResponse(200, {"metadata": {"resourceVersion": "10", "continue": "t1"}, "items": [{"n": 1}]}),
        FakeResponse(200, {"metadata": {"resourceVersion": "10"}, "items": [{"n": 2}]}),
    ]
    result = api.list_raw(PODS.where(field_selector="status.phase!=Failed"))
    assert result.items == [{"n": 1}, {"n": 2}]
    assert result.resource_version == "10"
    first, second = wire.requests
    assert (first.method, first.path) == ("GET", "/api/v1/pods")
    assert first.query["limit"] == "500"
    assert first.query["fieldSelector"] == "status.phase!=Failed"
    assert "labelSelector" not in first.query
    assert "continue" not in first.query
    assert second.query["continue"] == "t1"
    assert second.query["fieldSelector"] == "status.phase!=Failed"


def test_an_expired_continue_token_restarts_as_one_unpaged_list(api: KubeAPI, wire: Wire) -> None:
    wire.replies += [
        FakeResponse(200, {"metadata": {"resourceVersion": "5", "continue": "t1"}, "items": [{"n": 1}]}),
        status_exc(410, "Expired"),
        FakeResponse(200, {"metadata": {"resourceVersion": "7"}, "items": [{"n": 1}, {"n": 2}]}),
    ]
    result = api.list_raw(NODES)
    assert result.items == [{"n": 1}, {"n": 2}]
    assert result.resource_version == "7"
    assert "limit" not in wire.requests[2].query
    assert "continue" not in wire.requests[2].query


def test_a_410_on_the_first_page_is_raised_for_the_reflector(api: KubeAPI, wire: Wire) -> None:
    wire.replies.append(status_exc(410, "Expired"))
    with pytest.raises(Gone):
        api.list_raw(NODES)


def test_an_error_reply_is_mapped_from_its_status_body(api: KubeAPI, wire: Wire) -> None:
    denied = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "cannot list"}
    wire.replies += [FakeResponse(403, denied), FakeResponse(410, {"kind": "Status", "code": 410})]
    with pytest.raises(Forbidden, match="cannot list"):
        api.list_raw(PODDISRUPTIONBUDGETS)
    with pytest.raises(Gone):
        api.watch(NODES, "3", 60)


def test_unretried_lists_make_one_attempt(api: KubeAPI, wire: Wire) -> None:
    unavailable = status_exc(503, "ServiceUnavailable")
    wire.replies.append(unavailable)
    with pytest.raises(ServerError):
        api.list_raw(NODES, retry=False)
    assert len(wire.requests) == 1
    wire.replies += [unavailable, FakeResponse(200, {"items": [{"n": 1}]})]
    assert api.list_raw(NODES).items == [{"n": 1}]  # retried by default
    assert len(wire.requests) == 3


def test_pods_are_listed_without_finished_ones_unless_asked(api: KubeAPI, wire: Wire) -> None:
    api.list_raw(PODS)
    api.list_raw(PODS.where(field_selector="", label_selector="app=web"))
    default, custom = (r.query for r in wire.requests)
    assert default["fieldSelector"] == ACTIVE_PODS_SELECTOR
    assert "fieldSelector" not in custom
    assert custom["labelSelector"] == "app=web"


def test_a_page_size_of_zero_lists_in_one_request(api: KubeAPI, wire: Wire) -> None:
    api.page_size = 0
    api.list_raw(NAMESPACES)
    [request] = wire.requests
    assert request.path == "/api/v1/namespaces"
    assert "limit" not in request.query


def test_watch_asks_for_bookmarks_from_a_version_with_a_read_slack(api: KubeAPI, wire: Wire) -> None:
    stream = api.watch(PODS.where(label_selector="tier=low"), "42", 60)
    assert isinstance(stream, RawWatch)
    [request] = wire.requests
    assert request.path == "/api/v1/pods"
    assert request.query == {
        "fieldSelector": ACTIVE_PODS_SELECTOR,
        "labelSelector": "tier=low",
        "resourceVersion": "42",
        "watch": "true",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "60",
    }
    assert request.timeout == (api.client.timeout, 60 + 30)  # the server ends it first
    api.watch(NODES, "", 5)
    assert "resourceVersion" not in wire.requests[1].query


# Kinds coming with the volume and coscheduling plugins: the same code must serve each from its entry.
PERSISTENTVOLUMES = Resource("persistentvolumes")
PERSISTENTVOLUMECLAIMS = Resource("persistentvolumeclaims", namespaced=True)
STORAGECLASSES = Resource("storageclasses", group="storage.k8s.io")
CSINODES = Resource("csinodes", group="storage.k8s.io")
CSIDRIVERS = Resource("csidrivers", group="storage.k8s.io")
CSISTORAGECAPACITIES = Resource("csistoragecapacities", group="storage.k8s.io", namespaced=True)
PODGROUPS = Resource(
    "podgroups", group="scheduling.x-k8s.io", version="v1alpha1", namespaced=True, optional=True
)


@pytest.mark.parametrize(
    ("resource", "path"),
    [
        (NODES, "/api/v1/nodes"),
        (PODS, "/api/v1/pods"),
        (NAMESPACES, "/api/v1/namespaces"),
        (PODDISRUPTIONBUDGETS, "/apis/policy/v1/poddisruptionbudgets"),
        (PERSISTENTVOLUMES, "/api/v1/persistentvolumes"),
        (PERSISTENTVOLUMECLAIMS, "/api/v1/persistentvolumeclaims"),
        (STORAGECLASSES, "/apis/storage.k8s.io/v1/storageclasses"),
        (CSINODES, "/apis/storage.k8s.io/v1/csinodes"),
        (CSIDRIVERS, "/apis/storage.k8s.io/v1/csidrivers"),
        (CSISTORAGECAPACITIES, "/apis/storage.k8s.io/v1/csistoragecapacities"),
        (PODGROUPS, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"),
    ],
    ids=lambda v: getattr(v, "plural", None),
)
def test_every_kind_is_listed_and_watched_at_its_path(
    api: KubeAPI, wire: Wire, resource: Resource, path: str
) -> None:
    wire.replies.append(FakeResponse(200, {"metadata": {"resourceVersion": "9"}, "items": [{"n": 1}]}))
    assert api.list_raw(resource) == ([{"n": 1}], "9")
    api.watch(resource, "9", 30)
    listed, watched = wire.requests
    assert (listed.path, listed.query["limit"]) == (path, "500")
    assert watched.path == path
    assert watched.query["watch"] == "true"
    assert watched.query["resourceVersion"] == "9"


@pytest.mark.parametrize(
    ("resource", "path"),
    [
        (PODS, "/api/v1/namespaces/team/pods"),
        (PERSISTENTVOLUMECLAIMS, "/api/v1/namespaces/team/persistentvolumeclaims"),
        (CSISTORAGECAPACITIES, "/apis/storage.k8s.io/v1/namespaces/team/csistoragecapacities"),
        (PODGROUPS, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team/podgroups"),
    ],
    ids=lambda v: getattr(v, "plural", None),
)
def test_a_namespaced_kind_can_be_read_in_one_namespace(
    api: KubeAPI, wire: Wire, resource: Resource, path: str
) -> None:
    api.list_raw(resource.where(namespace="team"))
    api.watch(resource.where(namespace="team"), "1", 30)
    assert [r.path for r in wire.requests] == [path, path]


def test_a_cluster_scoped_kind_has_no_namespace() -> None:
    with pytest.raises(ValueError, match="cluster-scoped"):
        PERSISTENTVOLUMES.where(namespace="team")


def test_where_keeps_what_it_is_not_given() -> None:
    narrowed = PODS.where(label_selector="app=web", namespace="team")
    assert (narrowed.field_selector, narrowed.label_selector, narrowed.namespace) == (
        ACTIVE_PODS_SELECTOR,
        "app=web",
        "team",
    )
    assert narrowed.where(namespace="").path == "/api/v1/pods"
    assert PODS.namespace == ""  # the table entry is unchanged


def test_reflector_takes_its_name_and_optionality_from_the_table(api: KubeAPI) -> None:
    def ignore(kind: str, obj: dict[str, Any]) -> None:
        pass

    for resource, optional in [
        (NODES, False),
        (PODS, False),
        (PODDISRUPTIONBUDGETS, True),
        (NAMESPACES, True),
    ]:
        r = api.reflector(resource, ignore, optional_retry=7.0)
        assert (r.name, r.optional, r.optional_retry) == (resource.plural, optional, 7.0)
    assert api.reflector(APPGROUPS, ignore).rbac == "deploy/optional/appgroup"


# --- discovery -----------------------------------------------------------------


def test_discovery_says_whether_a_crd_is_served(api: KubeAPI, wire: Wire) -> None:
    not_installed = FakeResponse(404)
    not_installed.data = b"404 page not found\n"  # kube's answer for a group/version it does not know
    other = {
        "kind": "APIResourceList",
        "groupVersion": APPGROUPS.api_version,
        "resources": [{"name": "other"}],
    }
    served = {**other, "resources": [{"name": "appgroups"}, {"name": "appgroups/status"}]}
    denied = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "cannot get path"}
    wire.replies += [
        not_installed,
        FakeResponse(200, other),
        FakeResponse(200, served),
        FakeResponse(403, denied),
    ]
    assert api.unserved(APPGROUPS) == "the API server serves no appgroup.diktyo.x-k8s.io/v1alpha1"
    assert api.unserved(APPGROUPS) == "appgroup.diktyo.x-k8s.io/v1alpha1 has no resource appgroups"
    assert api.unserved(APPGROUPS) == ""
    # Discovery is everyone's (system:discovery): a 403 there leaves the verdict to the list.
    assert api.unserved(APPGROUPS) == ""
    assert [(r.method, r.path) for r in wire.requests] == [
        ("GET", "/apis/appgroup.diktyo.x-k8s.io/v1alpha1")
    ] * 4
    wire.replies.append(FakeResponse(200, {"kind": "APIResourceList", "resources": [{"name": "nodes"}]}))
    assert api.unserved(NODES) == "" and wire.requests[-1].path == "/api/v1"
