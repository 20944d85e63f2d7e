"""Pod (anti-)affinity terms in the form matching needs, and namespace selection.

A term names the pods it selects by namespace and labels.  Compiling it once
per pod resolves what kube resolves when it builds its AffinityTerm: the
default namespace (the owner's, when neither namespaces nor namespaceSelector
is given) and matchLabelKeys / mismatchLabelKeys, which become `key In (v)` /
`key NotIn (v)` requirements with the owner's own label values.  (The API
server merges them into labelSelector on newer clusters; applying them again
is idempotent.)

namespaceSelector needs namespace labels: the Handle's
`namespace_labels(ns) -> Mapping | None` (the scheduler watches namespaces).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from netsched.framework import (
    Handle,
    LabelSelector,
    PodAffinityTerm,
    PodInfo,
    Requirement,
    WeightedPodAffinityTerm,
)

NamespaceLabelsLookup = Callable[[str], Mapping[str, str] | None]


@dataclass(slots=True, frozen=True)
class Term:
    selector: LabelSelector | None  # None selects no pod (kube: a missing labelSelector)
    topology_key: str
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    weight: int = 1

    @property
    def fixed_namespaces(self) -> frozenset[str] | None:
        """The namespaces this term can select, or None when a namespace selector widens it."""
        return self.namespaces if self.namespace_selector is None else None

    @property
    def cacheable(self) -> bool:
        """Whether which pods match can be remembered across cycles (no namespace-label lookup)."""
        return self.namespace_selector is None or self.namespace_selector.empty


@dataclass(slots=True, frozen=True)
class PodTerms:
    required_affinity: tuple[Term, ...]
    required_anti_affinity: tuple[Term, ...]
    preferred_affinity: tuple[Term, ...]
    preferred_anti_affinity: tuple[Term, ...]


def compile_term(owner: PodInfo, term: PodAffinityTerm, weight: int = 1) -> Term:
    selector = term.label_selector
    if selector is not None and (term.match_label_keys or term.mismatch_label_keys):
        extra = tuple(
            Requirement(k, "In", (owner.labels[k],)) for k in term.match_label_keys if k in owner.labels
        )
        extra += tuple(
            Requirement(k, "NotIn", (owner.labels[k],)) for k in term.mismatch_label_keys if k in owner.labels
        )
        if extra:
            selector = LabelSelector(selector.match_labels, selector.match_expressions + extra)
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((owner.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    return Term(selector, term.topology_key, namespaces, term.namespace_selector, weight)


def compile_required(owner: PodInfo, terms: tuple[PodAffinityTerm, ...]) -> tuple[Term, ...]:
    return tuple(compile_term(owner, t) for t in terms)


def compile_preferred(owner: PodInfo, terms: tuple[WeightedPodAffinityTerm, ...]) -> tuple[Term, ...]:
    return tuple(compile_term(owner, t.term, t.weight) for t in terms)


def pod_terms(pod: PodInfo) -> PodTerms:
    return PodTerms(
        compile_required(pod, pod.required_affinity),
        compile_required(pod, pod.required_anti_affinity),
        compile_preferred(pod, pod.preferred_affinity),
        compile_preferred(pod, pod.preferred_anti_affinity),
    )


class NamespaceLabels:
    """Namespace labels for namespaceSelector, looked up at most once per namespace per cycle."""

    __slots__ = ("_lookup", "_memo")

    def __init__(self, lookup: NamespaceLabelsLookup) -> None:
        self._lookup = lookup
        self._memo: dict[str, Mapping[str, str]] = {}

    @classmethod
    def of(cls, handle: Handle) -> NamespaceLabels:
        return cls(handle.namespace_labels)

    def matches(self, selector: LabelSelector, namespace: str) -> bool:
        if selector.empty:
            return True
        labels = self._memo.get(namespace)
        if labels is None:
            labels = self._memo[namespace] = self._lookup(namespace) or {}
        return selector.matches(labels)


def term_matches(term: Term, namespace: str, labels: Mapping[str, str], nsl: NamespaceLabels) -> bool:
    """Whether a pod in `namespace` with `labels` is selected by the term."""
    if term.selector is None:
        return False
    if namespace not in term.namespaces and (
        term.namespace_selector is None or not nsl.matches(term.namespace_selector, namespace)
    ):
        return False
    return term.selector.matches(labels)


def matches_all(
    terms: tuple[Term, ...], namespace: str, labels: Mapping[str, str], nsl: NamespaceLabels
) -> bool:
    """kube's podMatchesAllAffinityTerms: false for no terms."""
    return bool(terms) and all(term_matches(t, namespace, labels, nsl) for t in terms)
