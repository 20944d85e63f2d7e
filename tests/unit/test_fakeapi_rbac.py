"""The fake API server's RBAC (netsched.fakeapi.rbac): SubjectAccessReviews answered from stored
roles and bindings with kube's rules, table-driven; and TokenRequests (serviceaccounts/token)."""

from __future__ import annotations

from typing import Any

import pytest

from netsched.fakeapi import FakeAPIServer
from netsched.fakeapi.rbac import review
from netsched.fakeapi.resources import resolve_resource
from netsched.fakeapi.store import StatusError, Store

SA = "system:serviceaccount:monitoring:prom"


def _store() -> Store:
    store = Store()

    def put(resource: str, namespace: str | None, obj: dict[str, Any]) -> None:
        store.create(resolve_resource(resource), namespace, obj)

    rbac = "rbac.authorization.k8s.io/"
    put(
        rbac + "clusterroles",
        None,
        {"metadata": {"name": "metrics"}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
    )
    put(
        rbac + "clusterroles",
        None,
        {"metadata": {"name": "debug"}, "rules": [{"nonResourceURLs": ["/debug/*"], "verbs": ["*"]}]},
    )
    put(
        rbac + "clusterroles",
        None,
        {
            "metadata": {"name": "pods"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}],
        },
    )
    put(
        rbac + "roles",
        "apps",
        {
            "metadata": {"name": "lease"},
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": ["one"],
                    "verbs": ["get", "update"],
                }
            ],
        },
    )
    sa = [{"kind": "ServiceAccount", "name": "prom", "namespace": "monitoring"}]
    put(
        rbac + "clusterrolebindings",
        None,
        {"metadata": {"name": "m"}, "roleRef": {"kind": "ClusterRole", "name": "metrics"}, "subjects": sa},
    )
    put(
        rbac + "clusterrolebindings",
        None,
        {
            "metadata": {"name": "d"},
            "roleRef": {"kind": "ClusterRole", "name": "debug"},
            "subjects": [{"kind": "Group", "name": "ops"}],
        },
    )
    put(
        rbac + "clusterrolebindings",
        None,
        {
            "metadata": {"name": "gone"},
            "roleRef": {"kind": "ClusterRole", "name": "missing"},
            "subjects": [{"kind": "User", "name": "eve"}],
        },
    )
    # A RoleBinding to a ClusterRole grants its resource rules in its namespace only, and no URL.
    put(
        rbac + "rolebindings",
        "shop",
        {"metadata": {"name": "p"}, "roleRef": {"kind": "ClusterRole", "name": "pods"}, "subjects": sa},
    )
    put(
        rbac + "rolebindings",
        "shop",
        {
            "metadata": {"name": "u"},
            "roleRef": {"kind": "ClusterRole", "name": "metrics"},
            "subjects": [{"kind": "User", "name": "bob"}],
        },
    )
    # A ServiceAccount subject without a namespace is the binding's namespace's.
    put(
        rbac + "rolebindings",
        "apps",
        {
            "metadata": {"name": "l"},
            "roleRef": {"kind": "Role", "name": "lease"},
            "subjects": [{"kind": "ServiceAccount", "name": "elector"}],
        },
    )
    return store


URL = "nonResourceAttributes"
RES = "resourceAttributes"

CASES = [
    ("bound URL", SA, [], URL, {"path": "/metrics", "verb": "get"}, 'ClusterRoleBinding "m" of ClusterRole "metrics"'),
    ("other verb", SA, [], URL, {"path": "/metrics", "verb": "post"}, ""),
    ("other URL", SA, [], URL, {"path": "/debug/explain", "verb": "get"}, ""),
    ("group, prefix, any verb", "alice", ["ops"], URL, {"path": "/debug/pprof/profile", "verb": "get"}, '"d"'),
    ("prefix is no substring", "alice", ["ops"], URL, {"path": "/debugger", "verb": "get"}, ""),
    ("missing role grants nothing", "eve", [], URL, {"path": "/metrics", "verb": "get"}, ""),
    ("RoleBinding: no URLs", "bob", [], URL, {"path": "/metrics", "verb": "get"}, ""),
    ("RoleBinding: its namespace", SA, [], RES, {"namespace": "shop", "resource": "pods", "verb": "list"}, 'RoleBinding "p"'),
    ("RoleBinding: not elsewhere", SA, [], RES, {"namespace": "web", "resource": "pods", "verb": "list"}, ""),
    ("RoleBinding: not cluster-wide", SA, [], RES, {"resource": "pods", "verb": "list"}, ""),
    ("RoleBinding: other verb", SA, [], RES, {"namespace": "shop", "resource": "pods", "verb": "delete"}, ""),
    ("SA in the binding's namespace, name", "system:serviceaccount:apps:elector", [], RES,
     {"namespace": "apps", "group": "coordination.k8s.io", "resource": "leases", "name": "one", "verb": "update"}, '"l"'),
    ("resourceNames", "system:serviceaccount:apps:elector", [], RES,
     {"namespace": "apps", "group": "coordination.k8s.io", "resource": "leases", "name": "two", "verb": "update"}, ""),
    ("same SA name elsewhere", "system:serviceaccount:shop:elector", [], RES,
     {"namespace": "apps", "group": "coordination.k8s.io", "resource": "leases", "name": "one", "verb": "get"}, ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("user", "groups", "kind", "attrs", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_review(user: str, groups: list[str], kind: str, attrs: dict[str, str], reason: str) -> None:
    got = review(_store(), {"user": user, "groups": groups, kind: attrs})
    if reason:
        assert got.startswith("RBAC: allowed by") and reason in got, got
    else:
        assert got == ""


def test_a_token_request_mints_a_token_that_authenticates_as_the_account() -> None:
    server = FakeAPIServer()
    server.create("serviceaccounts", {"metadata": {"name": "scraper", "namespace": "ns"}})
    answer = server.request_token("ns", "scraper", {"spec": {"expirationSeconds": 600}})
    token = answer["status"]["token"]
    assert answer["spec"]["expirationSeconds"] == 600 and answer["status"]["expirationTimestamp"]
    user = server.review_token({"spec": {"token": token}})["status"]["user"]
    assert user["username"] == "system:serviceaccount:ns:scraper"
    assert user["groups"] == ["system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"]
    with pytest.raises(StatusError) as e:
        server.request_token("ns", "nobody", {})
    assert e.value.code == 404
