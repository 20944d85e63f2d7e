"""Traffic between workloads in a scenario: what crosses which NIC, and what the mesh reports.

The `traffic:` section lists workload pairs with their rate (both directions
together, as a mesh's sent + received bytes count it):

    traffic:
      workloadLabel: app.kubernetes.io/name     # how pods name their workload (default: the owner)
      pairs:
        - {source: frontend, destination: api, rate: 80Mbit}
        - {source: shop/api, destination: shop/db, rate: 40Mbit}   # namespace/name; default "default"

A pair's rate is shared evenly among the pod pairs of its two workloads.  A
flow between pods on different nodes crosses both NICs, half of it each way;
on one node it crosses none.  So a node's link load is its background plus
every flow crossing its NIC under the current placement, and each placement
changes what the next poll sees.  The pair series the simulated Prometheus
answers carry a pair's rate once both workloads have running pods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.framework.fields import Fields, join
from netsched.framework.selectors import label_key_errors
from netsched.framework.snapshot import FloatArray
from netsched.simulate.units import bits_per_second, shown

_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Pair:
    a: str  # workload keys "namespace/name"
    b: str
    rate: float  # bytes/s, both directions together


@dataclass(frozen=True, slots=True)
class Traffic:
    pairs: tuple[Pair, ...] = ()
    workload_label: str = ""

    def __bool__(self) -> bool:
        return bool(self.pairs)


def decode_traffic(f: Fields) -> Traffic:
    label = f.str("workloadLabel", "")
    problems = label_key_errors(label) if label else []
    if problems:
        f.errs.invalid(join(f.path, "workloadLabel"), label, "; ".join(problems))
    pairs: list[Pair] = []
    path = join(f.path, "pairs")
    for i, raw in enumerate(f.list("pairs")):
        p = join(path, i)
        if not isinstance(raw, dict):
            f.errs.invalid(p, shown(raw), "must be a mapping {source, destination, rate}")
            continue
        got = _pair(Fields(raw, p, f.errs))
        if got is not None:
            pairs.append(got)
    f.finish()
    return Traffic(tuple(pairs), label)


def _pair(f: Fields) -> Pair | None:
    ends = []
    for key in ("source", "destination"):
        name = f.str(key, "")
        if not _NAME.match(name):
            f.errs.invalid(join(f.path, key), name, "must be a workload name, or namespace/name")
            return None
        ends.append(name if "/" in name else f"default/{name}")
    raw = f.any("rate")
    try:
        rate = bits_per_second(raw) / 8
    except ValueError as e:
        f.errs.invalid(join(f.path, "rate"), shown(raw), str(e))
        return None
    f.finish()
    if rate <= 0:
        f.errs.invalid(join(f.path, "rate"), shown(raw), "must be > 0")
        return None
    if ends[0] == ends[1]:
        f.errs.invalid(join(f.path, "destination"), ends[1], "must differ from source")
        return None
    return Pair(ends[0], ends[1], rate)


@dataclass
class Counts:
    """Pods per workload per node (weights: a pod still ramping up counts in part)."""

    per_node: dict[str, FloatArray] = field(default_factory=dict)

    def of(self, workload: str, n: int) -> FloatArray:
        return self.per_node.get(workload, np.zeros(n))


def counts(workloads: Sequence[str], rows: Sequence[int], weights: FloatArray, n: int) -> Counts:
    out: dict[str, FloatArray] = {}
    for wl, row, w in zip(workloads, rows, weights.tolist(), strict=True):
        if wl and w > 0:
            out.setdefault(wl, np.zeros(n))[row] += w
    return Counts(out)


def nic_load(traffic: Traffic, c: Counts, n: int) -> FloatArray:
    """Bytes/s each way every node's NIC carries for the pairs' flows."""
    load = np.zeros(n)
    for p in traffic.pairs:
        ca, cb = c.of(p.a, n), c.of(p.b, n)
        na, nb = float(ca.sum()), float(cb.sum())
        if na <= 0 or nb <= 0:
            continue
        crossing = (ca * (nb - cb) + cb * (na - ca)) * (p.rate / (na * nb))
        load += crossing / 2
    return load


def measured_pairs(traffic: Traffic, c: Counts, n: int) -> list[tuple[Pair, float]]:
    """The pairs the mesh reports now: both workloads have running pods."""
    return [(p, p.rate) for p in traffic.pairs if c.of(p.a, n).sum() > 0 and c.of(p.b, n).sum() > 0]


@dataclass(frozen=True, slots=True)
class Shares:
    """Of the pairs' traffic between placed pods: the part crossing nodes and each level."""

    total: float  # bytes/s between placed pods
    cross_node: float  # fraction 0..1 (NaN: no traffic)
    cross_level: Mapping[str, float]  # level label -> fraction

    def to_dict(self) -> dict[str, Any]:
        return {
            "totalBytesPerSecond": self.total,
            "crossNode": _num(self.cross_node),
            "crossLevel": {k: _num(v) for k, v in self.cross_level.items()},
        }


def shares(traffic: Traffic, c: Counts, n: int, levels: Mapping[str, Sequence[str | None]]) -> Shares:
    """`levels`: label -> each node's value (None: the node lacks it)."""
    total = node = 0.0
    level = dict.fromkeys(levels, 0.0)
    codes = {k: _codes(v) for k, v in levels.items()}
    for p in traffic.pairs:
        ca, cb = c.of(p.a, n), c.of(p.b, n)
        na, nb = float(ca.sum()), float(cb.sum())
        if na <= 0 or nb <= 0:
            continue
        total += p.rate
        node += p.rate * (1 - float(ca @ cb) / (na * nb))
        for key, (code, size) in codes.items():
            da = np.bincount(code, weights=ca, minlength=size)[:-1]  # the last slot: no label
            db = np.bincount(code, weights=cb, minlength=size)[:-1]
            level[key] += p.rate * (1 - float(da @ db) / (na * nb))
    if total <= 0:
        return Shares(0.0, float("nan"), dict.fromkeys(levels, float("nan")))
    return Shares(total, node / total, {k: v / total for k, v in level.items()})


def _codes(values: Sequence[str | None]) -> tuple[np.ndarray[Any, np.dtype[np.int64]], int]:
    index: dict[str, int] = {}
    out = [index.setdefault(v, len(index)) if v is not None else -1 for v in values]
    size = len(index) + 1
    return np.array([size - 1 if c < 0 else c for c in out], dtype=np.int64), size


def _num(v: float) -> float | None:
    return None if v != v else round(float(v), 6)


def levels_of(nodes: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> dict[str, list[str | None]]:
    """label -> each node's value, for the scenario's topology levels."""
    return {key: [(n["metadata"].get("labels") or {}).get(key) for n in nodes] for key in labels}
