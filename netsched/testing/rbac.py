"""What the RBAC objects in deploy/ grant to netsched's ServiceAccount, as plain tuples.

The ClusterRole should allow exactly the calls the scheduler makes, no more
(least privilege) and no less (a missing verb is a production outage that no
unit test sees). Tests compare these grants with the requests the fake API
server recorded (FakeAPIServer.requests): each RecordedRequest maps to a rule
with request_rule().

Only the manifests the kustomization lists are read (rendered by
netsched.testing.kustomize), and only the roles bound to the ServiceAccount the
Deployment runs as count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, Protocol

from netsched.testing.kustomize import CLUSTER_KINDS, Obj, load_kustomization


class Grant(NamedTuple):
    """One permission: namespace "" means every namespace (a ClusterRole bound
    cluster-wide); resource_name "" means any name."""

    api_group: str
    resource: str  # "pods" or "pods/binding"
    verb: str
    namespace: str
    resource_name: str


class RequestLike(Protocol):
    """netsched.fakeapi.RecordedRequest."""

    @property
    def verb(self) -> str: ...
    @property
    def api_group(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def subresource(self) -> str: ...
    @property
    def namespace(self) -> str: ...


def grants_from_deploy(path: str | Path, *components: str | Path) -> set[Grant]:
    """Every grant the deploy/ manifests give the Deployment's ServiceAccount, with the
    optional kustomize `components` (e.g. deploy/optional/coscheduling) applied too."""
    objects = load_kustomization(path)
    for component in components:
        objects += load_kustomization(component)
    subject = _service_account(objects)
    roles = {(o["kind"], _ns(o), o["metadata"]["name"]): o for o in objects if o["kind"] in _ROLE_KINDS}
    grants: set[Grant] = set()
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(_subject(s, _ns(binding)) == subject for s in binding.get("subjects") or []):
            continue
        ref = binding["roleRef"]
        role_ns = "" if ref["kind"] == "ClusterRole" else _ns(binding)
        role = roles.get((ref["kind"], role_ns, ref["name"])) or BUILTIN_CLUSTER_ROLES.get(ref["name"])
        if role is None:
            raise ValueError(
                f"{binding['kind']} {binding['metadata']['name']} refers to missing {ref['name']}"
            )
        scope = "" if binding["kind"] == "ClusterRoleBinding" else _ns(binding)
        grants.update(_expand(role.get("rules") or [], scope))
    return grants


def rules_from_deploy(path: str | Path, *components: str | Path) -> set[tuple[str, str, str]]:
    """(api_group, resource[/subresource], verb) for everything granted, any namespace or name."""
    return {(g.api_group, g.resource, g.verb) for g in grants_from_deploy(path, *components)}


def request_rule(request: RequestLike) -> tuple[str, str, str]:
    """The rule a recorded request needs, in rules_from_deploy's shape."""
    resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    return (request.api_group, resource, request.verb)


def allows(
    grants: Iterable[Grant], api_group: str, resource: str, verb: str, namespace: str = "", name: str = ""
) -> bool:
    """Whether some grant covers the call (an empty `name` matches any resourceNames)."""
    return any(
        g.api_group == api_group
        and g.resource == resource
        and g.verb == verb
        and g.namespace in ("", namespace)
        and (not g.resource_name or not name or g.resource_name == name)
        for g in grants
    )


# Built-in ClusterRoles deploy/ binds without shipping them (their rules as in kube's bootstrap policy).
BUILTIN_CLUSTER_ROLES: dict[str, Obj] = {
    "system:auth-delegator": {
        "rules": [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["subjectaccessreviews"],
                "verbs": ["create"],
            },
        ]
    }
}

_ROLE_KINDS = {"Role", "ClusterRole"}


def _ns(obj: Obj) -> str:
    return "" if obj["kind"] in CLUSTER_KINDS else str(obj["metadata"].get("namespace") or "default")


def _subject(subject: Obj, binding_ns: str) -> tuple[str, str]:
    if subject.get("kind") != "ServiceAccount":
        return ("", "")
    return (str(subject.get("namespace") or binding_ns), str(subject["name"]))


def _service_account(objects: list[Obj]) -> tuple[str, str]:
    for obj in objects:
        if obj["kind"] == "Deployment":
            pod = obj["spec"]["template"]["spec"]
            return (_ns(obj), str(pod.get("serviceAccountName") or "default"))
    raise ValueError("no Deployment in the kustomization")


def _expand(rules: list[Obj], namespace: str) -> Iterator[Grant]:
    for rule in rules:
        names = rule.get("resourceNames") or [""]
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    for name in names:
                        yield Grant(group, resource, verb, namespace, name)
