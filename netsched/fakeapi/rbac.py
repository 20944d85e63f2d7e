"""SubjectAccessReviews answered from the RBAC objects stored in the fake, as kube's RBAC authorizer.

A test can apply deploy/'s manifests as written (ClusterRoles, Roles and their
bindings) and then ask, over HTTP as netsched's delegated authorization does,
whether a service account's token may GET /metrics: the answer follows from
what was applied, not from a hand-written grant.  The rules are kube's
(pkg/registry/rbac/validation): a ClusterRoleBinding grants its ClusterRole's
rules everywhere, a RoleBinding grants its Role's or ClusterRole's resource
rules in its own namespace only (never non-resource URLs); a subject matches a
User by name, a Group by membership, a ServiceAccount by its
system:serviceaccount:NS:NAME user; "*" matches any verb, resource, group or
URL, and a URL rule ending in "*" is a prefix.  Bindings to roles that do not
exist grant nothing (the built-in system: roles are not stored here).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from netsched.fakeapi.resources import resolve_resource
from netsched.fakeapi.store import JsonObj, StatusError, Store

CLUSTER_ROLES = resolve_resource("rbac.authorization.k8s.io/clusterroles")
CLUSTER_ROLE_BINDINGS = resolve_resource("rbac.authorization.k8s.io/clusterrolebindings")
ROLES = resolve_resource("rbac.authorization.k8s.io/roles")
ROLE_BINDINGS = resolve_resource("rbac.authorization.k8s.io/rolebindings")


def review(store: Store, spec: JsonObj) -> str:
    """Why RBAC allows the SubjectAccessReview `spec`, or "" when it does not."""
    user = str(spec.get("user") or "")
    groups = {str(g) for g in spec.get("groups") or ()}
    non_resource = spec.get("nonResourceAttributes")
    attrs: JsonObj = non_resource if isinstance(non_resource, dict) else spec.get("resourceAttributes") or {}
    namespace = "" if isinstance(non_resource, dict) else str(attrs.get("namespace") or "")
    for binding, rules in _granted(store, user, groups, namespace):
        if any(_allows(rule, attrs, isinstance(non_resource, dict)) for rule in rules):
            ref = binding["roleRef"]
            return f'RBAC: allowed by {binding["kind"]} "{binding["metadata"]["name"]}" of {ref["kind"]} "{ref["name"]}"'
    return ""


def _granted(
    store: Store, user: str, groups: set[str], namespace: str
) -> Iterator[tuple[JsonObj, list[Any]]]:
    """(binding, its role's rules) for each binding naming the subject that applies in `namespace`."""
    bindings = store.list(CLUSTER_ROLE_BINDINGS, None)[0]
    if namespace:
        # A RoleBinding applies in its namespace, and only to resource requests.
        bindings = bindings + store.list(ROLE_BINDINGS, namespace)[0]
    for binding in bindings:
        if not any(_names(subject, binding, user, groups) for subject in binding.get("subjects") or ()):
            continue
        rules = _rules(store, binding)
        if rules is not None:
            yield binding, rules


def _names(subject: Any, binding: JsonObj, user: str, groups: set[str]) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding["metadata"].get("namespace") or ""
        return user == f"system:serviceaccount:{namespace}:{name}"
    return False


def _rules(store: Store, binding: JsonObj) -> list[Any] | None:
    ref = binding.get("roleRef") or {}
    try:
        if ref.get("kind") == "ClusterRole":
            role = store.get(CLUSTER_ROLES, None, str(ref.get("name") or ""))
        else:
            role = store.get(ROLES, binding["metadata"].get("namespace"), str(ref.get("name") or ""))
    except StatusError:
        return None  # a binding to a missing (or built-in, unstored) role grants nothing here
    return list(role.get("rules") or ())


def _allows(rule: Any, attrs: JsonObj, non_resource: bool) -> bool:
    if not isinstance(rule, dict) or not _any(rule.get("verbs"), str(attrs.get("verb") or "")):
        return False
    if non_resource:
        path = str(attrs.get("path") or "")
        return any(
            url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1]))
            for url in rule.get("nonResourceURLs") or ()
        )
    resource = str(attrs.get("resource") or "")
    if attrs.get("subresource"):
        resource += f"/{attrs['subresource']}"
    names = rule.get("resourceNames") or ()
    return (
        _any(rule.get("apiGroups"), str(attrs.get("group") or ""))
        and _any(rule.get("resources"), resource)
        and (not names or str(attrs.get("name") or "") in names)
    )


def _any(allowed: Iterable[str] | None, value: str) -> bool:
    allowed = list(allowed or ())
    return "*" in allowed or value in allowed


__all__ = ["review"]
