"""A topology level's domains over the snapshot: the nodes of each, and whether it can hold a gang.

A domain is the nodes sharing one value of a level's node label
(`kubernetes.io/hostname`: every node its own).  The grouping is computed once
per snapshot layout and cached on the snapshot; each decision then gets every
domain's fullness and, when its nodes together have too little free room for
the members, the reason, so a domain that cannot win is never simulated.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    CPU,
    LABEL_HOSTNAME,
    MEMORY,
    PODS,
    IntArray,
    PodInfo,
    Snapshot,
    format_canonical,
    label_codes,
)


@dataclass(frozen=True, slots=True)
class Domain:
    """One candidate domain of one decision (the generation phase): its rows, its fullness,
    and why it is out before any placement is tried ("" when it may hold the gang)."""

    code: int
    value: str
    rows: IntArray
    fullness: float
    reason: str = ""


@dataclass(frozen=True, slots=True)
class _Grouping:
    """A level's domains over the snapshot rows: their values and rows, sorted by value."""

    values: tuple[str, ...]
    rows: tuple[IntArray, ...]
    order: IntArray  # every grouped row, domain after domain
    starts: IntArray  # where each domain begins in `order`


def _grouping(snapshot: Snapshot, level: str) -> _Grouping:
    """Cached per layout (snapshot.cache is cleared when rows or labels change)."""
    key = f"gangs/domains:{level}"
    got = snapshot.cache.get(key)
    if isinstance(got, _Grouping):
        return got
    if level == LABEL_HOSTNAME:
        codes = np.arange(len(snapshot), dtype=np.int64)
        values: Sequence[str] = [node.name for node in snapshot.nodes]
    else:
        lc = label_codes(snapshot, level)
        codes, values = lc.codes, lc.values
    rows = np.flatnonzero(codes >= 0)
    by_value = sorted(set(codes[rows].tolist()), key=lambda c: values[c])
    rank = np.full(len(values), -1, dtype=np.int64)
    rank[by_value] = np.arange(len(by_value))
    order = rows[np.argsort(rank[codes[rows]], kind="stable")]
    keys = rank[codes[order]]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(order) else np.zeros(0, dtype=np.int64)
    got = _Grouping(
        tuple(values[c] for c in by_value),
        tuple(np.split(order, starts[1:])) if len(order) else (),
        order,
        starts,
    )
    snapshot.cache[key] = got
    return got


def domains_at(snapshot: Snapshot, level: str, order: Sequence[PodInfo]) -> list[Domain]:
    """The level's domains, sorted by label value, each with its fullness and, when its free
    room (all its nodes together) cannot hold the members, why."""
    g = _grouping(snapshot, level)
    if not g.values:
        return []
    alloc_rows = snapshot.allocatable[g.order]
    req_rows = snapshot.requested[g.order]
    free = np.add.reduceat((alloc_rows - req_rows).clip(min=0), g.starts, axis=0)
    cols = [snapshot.col[r] for r in (CPU, MEMORY)]
    alloc = np.add.reduceat(alloc_rows[:, cols], g.starts, axis=0)
    req = np.add.reduceat(req_rows[:, cols], g.starts, axis=0)
    full = np.zeros((len(g.values), 2))
    np.divide(req, alloc, out=full, where=alloc > 0)
    fullness = full.mean(axis=1)
    want = wanted(order)
    need = np.array([want.get(r, 0) for r in snapshot.resources])
    missing = any(r not in snapshot.col for r in want)  # a resource no node has
    short = np.asarray((free < need).any(axis=1), dtype=bool) | missing
    return [
        Domain(
            k,
            value,
            rows,
            float(fullness[k]),
            reason=_too_small(want, snapshot, free[k]) if short[k] else "",
        )
        for k, (value, rows) in enumerate(zip(g.values, g.rows, strict=True))
    ]


def wanted(order: Sequence[PodInfo]) -> dict[str, int]:
    want: dict[str, int] = {PODS: len(order)}
    for p in order:
        for r, v in p.requests.items():
            want[r] = want.get(r, 0) + v
    return want


def _too_small(want: dict[str, int], snapshot: Snapshot, free: IntArray) -> str:
    """Why a domain's free room (its nodes together) cannot hold the members, "" if it can."""
    short = []
    for r, amount in sorted(want.items()):
        col = snapshot.col.get(r)
        have = int(free[col]) if col is not None else 0
        if have < amount:
            short.append(f"{format_canonical(r, have)} of {format_canonical(r, amount)} {r} free")
    return f"too small: {', '.join(short)}" if short else ""


def domain_rows(snapshot: Snapshot, level: str, value: str) -> IntArray:
    """The rows of the level's domain `value` (none when no node has it), from the cached
    grouping: no fullness or room computed for the level's other domains."""
    g = _grouping(snapshot, level)
    k = bisect.bisect_left(g.values, value)
    if k < len(g.values) and g.values[k] == value:
        return g.rows[k]
    return np.zeros(0, dtype=np.int64)


def domain_of(snapshot: Snapshot, level: str, row: int) -> str | None:
    node = snapshot.nodes[row]
    return node.name if level == LABEL_HOSTNAME else node.labels.get(level)
