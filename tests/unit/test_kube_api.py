"""KubeAPI request shapes and outcome handling, with the generated API objects stubbed out."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from netsched.framework.interfaces import ClusterAPI
from netsched.kube.api import MERGE_PATCH, STRATEGIC_MERGE_PATCH, KubeAPI
from netsched.kube.client import KubeClient
from netsched.kube.errors import Conflict, Gone, Transient
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock


class FakeResponse:
    def __init__(self, status: int = 200, body: Any = None) -> None:
        self.status = status
        self.data = b"" if body is None else json.dumps(body).encode()

    def release_conn(self) -> None:
        pass


class StubApiClient:
    class configuration:  # noqa: N801 - mimics the real ApiClient attribute
        host = "https://example.invalid"

    def close(self) -> None:
        pass


class FakeGroup:
    """Any method name works; each returns (or raises) its scripted outcomes and records calls."""

    def __init__(self) -> None:
        self.outcomes: dict[str, list[Any]] = defaultdict(list)
        self.calls: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = defaultdict(list)

    def script(self, method: str, *outcomes: Any) -> None:
        self.outcomes[method].extend(outcomes)

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[method].append((args, kwargs))
            queue = self.outcomes[method]
            outcome = queue.pop(0) if queue else FakeResponse(200, {})
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome

        return call


def status_exc(code: int, reason: str) -> ApiException:
    return ApiException(
        status=code, reason=reason, body=json.dumps({"kind": "Status", "code": code, "reason": reason})
    )


@pytest.fixture
def core() -> FakeGroup:
    return FakeGroup()


@pytest.fixture
def api(core: FakeGroup) -> KubeAPI:
    client = KubeClient(StubApiClient(), sleep=lambda _s: None)
    client.core = core  # type: ignore[assignment]
    return KubeAPI(client, clock=FakeClock(wall_start=1_700_000_000.0))


def test_kube_api_is_a_cluster_api(api: KubeAPI) -> None:
    cluster_api: ClusterAPI = api
    assert cluster_api is api


def test_bind_posts_a_binding_with_the_pod_uid(api: KubeAPI, core: FakeGroup) -> None:
    pod = make_pod("web").namespace("team").uid("u-1").info()
    core.script("create_namespaced_pod_binding", FakeResponse(201, {"kind": "Status", "code": 201}))
    api.bind(pod, "n1")
    [(args, kwargs)] = core.calls["create_namespaced_pod_binding"]
    assert args[:2] == ("web", "team")
    assert args[2] == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web", "namespace": "team", "uid": "u-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    assert kwargs["_preload_content"] is False


def test_bind_conflict_on_the_first_attempt_is_raised(api: KubeAPI, core: FakeGroup) -> None:
    core.script("create_namespaced_pod_binding", status_exc(409, "Conflict"))
    with pytest.raises(Conflict):
        api.bind(make_pod("p").info(), "n1")
    assert "read_namespaced_pod" not in core.calls


def test_bind_conflict_after_an_unanswered_attempt_checks_who_bound_it(api: KubeAPI, core: FakeGroup) -> None:
    pod = make_pod("p").uid("u-p").info()
    mine = {"metadata": {"name": "p", "uid": "u-p"}, "spec": {"nodeName": "n1"}}
    core.script(
        "create_namespaced_pod_binding", Transient(0, "ProtocolError", "reset"), status_exc(409, "Conflict")
    )
    core.script("read_namespaced_pod", FakeResponse(200, mine))
    api.bind(pod, "n1")  # our first attempt had gone through: success

    other = {"metadata": {"name": "p", "uid": "u-p"}, "spec": {"nodeName": "n2"}}
    core.script(
        "create_namespaced_pod_binding", Transient(0, "ProtocolError", "reset"), status_exc(409, "Conflict")
    )
    core.script("read_namespaced_pod", FakeResponse(200, other))
    with pytest.raises(Conflict):
        api.bind(pod, "n1")


def test_delete_pod_sends_uid_precondition_and_grace_period(api: KubeAPI, core: FakeGroup) -> None:
    api.delete_pod(make_pod("v").namespace("ns").uid("u-v").info(), grace_period_seconds=0)
    [(args, kwargs)] = core.calls["delete_namespaced_pod"]
    assert args == ("v", "ns")
    assert kwargs["grace_period_seconds"] == 0
    assert kwargs["body"] == {"preconditions": {"uid": "u-v"}}


@pytest.mark.parametrize(("code", "reason"), [(404, "NotFound"), (409, "Conflict")])
def test_delete_pod_already_gone_is_done(api: KubeAPI, core: FakeGroup, code: int, reason: str) -> None:
    core.script("delete_namespaced_pod", status_exc(code, reason))
    api.delete_pod(make_pod("v").info())


def test_nominated_node_name_is_a_merge_patch_and_empty_clears_it(api: KubeAPI, core: FakeGroup) -> None:
    pod = make_pod("p").info()
    api.set_nominated_node_name(pod, "n3")
    api.set_nominated_node_name(pod, "")
    bodies = [
        (args[2], kwargs["_content_type"]) for args, kwargs in core.calls["patch_namespaced_pod_status"]
    ]
    assert bodies == [
        ({"status": {"nominatedNodeName": "n3"}}, MERGE_PATCH),
        ({"status": {"nominatedNodeName": None}}, MERGE_PATCH),
    ]


UNSCHEDULABLE = {"status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available."}


def test_update_pod_condition_patches_pod_scheduled(api: KubeAPI, core: FakeGroup) -> None:
    api.update_pod_condition(make_pod("p").info(), UNSCHEDULABLE)
    [(args, kwargs)] = core.calls["patch_namespaced_pod_status"]
    assert kwargs["_content_type"] == STRATEGIC_MERGE_PATCH
    assert args[2] == {
        "status": {
            "conditions": [
                {"type": "PodScheduled", **UNSCHEDULABLE, "lastTransitionTime": "2023-11-14T22:13:20Z"}
            ]
        }
    }


def test_update_pod_condition_skips_an_unchanged_condition(api: KubeAPI, core: FakeGroup) -> None:
    existing = {"type": "PodScheduled", **UNSCHEDULABLE, "lastTransitionTime": "2020-01-01T00:00:00Z"}
    pod = make_pod("p").set("status.conditions", [existing]).info()
    api.update_pod_condition(pod, UNSCHEDULABLE)
    assert "patch_namespaced_pod_status" not in core.calls


def test_update_pod_condition_keeps_transition_time_when_status_is_unchanged(
    api: KubeAPI, core: FakeGroup
) -> None:
    existing = {"type": "PodScheduled", **UNSCHEDULABLE, "lastTransitionTime": "2020-01-01T00:00:00Z"}
    pod = make_pod("p").set("status.conditions", [existing]).info()
    api.update_pod_condition(pod, {**UNSCHEDULABLE, "message": "0/4 nodes are available."})
    [(args, _)] = core.calls["patch_namespaced_pod_status"]
    assert args[2]["status"]["conditions"][0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"


def test_update_pod_condition_can_nominate_in_the_same_write(api: KubeAPI, core: FakeGroup) -> None:
    existing = {"type": "PodScheduled", **UNSCHEDULABLE}
    pod = make_pod("p").set("status.conditions", [existing]).info()
    api.update_pod_condition(pod, UNSCHEDULABLE, nominated_node_name="n2")
    [(args, _)] = core.calls["patch_namespaced_pod_status"]
    assert args[2]["status"]["nominatedNodeName"] == "n2"


def test_patch_pod_annotations_sets_and_removes(api: KubeAPI, core: FakeGroup) -> None:
    api.patch_pod_annotations(make_pod("p").info(), {"a": "1", "gone": None})
    [(args, kwargs)] = core.calls["patch_namespaced_pod"]
    assert args[2] == {"metadata": {"annotations": {"a": "1", "gone": None}}}
    assert kwargs["_content_type"] == MERGE_PATCH


def test_list_follows_continue_tokens(api: KubeAPI, core: FakeGroup) -> None:
    core.script(
        "list_pod_for_all_namespaces",
        FakeResponse(200, {"metadata": {"resourceVersion": "10", "continue": "t1"}, "items": [{"n": 1}]}),
        FakeResponse(200, {"metadata": {"resourceVersion": "10"}, "items": [{"n": 2}]}),
    )
    result = api.list_pods_raw("status.phase!=Failed")
    assert result.items == [{"n": 1}, {"n": 2}]
    assert result.resource_version == "10"
    calls = core.calls["list_pod_for_all_namespaces"]
    assert calls[0][1]["limit"] == 500
    assert calls[0][1]["field_selector"] == "status.phase!=Failed"
    assert "label_selector" not in calls[0][1]
    assert calls[1][1]["_continue"] == "t1"


def test_an_expired_continue_token_restarts_as_one_unpaged_list(api: KubeAPI, core: FakeGroup) -> None:
    core.script(
        "list_node",
        FakeResponse(200, {"metadata": {"resourceVersion": "5", "continue": "t1"}, "items": [{"n": 1}]}),
        status_exc(410, "Expired"),
        FakeResponse(200, {"metadata": {"resourceVersion": "7"}, "items": [{"n": 1}, {"n": 2}]}),
    )
    result = api.list_nodes_raw()
    assert result.items == [{"n": 1}, {"n": 2}]
    assert result.resource_version == "7"
    assert "limit" not in core.calls["list_node"][2][1]


def test_a_410_on_the_first_page_is_raised_for_the_reflector(api: KubeAPI, core: FakeGroup) -> None:
    core.script("list_node", status_exc(410, "Expired"))
    with pytest.raises(Gone):
        api.list_nodes_raw()
