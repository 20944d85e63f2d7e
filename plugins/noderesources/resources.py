"""Resource names and the (allocatable, requested) pairs the resource scores read.

kube sorts resource names into kinds that are treated differently: cpu,
memory and ephemeral-storage are first-class; "scalar" resources (extended
resources such as nvidia.com/gpu, hugepages-*, attachable-volumes-*, and
*kubernetes.io/* names) are counted only when a pod asks for them; anything
else (e.g. "pods" in a scoring list) is never scored.  NodeResourcesFit and
NodeResourcesBalancedAllocation share these rules, so they live here once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    CPU,
    DNS1123_SUBDOMAIN,
    EPHEMERAL_STORAGE,
    MEMORY,
    QUALIFIED_NAME_PART,
    IntArray,
    NodeInfo,
    PodInfo,
    Snapshot,
)

NATIVE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"

_NAME_FMT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_DNS_FMT = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One entry of a scoring `resources` list."""

    name: str
    weight: int = 1

    def encode(self) -> dict[str, object]:
        return {"name": self.name, "weight": self.weight}


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def is_extended(name: str) -> bool:
    """Domain-prefixed, not kubernetes.io, e.g. nvidia.com/gpu (kube's IsExtendedResourceName)."""
    if "/" not in name or NATIVE_PREFIX in name or name.startswith(REQUESTS_PREFIX):
        return False
    return not qualified_name_errors(REQUESTS_PREFIX + name)


def is_scalar(name: str) -> bool:
    """Counted only when requested: extended, hugepages, attachable volumes, prefixed native."""
    return (
        is_extended(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
        or NATIVE_PREFIX in name
    )


def qualified_name_errors(value: str) -> list[str]:
    """kube's IsQualifiedName: "[prefix/]name", messages as the API server words them."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errs = []
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not DNS1123_SUBDOMAIN.match(prefix):
                errs.append(f"prefix part {_DNS_FMT}")
    else:
        return [
            f"a qualified name {_NAME_FMT} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not QUALIFIED_NAME_PART.match(name):
        errs.append(f"name part {_NAME_FMT}")
    return errs


def pod_score_request(pod: PodInfo, resource: str, *, use_requested: bool) -> int:
    """The pod's request as a resource score sees it.

    With use_requested=False (NodeResourcesFit's strategies) cpu and memory use
    the non-zero defaults kube assumes for containers without requests, so
    best-effort pods still spread; BalancedAllocation uses real requests.
    """
    if not use_requested:
        if resource == CPU:
            return pod.nonzero_cpu
        if resource == MEMORY:
            return pod.nonzero_memory
    return pod.requests.get(resource, 0)


def node_pair(node: NodeInfo, resource: str, pod_request: int, *, use_requested: bool) -> tuple[int, int]:
    """(allocatable, requested incl. the pod) on one node; (0, 0) means "do not score this resource"."""
    if pod_request == 0 and is_scalar(resource):
        return 0, 0
    alloc = node.allocatable
    if resource == CPU:
        used = node.requested.get(CPU, 0) if use_requested else node.nonzero_cpu
        return alloc.get(CPU, 0), used + pod_request
    if resource == MEMORY:
        used = node.requested.get(MEMORY, 0) if use_requested else node.nonzero_memory
        return alloc.get(MEMORY, 0), used + pod_request
    if resource == EPHEMERAL_STORAGE or (is_scalar(resource) and resource in alloc):
        return alloc.get(resource, 0), node.requested.get(resource, 0) + pod_request
    return 0, 0


def table_pair(
    snapshot: Snapshot, idx: IntArray, resource: str, pod_request: int, *, use_requested: bool
) -> tuple[IntArray, IntArray] | None:
    """node_pair() for rows idx of the node table; None when no row scores this resource."""
    if pod_request == 0 and is_scalar(resource):
        return None
    c = snapshot.col.get(resource)
    if c is None or not (resource in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar(resource)):
        return None
    if resource in (CPU, MEMORY) and not use_requested:
        used = snapshot.nonzero_requested[:, 0 if resource == CPU else 1][idx]
    else:
        used = snapshot.requested[:, c][idx]
    # Column view first, then gather: about twice as fast as 2-D fancy indexing.
    used += np.int64(pod_request)
    return snapshot.allocatable[:, c][idx], used
