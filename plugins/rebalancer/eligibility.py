"""Which pods the rebalancer may move, and why not the others.

A move is an eviction whose pod a controller recreates and the scheduler places
again, so a pod qualifies only when all of that holds and nothing says to leave
it alone.  The rules follow the descheduler's DefaultEvictor where it has one
(daemon sets, mirror pods, local storage, system-critical priority, bare pods)
and add netsched's: gang members (a whole-gang move is out of scope), pods of
other profiles, the pod's own opt-out annotation, excluded namespaces, pods
that are not running and ready, and Jobs (moving one restarts its work).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from netsched.framework import PodInfo, pod_ready

OPT_OUT = "netsched.io/rebalance"  # "false": never move this pod
MIRROR = "kubernetes.io/config.mirror"  # the kubelet's copy of a static pod
POD_GROUP = "scheduling.x-k8s.io/pod-group"  # Coscheduling's gang label
SYSTEM_CRITICAL = 2_000_000_000  # kube's SystemCriticalPriority: system-cluster-critical and up
# Owners that recreate an evicted pod as another pod the scheduler places.
RECREATING = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})


def why_not(
    pod: PodInfo,
    *,
    profile: str,
    excluded_namespaces: Collection[str],
    local_storage_allowed: bool,
) -> str:
    """ "" when the rebalancer may move `pod`, else the first reason it may not (shown on the
    debug page and in tests)."""
    if pod.scheduler_name != profile:
        return f"scheduled by another profile ({pod.scheduler_name})"
    if pod.annotations.get(OPT_OUT, "").strip().lower() == "false":
        return f"annotated {OPT_OUT}: false"
    if pod.namespace in excluded_namespaces:
        return f"namespace {pod.namespace} is excluded"
    if MIRROR in pod.annotations:
        return "a static (mirror) pod"
    if pod.owner_kind == "DaemonSet":
        return "a DaemonSet pod"
    if not pod.owner_kind:
        return "no controller recreates it (a bare pod)"
    if pod.owner_kind not in RECREATING:
        return f"owned by a {pod.owner_kind}, which does not recreate it elsewhere"
    if POD_GROUP in pod.labels:
        return "a gang member (a whole-gang move is out of scope)"
    if pod.priority >= SYSTEM_CRITICAL:
        return "system-critical priority"
    if not local_storage_allowed and _local_storage(pod.raw):
        return "uses local storage (emptyDir or hostPath)"
    if pod.deleting:
        return "terminating"
    if not pod.node_name or not running_and_ready(pod.raw):
        return "not running and ready"
    return ""


def _local_storage(raw: dict[str, Any]) -> bool:
    for volume in (raw.get("spec") or {}).get("volumes") or ():
        if isinstance(volume, dict) and ("emptyDir" in volume or "hostPath" in volume):
            return True
    return False


def running_and_ready(raw: dict[str, Any]) -> bool:
    """Phase Running and the Ready condition True (kube's IsPodReady)."""
    return (raw.get("status") or {}).get("phase") == "Running" and pod_ready(raw)
