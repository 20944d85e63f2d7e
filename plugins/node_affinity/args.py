"""NodeAffinityArgs: addedAffinity, a node affinity every pod of the profile gets.

It is a v1 NodeAffinity object: `requiredDuringSchedulingIgnoredDuringExecution`
(a NodeSelector ANDed with each pod's own constraints) and
`preferredDuringSchedulingIgnoredDuringExecution` (weighted terms added to
each pod's preferred terms).  It is parsed with the same code as pod specs,
so a bad operator or key is reported with its full field path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsched.framework import (
    FieldError,
    Fields,
    NodeSelector,
    NodeSelectorTerm,
    PluginArgs,
    PodParseError,
    PreferredSchedulingTerm,
    join,
    parse_node_selector,
)

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_KINDS = ("Required value", "Unsupported value", "Invalid value")


@dataclass(frozen=True)
class NodeAffinityArgs(PluginArgs):
    added_required: NodeSelector | None = None
    added_preferred: tuple[PreferredSchedulingTerm, ...] = ()
    raw: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def decode(cls, fields: Fields) -> NodeAffinityArgs:
        if not fields.has("addedAffinity"):
            fields.finish()
            return cls()
        raw = fields.any("addedAffinity")
        aff = fields.sub("addedAffinity")
        required = None
        if aff.has(REQUIRED):
            required = _required(aff.any(REQUIRED), join(aff.path, REQUIRED), aff)
        preferred = []
        for item in aff.items(PREFERRED):
            term = _preferred(item)
            if term is not None:
                preferred.append(term)
        aff.finish()
        fields.finish()
        return cls(required, tuple(preferred), raw if isinstance(raw, dict) else None)

    def encode(self) -> dict[str, Any]:
        return {"addedAffinity": self.raw} if self.raw else {}


def _report(fields: Fields, e: PodParseError) -> None:
    for kind in _KINDS:
        if e.detail.startswith(kind):
            fields.errs.append(FieldError(e.path, kind, e.detail[len(kind) :].lstrip(": ")))
            return
    fields.errs.append(FieldError(e.path, "Invalid value", e.detail))


def _required(obj: Any, path: str, fields: Fields) -> NodeSelector | None:
    try:
        sel = parse_node_selector(obj, path)
    except PodParseError as e:
        _report(fields, e)
        return None
    if sel is not None and not sel.terms:
        fields.errs.required(join(path, "nodeSelectorTerms"), "must have at least one node selector term")
    return sel


def parse_term(obj: Any, path: str) -> NodeSelectorTerm:
    """One NodeSelectorTerm at `path` (the framework parses terms only inside a NodeSelector)."""
    inner = ".nodeSelectorTerms[0]"
    try:
        sel = parse_node_selector({"nodeSelectorTerms": [obj]}, "")
    except PodParseError as e:
        where = path + e.path[len(inner) :] if e.path.startswith(inner) else path
        raise PodParseError(where, e.detail) from e
    assert sel is not None
    return sel.terms[0]


def _preferred(item: Fields) -> PreferredSchedulingTerm | None:
    weight = item.int("weight", 0)
    if not 1 <= weight <= 100:
        item.errs.invalid(join(item.path, "weight"), weight, "must be in the range 1-100")
    pref_path = join(item.path, "preference")
    try:
        term = parse_term(item.any("preference"), pref_path)
    except PodParseError as e:
        _report(item, e)
        term = None
    item.finish()
    if term is None or not 1 <= weight <= 100:
        return None
    return PreferredSchedulingTerm(weight, term)
