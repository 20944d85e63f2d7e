"""PodTopologySpreadArgs: kube's PodTopologySpreadArgs (v1), same defaults and validation.

defaultingType "System" (the default) applies kube's built-in defaults to
pods without their own constraints: maxSkew 3 over kubernetes.io/hostname and
maxSkew 5 over topology.kubernetes.io/zone, both ScheduleAnyway.  "List"
applies `defaultConstraints` instead (none when the list is empty).  Default
constraints carry no labelSelector: it is derived per pod (see constraints.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import (
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    Fields,
    PluginArgs,
    TopologySpreadConstraint,
    join,
    label_key_errors,
)

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
DEFAULTING_TYPES = (SYSTEM_DEFAULTING, LIST_DEFAULTING)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
WHEN_UNSATISFIABLE = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
POLICIES = ("Honor", "Ignore")

SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(
        max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY, label_selector=None
    ),
    TopologySpreadConstraint(
        max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY, label_selector=None
    ),
)


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs(PluginArgs):
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    @property
    def effective_defaults(self) -> tuple[TopologySpreadConstraint, ...]:
        """The constraints applied to pods without their own."""
        if self.defaulting_type == SYSTEM_DEFAULTING:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return self.default_constraints

    @classmethod
    def decode(cls, fields: Fields) -> PodTopologySpreadArgs:
        defaulting = fields.str("defaultingType", SYSTEM_DEFAULTING, choices=DEFAULTING_TYPES)
        constraints = tuple(_decode_constraint(f) for f in fields.items("defaultConstraints"))
        if defaulting == SYSTEM_DEFAULTING and constraints:
            fields.errs.invalid(
                join(fields.path, "defaultingType"), defaulting, "when .defaultConstraints are not empty"
            )
        base = join(fields.path, "defaultConstraints")
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(constraints):
            key = (c.topology_key, c.when_unsatisfiable)
            if c.topology_key and key in seen:
                fields.errs.duplicate(join(base, i), f"{{{c.topology_key}, {c.when_unsatisfiable}}}")
            seen.add(key)
        fields.finish()
        return cls(constraints, defaulting)

    def encode(self) -> dict[str, Any]:
        return {
            "defaultingType": self.defaulting_type,
            "defaultConstraints": [_encode_constraint(c) for c in self.default_constraints],
        }


def _decode_constraint(f: Fields) -> TopologySpreadConstraint:
    errs, p = f.errs, f.path
    max_skew = f.int("maxSkew", 0)
    if max_skew <= 0:
        errs.invalid(join(p, "maxSkew"), max_skew, "not in valid range")
    key = f.str("topologyKey", "")
    if not key:
        errs.required(join(p, "topologyKey"), "can not be empty")
    for msg in label_key_errors(key):
        errs.invalid(join(p, "topologyKey"), key, msg)
    when = f.str("whenUnsatisfiable", "")
    if not when:
        errs.required(join(p, "whenUnsatisfiable"), "can not be empty")
    elif when not in WHEN_UNSATISFIABLE:
        errs.unsupported(join(p, "whenUnsatisfiable"), when, WHEN_UNSATISFIABLE)
    if f.has("labelSelector"):
        f.any("labelSelector")
        errs.forbidden(
            join(p, "labelSelector"), "constraint must not define a selector, as they deduced for each pod"
        )
    min_domains: int | None = None
    if f.has("minDomains"):
        min_domains = f.int("minDomains", 1)
        if min_domains <= 0:
            errs.invalid(join(p, "minDomains"), min_domains, "must be greater than zero")
            min_domains = None
    affinity_policy = f.str("nodeAffinityPolicy", "Honor", choices=POLICIES)
    taints_policy = f.str("nodeTaintsPolicy", "Ignore", choices=POLICIES)
    match_keys = []
    for i, k in enumerate(f.list("matchLabelKeys")):
        if isinstance(k, str) and k:
            match_keys.append(k)
        else:
            errs.invalid(join(join(p, "matchLabelKeys"), i), k, "must be a label key")
    f.finish()
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=when,
        label_selector=None,
        min_domains=min_domains,
        node_affinity_policy=affinity_policy,
        node_taints_policy=taints_policy,
        match_label_keys=tuple(match_keys),
    )


def _encode_constraint(c: TopologySpreadConstraint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "maxSkew": c.max_skew,
        "topologyKey": c.topology_key,
        "whenUnsatisfiable": c.when_unsatisfiable,
    }
    if c.min_domains is not None:
        out["minDomains"] = c.min_domains
    if c.node_affinity_policy != "Honor":
        out["nodeAffinityPolicy"] = c.node_affinity_policy
    if c.node_taints_policy != "Ignore":
        out["nodeTaintsPolicy"] = c.node_taints_policy
    if c.match_label_keys:
        out["matchLabelKeys"] = list(c.match_label_keys)
    return out
