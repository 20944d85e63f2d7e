"""NodeAffinity: spec.nodeSelector, required and preferred node affinity, addedAffinity.

Filter: the node must carry every nodeSelector label and match at least one
required node-affinity term (terms are ORed, requirements inside a term
ANDed); nodes failing the profile's addedAffinity are reported separately
("scheduler-enforced").  Both are UnschedulableAndUnresolvable.
PreFilter narrows the candidate nodes when every required term pins
metadata.name with matchFields In, as kube's PreFilterResult does.
Score: the sum of the weights of the preferred terms (the pod's and the
profile's) the node matches, normalised so the best node scores 100.

Batch form: a label requirement is evaluated once per distinct label value,
not per node: each label key gets a per-layout code column (row -> value
index), the requirement is checked on the value table, and the result is
looked up by code.  Masks are memoised per requirement and per pod
constraint set in snapshot.cache, so replicas of one workload pay a lookup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from netsched.framework import (
    NODE,
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    IntArray,
    NodeInfo,
    NodeSelector,
    NodeSelectorTerm,
    PodInfo,
    PreferredSchedulingTerm,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    Rejection,
    Requirement,
    ScorePlugin,
    Snapshot,
    Status,
    default_normalize_score,
    names,
)

from .args import NodeAffinityArgs

PRE_FILTER_KEY = "PreFilter" + names.NODE_AFFINITY
PRE_SCORE_KEY = "PreScore" + names.NODE_AFFINITY
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
NAME_FIELD = "metadata.name"
_MEMO_LIMIT = 1024

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class RequiredAffinity:
    """The pod's hard constraints: nodeSelector labels AND the required node selector (if any)."""

    node_selector: tuple[tuple[str, str], ...]
    selector: NodeSelector | None

    @classmethod
    def of(cls, pod: PodInfo) -> RequiredAffinity:
        return cls(tuple(sorted(pod.node_selector.items())), pod.required_node_affinity)

    @property
    def empty(self) -> bool:
        return not self.node_selector and self.selector is None

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        return self.selector is None or self.selector.matches(labels, node_name)


@dataclass(frozen=True, slots=True)
class _Preferred:
    terms: tuple[PreferredSchedulingTerm, ...]


def preferred_score(terms: tuple[PreferredSchedulingTerm, ...], node: NodeInfo) -> int:
    return sum(t.weight for t in terms if t.term.matches(node.labels, node.name))


def pinned_node_names(selector: NodeSelector | None) -> set[str] | None:
    """Node names the required terms allow through matchFields metadata.name In (None = not pinned).

    Each term's In lists intersect; the terms union; a term without one
    leaves every node possible.
    """
    if selector is None or not selector.terms:
        return None
    names: set[str] = set()
    for term in selector.terms:
        term_names: set[str] | None = None
        for r in term.match_fields:
            if r.key == NAME_FIELD and r.operator == "In":
                term_names = set(r.values) if term_names is None else term_names & set(r.values)
        if term_names is None:
            return None
        names |= term_names
    return names


@dataclass(slots=True)
class _LabelCodes:
    codes: IntArray  # row -> index into values, -1 where the label is absent
    values: list[str]


@dataclass(slots=True)
class _Masks:
    """Per-layout memo of full-length (one entry per snapshot row) masks."""

    labels: dict[str, _LabelCodes] = field(default_factory=dict)
    requirements: dict[Requirement, BoolArray] = field(default_factory=dict)
    terms: dict[NodeSelectorTerm, BoolArray] = field(default_factory=dict)
    required: dict[RequiredAffinity | NodeSelector, BoolArray] = field(default_factory=dict)
    preferred: dict[tuple[PreferredSchedulingTerm, ...], IntArray] = field(default_factory=dict)


def _memo_put(memo: dict[K, V], key: K, value: V) -> None:
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value


