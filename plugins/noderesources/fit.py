"""NodeResourcesFit: does the pod fit the node's free resources, and how full would it be.

Filter compares the pod's effective requests with allocatable minus what is
already requested on the node: one "Insufficient <resource>" reason per short
resource (plus "Too many pods" when the pod count is at the node's limit).
A node that could never hold the request, even empty, is marked
UnschedulableAndUnresolvable so preemption does not try it (kube >= 1.34, kubernetes#131345).

Score applies the configured strategy (see scoring.py) to cpu/memory
(non-zero requests, so pods without requests still spread) and any other
configured resource.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.framework import (
    ASSIGNED_POD,
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NODE,
    PODS,
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    IntArray,
    NodeInfo,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    Rejection,
    ScorePlugin,
    Snapshot,
    Status,
    names,
)

from .args import NodeResourcesFitArgs
from .resources import (
    is_extended,
    is_scalar,
    node_pair,
    pod_score_request,
    table_pair,
)
from .scoring import strategy_for

PRE_FILTER_KEY = "PreFilter" + names.NODE_RESOURCES_FIT
PRE_SCORE_KEY = "PreScore" + names.NODE_RESOURCES_FIT
TOO_MANY_PODS = "Too many pods"
_FIRST_CLASS = (CPU, MEMORY, EPHEMERAL_STORAGE)


@dataclass(frozen=True, slots=True)
class FitRequest:
    """The requests Filter checks, in kube's reason order: cpu, memory, ephemeral-storage, then scalars."""

    checks: tuple[tuple[str, int], ...]
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ScoreRequest:
    """The pod's request per configured scoring resource."""

    amounts: tuple[int, ...]


class NodeResourcesFit(
    PreFilterPlugin[NodeResourcesFitArgs],
    FilterPlugin[NodeResourcesFitArgs],
    PreScorePlugin[NodeResourcesFitArgs],
    ScorePlugin[NodeResourcesFitArgs],
):
    name = names.NODE_RESOURCES_FIT

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node added or grown, or an assigned pod freeing what this pod asks for (kube v1.31)."""
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), _fits_node
            ),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), _frees_requested),
        ]

    def __init__(self, args: NodeResourcesFitArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.ignored = frozenset(self.args.ignored_resources)
        self.ignored_groups = frozenset(self.args.ignored_resource_groups)
        self.strategy = strategy_for(self.args)
        self.score_resources = tuple(r.name for r in self.args.resources)

    # ------------------------------------------------------------ filter

    def fit_request(self, pod: PodInfo) -> FitRequest:
        checks = [(r, pod.requests.get(r, 0)) for r in _FIRST_CLASS]
        for r in sorted(pod.requests):
            if r in _FIRST_CLASS or not is_scalar(r) or self._ignored(r):
                continue
            checks.append((r, pod.requests[r]))
        kept = tuple((r, v) for r, v in checks if v > 0)
        return FitRequest(kept, tuple(f"Insufficient {r}" for r, _ in kept))

    def _ignored(self, resource: str) -> bool:
        if not is_extended(resource):
            return False
        return resource in self.ignored or resource.split("/", 1)[0] in self.ignored_groups

    def _state(self, state: CycleState, pod: PodInfo) -> FitRequest:
        got = state.get(PRE_FILTER_KEY)
        if isinstance(got, FitRequest):
            return got
        return self.fit_request(pod)  # PreFilter disabled or not run (e.g. a what-if check)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(PRE_FILTER_KEY, self.fit_request(pod))
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        req = self._state(state, pod)
        reasons: list[str] = []
        unresolvable = False
        if len(node.pods) + 1 > node.allocatable.get(PODS, 0):
            reasons.append(TOO_MANY_PODS)
        for (resource, amount), reason in zip(req.checks, req.reasons, strict=True):
            alloc = node.allocatable.get(resource, 0)
            if amount > alloc - node.requested.get(resource, 0):
                reasons.append(reason)
                unresolvable |= amount > alloc
        if not reasons:
            return Status.success()
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return Status(code, reasons)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        req = self._state(state, pod)
        alloc, used, col = snapshot.allocatable, snapshot.requested, snapshot.col
        n = len(idx)
        p = col[PODS]
        # Whole-column compares, then one boolean gather each: cheaper than gathering operands.
        fails: list[BoolArray] = [(used[:, p] >= alloc[:, p])[idx]]
        cols: list[int | None] = []
        for resource, amount in req.checks:
            c = col.get(resource)
            cols.append(c)
            fails.append(np.ones(n, dtype=bool) if c is None else (alloc[:, c] - used[:, c] < amount)[idx])
        any_fail = fails[0].copy()
        for f in fails[1:]:
            any_fail |= f
        if not any_fail.any():
            return []
        rows = np.flatnonzero(any_fail)
        unres = np.zeros(len(rows), dtype=bool)
        for (_, amount), c, f in zip(req.checks, cols, fails[1:], strict=True):
            short = f[rows]
            if c is None:
                unres |= short
            elif short.any():
                unres |= short & (alloc[:, c][idx[rows]] < amount)
        return _group(n, rows, [f[rows] for f in fails], unres, (TOO_MANY_PODS, *req.reasons))

    # ------------------------------------------------------------ score

    def _score_request(self, state: CycleState, pod: PodInfo) -> ScoreRequest:
        got = state.get(PRE_SCORE_KEY)
        if isinstance(got, ScoreRequest):
            return got
        return ScoreRequest(
            tuple(pod_score_request(pod, r, use_requested=False) for r in self.score_resources)
        )

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        state.write(PRE_SCORE_KEY, self._score_request(state, pod))
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        amounts = self._score_request(state, pod).amounts
        pairs = [
            node_pair(node, r, a, use_requested=False)
            for r, a in zip(self.score_resources, amounts, strict=True)
        ]
        return self.strategy.node_score([p[0] for p in pairs], [p[1] for p in pairs])

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        amounts = self._score_request(state, pod).amounts
        pairs = [
            table_pair(snapshot, idx, r, a, use_requested=False)
            for r, a in zip(self.score_resources, amounts, strict=True)
        ]
        return self.strategy.batch_scores(pairs, len(idx))


def _group(
    n: int, rows: IntArray, fails: list[BoolArray], unres: BoolArray, reasons: tuple[str, ...]
) -> list[Rejection]:
    """One Rejection per distinct (set of failed checks, resolvable or not) among the failing rows."""
    key = unres.astype(np.int64) << len(fails)
    for bit, f in enumerate(fails):
        key |= f.astype(np.int64) << bit
    out = []
    for k in np.unique(key).tolist():
        mask = np.zeros(n, dtype=bool)
        mask[rows[key == k]] = True
        why = tuple(r for bit, r in enumerate(reasons) if k >> bit & 1)
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if k >> len(fails) & 1 else Code.UNSCHEDULABLE
        out.append(Rejection(mask, why, code))
    return out


def _fits_node(pod: PodInfo, _old: Any, new: Any) -> QueueingHint:
    """Queue if the pod's requests fit the node's allocatable at all (pods already there aside)."""
    alloc = new.allocatable
    fits = all(amount <= alloc.get(name, 0) for name, amount in pod.requests.items() if amount > 0)
    return QueueingHint.QUEUE if fits else QueueingHint.SKIP


def _frees_requested(pod: PodInfo, old: Any, _new: Any) -> QueueingHint:
    """Queue on the deletion of any assigned pod: it frees at least a pod slot (kube v1.31)."""
    return QueueingHint.QUEUE if old is not None and old.node_name else QueueingHint.SKIP
