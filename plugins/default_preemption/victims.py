"""Which pods preemption would evict on one node (kube's SelectVictimsOnNode).

On a copy of the node and of the cycle state: remove every pod of lower
priority than the preemptor; if the preemptor still does not fit, the node
cannot help.  Otherwise add the removed pods back one by one, highest
priority first and PodDisruptionBudget-protected pods before the others, and
keep each one that still leaves room: whatever cannot be added back is a
victim.  Removals and additions go through the PreFilter extensions so
plugins that precompute (InterPodAffinity, PodTopologySpread) see them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from netsched.framework import (
    Code,
    CycleState,
    Handle,
    LabelSelector,
    NodeInfo,
    PodInfo,
    PodParseError,
    Status,
    parse_label_selector,
)

REASON_NO_VICTIMS = "No preemption victims found for incoming pod"


@dataclass(slots=True, frozen=True)
class Pdb:
    """What preemption reads of a policy/v1 PodDisruptionBudget."""

    namespace: str
    selector: LabelSelector | None  # None or empty: selects no pod
    disruptions_allowed: int
    disrupted_pods: frozenset[str]  # already being evicted: do not count again


def parse_pdbs(raw: Iterable[Mapping[str, Any]]) -> list[Pdb]:
    out = []
    for obj in raw:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        try:
            selector = parse_label_selector(spec.get("selector"), "spec.selector")
        except PodParseError:
            selector = None  # an invalid selector matches nothing (kube)
        allowed = status.get("disruptionsAllowed")
        out.append(
            Pdb(
                namespace=str(meta.get("namespace") or "default"),
                selector=selector,
                disruptions_allowed=allowed if isinstance(allowed, int) else 0,
                disrupted_pods=frozenset((status.get("disruptedPods") or {}).keys()),
            )
        )
    return out


def split_by_pdb_violation(pods: list[PodInfo], pdbs: list[Pdb]) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating), order kept: evicting all `pods` would exceed which budgets."""
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[PodInfo] = []
    fine: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no budget
            for i, pdb in enumerate(pdbs):
                if pdb.namespace != pod.namespace or pdb.selector is None or pdb.selector.empty:
                    continue
                if not pdb.selector.matches(pod.labels) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else fine).append(pod)
    return violating, fine


def start_time(pod: PodInfo) -> float:
    """status.startTime (else creation time) in Unix seconds; +inf when unknown (kube: now)."""
    status = pod.raw.get("status") if isinstance(pod.raw, dict) else None
    for value in ((status or {}).get("startTime"), pod.creation_timestamp):
        if isinstance(value, str) and value:
            try:
                return datetime.fromisoformat(value).timestamp()
            except ValueError:
                continue
    return math.inf


def importance_key(pod: PodInfo) -> tuple[int, float]:
    """Sort key, most important first: higher priority, then earlier start (kube's MoreImportantPod)."""
    return (-pod.priority, start_time(pod))


@dataclass(slots=True)
class Victims:
    pods: list[PodInfo]  # most important first
    num_pdb_violations: int


def select_victims_on_node(
    handle: Handle, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: list[Pdb]
) -> tuple[Victims | None, Status]:
    """Victims on `node` (a copy: it is modified), with `state` a clone of the cycle state."""
    potential = [p for p in node.pods.values() if p.priority < pod.priority]
    for p in potential:
        node.remove_pod(p)
        st = handle.run_pre_filter_extension_remove_pod(state, pod, p, node)
        if not st.ok:
            return None, _as_error(st)
    if not potential:
        return None, Status.unresolvable(REASON_NO_VICTIMS)
    st = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
    if not st.ok:
        return None, st

    potential.sort(key=importance_key)
    violating, fine = split_by_pdb_violation(potential, pdbs)
    victims: list[PodInfo] = []

    def reprieve(p: PodInfo) -> bool:
        node.add_pod(p)
        st = handle.run_pre_filter_extension_add_pod(state, pod, p, node)
        if not st.ok:
            raise _ExtensionFailed(st)
        if handle.run_filter_plugins_with_nominated_pods(state, pod, node).ok:
            return True
        node.remove_pod(p)
        st = handle.run_pre_filter_extension_remove_pod(state, pod, p, node)
        if not st.ok:
            raise _ExtensionFailed(st)
        victims.append(p)
        return False

    violations = 0
    try:
        for p in violating:
            if not reprieve(p):
                violations += 1
        for p in fine:
            reprieve(p)
    except _ExtensionFailed as e:
        return None, _as_error(e.status)
    if violating and fine:
        victims.sort(key=importance_key)
    return Victims(victims, violations), Status.success()


class _ExtensionFailed(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def _as_error(st: Status) -> Status:
    return st if st.code == Code.ERROR else Status(Code.ERROR, list(st.reasons), st.plugin, st.error)