class _Evaluator:
    """Evaluates selectors over every row of one snapshot layout."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.n = len(snapshot.nodes)
        key = f"{names.NODE_AFFINITY}/masks@{snapshot.layout_version}"
        got = snapshot.cache.get(key)
        if not isinstance(got, _Masks):
            got = _Masks()
            snapshot.cache[key] = got
        self.memo = got

    def _codes(self, key: str) -> _LabelCodes:
        got = self.memo.labels.get(key)
        if got is None:
            index: dict[str, int] = {}
            codes = np.fromiter(
                (
                    -1 if (v := n.labels.get(key)) is None else index.setdefault(v, len(index))
                    for n in self.snapshot.nodes
                ),
                dtype=np.int64,
                count=self.n,
            )
            got = self.memo.labels[key] = _LabelCodes(codes, list(index))
        return got

    def requirement(self, req: Requirement, *, is_field: bool = False) -> BoolArray:
        got = self.memo.requirements.get(req) if not is_field else None
        if got is not None:
            return got
        if is_field:
            mask = np.zeros(self.n, dtype=bool)
            if not req.valid:
                return mask
            index = self.snapshot.index
            mask[np.array([index[v] for v in req.values if v in index], dtype=np.int64)] = True
            return ~mask if req.operator == "NotIn" else mask
        lc = self._codes(req.key)
        # The framework's own matcher, run once per distinct value; the last slot is "label absent".
        table = np.array([req.matches({req.key: v}) for v in lc.values] + [req.matches({})], dtype=bool)
        mask = table[lc.codes]
        _memo_put(self.memo.requirements, req, mask)
        return mask

    def term(self, term: NodeSelectorTerm) -> BoolArray:
        got = self.memo.terms.get(term)
        if got is not None:
            return got
        mask = np.zeros(self.n, dtype=bool)
        if term.match_expressions or term.match_fields:
            mask[:] = True
            for r in term.match_expressions:
                mask &= self.requirement(r)
            for r in term.match_fields:
                mask &= self.requirement(r, is_field=True)
        _memo_put(self.memo.terms, term, mask)
        return mask

    def selector(self, sel: NodeSelector) -> BoolArray:
        got = self.memo.required.get(sel)
        if got is not None:
            return got
        mask = np.zeros(self.n, dtype=bool)
        for t in sel.terms:
            mask |= self.term(t)
        _memo_put(self.memo.required, sel, mask)
        return mask

    def required(self, req: RequiredAffinity) -> BoolArray:
        got = self.memo.required.get(req)
        if got is not None:
            return got
        mask = np.ones(self.n, dtype=bool)
        for k, v in req.node_selector:
            mask &= self.requirement(Requirement(k, "In", (v,)))
        if req.selector is not None:
            mask &= self.selector(req.selector)
        _memo_put(self.memo.required, req, mask)
        return mask

    def preferred(self, terms: tuple[PreferredSchedulingTerm, ...]) -> IntArray:
        got = self.memo.preferred.get(terms)
        if got is not None:
            return got
        scores = np.zeros(self.n, dtype=np.int64)
        for t in terms:
            scores += np.where(self.term(t.term), t.weight, 0)
        _memo_put(self.memo.preferred, terms, scores)
        return scores


class NodeAffinity(
    PreFilterPlugin[NodeAffinityArgs],
    FilterPlugin[NodeAffinityArgs],
    PreScorePlugin[NodeAffinityArgs],
    ScorePlugin[NodeAffinityArgs],
):
    name = names.NODE_AFFINITY

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A node added, or relabelled so that it now matches the pod's required affinity and the
        profile's addedAffinity together."""
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._node_now_matches
            )
        ]

    def _node_now_matches(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """kube's hint, except that "matched before" counts addedAffinity too: a relabel that makes a
        node match the profile's addedAffinity can help a pod whose own terms matched all along."""
        req = RequiredAffinity.of(pod)

        def admits(node: Any) -> bool:
            if self.args.added_required is not None and not self.args.added_required.matches(
                node.labels, node.name
            ):
                return False
            return req.matches(node.labels, node.name)

        if not admits(new):
            return QueueingHint.SKIP
        if old is not None and admits(old):
            return QueueingHint.SKIP  # admitted before as well: this change is not what helps
        return QueueingHint.QUEUE

    # ------------------------------------------------------------ filter

    def _required(self, state: CycleState, pod: PodInfo) -> RequiredAffinity:
        got = state.get(PRE_FILTER_KEY)
        return got if isinstance(got, RequiredAffinity) else RequiredAffinity.of(pod)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        req = RequiredAffinity.of(pod)
        if req.empty and self.args.added_required is None:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, req)
        names = pinned_node_names(req.selector)
        if names is None:
            return None, Status.success()
        if not names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT, plugin=self.name)
        return PreFilterResult(names), Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if self.args.added_required is not None and not self.args.added_required.matches(
            node.labels, node.name
        ):
            return Status.unresolvable(ERR_REASON_ENFORCED)
        if not self._required(state, pod).matches(node.labels, node.name):
            return Status.unresolvable(ERR_REASON_POD)
        return Status.success()

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        req = self._required(state, pod)
        if req.empty and self.args.added_required is None:
            return []
        ev = _Evaluator(snapshot)
        out = []
        passed = np.ones(len(idx), dtype=bool)
        if self.args.added_required is not None:
            passed = ev.selector(self.args.added_required)[idx]
            if not passed.all():
                out.append(Rejection(~passed, (ERR_REASON_ENFORCED,), Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        if not req.empty:
            failed = passed & ~ev.required(req)[idx]
            if failed.any():
                out.append(Rejection(failed, (ERR_REASON_POD,), Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        return out

    # ------------------------------------------------------------ score

    def _preferred(self, state: CycleState, pod: PodInfo) -> tuple[PreferredSchedulingTerm, ...]:
        got = state.get(PRE_SCORE_KEY)
        return (
            got.terms
            if isinstance(got, _Preferred)
            else self.args.added_preferred + pod.preferred_node_affinity
        )

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        terms = self.args.added_preferred + pod.preferred_node_affinity
        if not terms:
            return Status.skip()
        state.write(PRE_SCORE_KEY, _Preferred(terms))
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return preferred_score(self._preferred(state, pod), node)

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        terms = self._preferred(state, pod)
        if not terms:
            return np.zeros(len(idx), dtype=np.int64)
        return _Evaluator(snapshot).preferred(terms)[idx]

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        default_normalize_score(scores)
