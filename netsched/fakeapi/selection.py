"""Label and field selectors for the fake Kubernetes API server.

The scheduler narrows its lists and watches with selectors (unassigned pods by
spec.nodeName, its own pods by spec.schedulerName), so the fake must filter the
way the real API server does, including the odd cases: `!=` and `notin` also
match objects that do not have the key at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Matcher = Callable[[Mapping[str, Any]], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\((.*)\)\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")
_EQ_RE = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*(.*?)\s*$")


class SelectorError(ValueError):
    """A selector string the real API server would reject with 400 BadRequest."""


def match_all(_obj: Mapping[str, Any]) -> bool:
    return True


def _split_requirements(selector: str) -> list[str]:
    """Split on commas that are not inside the parentheses of an `in (...)` set."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _label_requirement(text: str) -> Callable[[Mapping[str, str]], bool]:
    if m := _SET_RE.match(text):
        key, op = m.group(1), m.group(2)
        values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _EQ_RE.match(text):
        key, op, value = m.group(1), m.group(2), m.group(3)
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _EXISTS_RE.match(text):
        negate, key = m.group(1) == "!", m.group(2)
        if negate:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise SelectorError(f"unable to parse requirement: {text!r}")


def label_matcher(selector: str) -> Matcher:
    """Compile a labelSelector query value; every requirement must hold."""
    requirements = [_label_requirement(part) for part in _split_requirements(selector)]
    if not requirements:
        return match_all

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(req(labels) for req in requirements)

    return matches


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """Read a dotted field path; a missing field selects as the empty string, as upstream."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _field_requirement(text: str) -> Callable[[Mapping[str, Any]], bool]:
    m = _EQ_RE.match(text)
    if m is None:
        raise SelectorError(f"invalid field selector: {text!r}")
    path, op, value = m.group(1), m.group(2), m.group(3)
    if op == "!=":
        return lambda obj: field_value(obj, path) != value
    return lambda obj: field_value(obj, path) == value


def field_matcher(selector: str) -> Matcher:
    """Compile a fieldSelector query value.

    Any dotted path is accepted (the real server allows only a per-kind list);
    being lenient keeps the fake small and never hides a client bug that matters.
    """
    requirements = [_field_requirement(part) for part in _split_requirements(selector)]
    if not requirements:
        return match_all
    return lambda obj: all(req(obj) for req in requirements)


def selector_matcher(label_selector: str = "", field_selector: str = "") -> Matcher:
    """One predicate for both selectors; raises SelectorError on bad syntax."""
    labels = label_matcher(label_selector)
    fields = field_matcher(field_selector)
    if labels is match_all:
        return fields
    if fields is match_all:
        return labels
    return lambda obj: labels(obj) and fields(obj)
