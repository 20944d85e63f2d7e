"""Label selectors and node selectors: parsed once, matched many times.

Pods carry these in nodeSelector, node affinity, pod (anti-)affinity and
topology spread constraints.  They are validated when the pod is parsed (an
unknown operator is the pod's fault and is reported on the pod), so matching
never has to deal with malformed input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# kube's qualified name "[prefix/]name": the name part, and the prefix (a DNS-1123 subdomain).
QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_value_error(value: str) -> str:
    """Why `value` is not a valid label value (kube's IsValidLabelValue), or "" if it is."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return ""


def label_key_errors(key: str) -> list[str]:
    """Why `key` is not a valid label key (kube's ValidateLabelName), empty when it is."""
    if not key:
        return []
    prefix, _, name = key.rpartition("/")
    out = []
    if "/" in key and not prefix:
        out.append("prefix part must be non-empty")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        out.append("prefix part must be a lowercase RFC 1123 subdomain")
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    elif not QUALIFIED_NAME_PART.match(name):
        out.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return out


@dataclass(slots=True, frozen=True)
class Requirement:
    """One key/operator/values clause (labels or node fields)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    # False when kube's labels.NewRequirement would refuse the clause (e.g. a value that is
    # not a valid label value): the API server accepts such node-affinity terms, and kube's
    # scheduler then lets the whole term match no node.  Set by the parser.
    valid: bool = True

    def matches(self, labels: Mapping[str, str]) -> bool:
        if not self.valid:
            return False
        op = self.operator
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op in ("Gt", "Lt"):
            raw = labels.get(self.key)
            if raw is None:
                return False
            try:
                have, want = int(raw), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


@dataclass(slots=True, frozen=True)
class LabelSelector:
    """metav1.LabelSelector. An empty selector matches everything; a missing one (None) nothing."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for k, v in self.match_labels:
            if labels.get(k) != v:
                return False
        return all(r.matches(labels) for r in self.match_expressions)

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions


@dataclass(slots=True, frozen=True)
class NodeSelectorTerm:
    """Requirements ANDed together; matchFields only supports metadata.name."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        # An empty term matches no objects (kube semantics).
        if not self.match_expressions and not self.match_fields:
            return False
        if not all(r.matches(labels) for r in self.match_expressions):
            return False
        fields = {"metadata.name": node_name}
        return all(r.matches(fields) for r in self.match_fields)


@dataclass(slots=True, frozen=True)
class NodeSelector:
    """Terms ORed together."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)


@dataclass(slots=True, frozen=True)
class PreferredSchedulingTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(slots=True, frozen=True)
class PodAffinityTerm:
    """One (anti-)affinity term. namespaces empty and namespace_selector None mean the pod's own namespace."""

    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(slots=True, frozen=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    label_selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"  # Honor | Ignore
    node_taints_policy: str = "Ignore"  # Honor | Ignore
    match_label_keys: tuple[str, ...] = ()
