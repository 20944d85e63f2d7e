"""Traffic between workloads in a scenario: what crosses which NIC, which way, and what the mesh reports.

The `traffic:` section lists workload pairs with their rates per direction, in
a mesh's terms (Istio's): `request` bytes flow from the source to the
destination, `response` bytes back; `rate` alone is both directions together,
half each way:

    traffic:
      workloadLabel: app.kubernetes.io/name     # how pods name their workload (default: the owner)
      pairs:
        - {source: frontend, destination: api, rate: 80Mbit}              # 40 Mbit/s each way
        - {source: cache, destination: db, response: 40MB/s}              # one-way: db -> cache
        - {source: shop/api, destination: shop/db, request: 1MB/s, response: 20MB/s}

A pair's rates are shared evenly among the pod pairs of its two workloads (a
mesh's load balancing).  A flow from a pod on node X to a pod on node Y adds
to X's transmitted and Y's received bytes; on one node it crosses no NIC.  So
a node's link load is its background plus every flow crossing its NIC under
the current placement, one direction at a time, and each placement changes
what the next poll sees.  The mesh's series (what the simulated Prometheus
answers the traffic graph's query with) carry each direction of a pair while
both workloads have running pods.

`flows` and `shares` work on any placement given as pods per workload per
node (`placement_traffic` bundles them for a harness that only has a
placement).
"""

from __future__ import annotations

import math
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
RATE_KEYS = ("rate", "request", "response")


@dataclass(frozen=True, slots=True)
class Pair:
    a: str  # source workload "namespace/name"
    b: str  # destination workload
    request: float  # bytes/s from a to b
    response: float  # bytes/s from b to a

    @classmethod
    def both_ways(cls, a: str, b: str, rate: float) -> Pair:
        """`rate` for both directions together, half each way."""
        return cls(a, b, rate / 2, rate / 2)

    @property
    def rate(self) -> float:
        """Both directions together (the co-location weight)."""
        return self.request + self.response

    @property
    def ends(self) -> tuple[str, str]:
        return self.a, self.b


@dataclass(frozen=True, slots=True)
class Traffic:
    pairs: tuple[Pair, ...] = ()
    workload_label: str = ""

    def __bool__(self) -> bool:
        return bool(self.pairs)

    @property
    def workloads(self) -> list[str]:
        """Every workload a pair names, in first-seen order."""
        return list(dict.fromkeys(w for p in self.pairs for w in p.ends))


def decode_traffic(f: Fields) -> Traffic:
    label = f.str("workloadLabel", "")
    problems = label_key_errors(label) if label else []
    if problems:
        f.errs.invalid(join(f.path, "workloadLabel"), label, "; ".join(problems))
    pairs = decode_pairs(f, allow_zero=False)
    f.finish()
    return Traffic(tuple(pairs), label)


def decode_pairs(f: Fields, *, allow_zero: bool) -> list[Pair]:
    """The `pairs` list of `f`; `allow_zero`: a pair may be silenced (a timeline change)."""
    pairs: list[Pair] = []
    path = join(f.path, "pairs")
    for i, raw in enumerate(f.list("pairs")):
        p = join(path, i)
        if not isinstance(raw, dict):
            f.errs.invalid(p, shown(raw), "must be a mapping {source, destination, rate or request/response}")
            continue
        got = _pair(Fields(raw, p, f.errs), allow_zero)
        if got is not None:
            pairs.append(got)
    return pairs


def _pair(f: Fields, allow_zero: bool) -> Pair | None:
    ends = []
    for key in ("source", "destination"):
        name = f.str(key, "")
        if not _NAME.match(name):
            f.errs.invalid(join(f.path, key), name, "must be a workload name, or namespace/name")
            return None
        ends.append(name if "/" in name else f"default/{name}")
    rates: dict[str, float] = {}
    for key in RATE_KEYS:
        raw = f.any(key)
        if raw is None:
            continue
        try:
            rates[key] = bits_per_second(raw) / 8
        except ValueError as e:
            f.errs.invalid(join(f.path, key), shown(raw), str(e))
            return None
    f.finish()
    if "rate" in rates and len(rates) > 1:
        other = next(k for k in RATE_KEYS[1:] if k in rates)
        f.errs.forbidden(
            join(f.path, other), "give rate (both directions, half each way) or request / response, not both"
        )
        return None
    if not rates:
        f.errs.required(join(f.path, "rate"), "a rate, or request and/or response")
        return None
    if ends[0] == ends[1]:
        f.errs.invalid(join(f.path, "destination"), ends[1], "must differ from source")
        return None
    if "rate" in rates:
        pair = Pair.both_ways(ends[0], ends[1], rates["rate"])
    else:
        pair = Pair(ends[0], ends[1], rates.get("request", 0.0), rates.get("response", 0.0))
    if pair.rate <= 0 and not allow_zero:
        key = "rate" if "rate" in rates else next(iter(rates))
        f.errs.invalid(join(f.path, key), 0, "must be > 0 (in one direction at least)")
        return None
    return pair


# ---------------------------------------------------------------- placements


@dataclass
class Counts:
    """Pods per workload per node (a workload without pods: zeros)."""

    per_node: dict[str, FloatArray] = field(default_factory=dict)

    def of(self, workload: str, n: int) -> FloatArray:
        return self.per_node.get(workload, np.zeros(n))


def counts(workloads: Sequence[str], rows: Sequence[int], weights: FloatArray, n: int) -> Counts:
    """Counts of the pods whose workload is `workloads[i]` on node row `rows[i]` (weight > 0)."""
    out: dict[str, FloatArray] = {}
    for wl, row, w in zip(workloads, rows, weights.tolist(), strict=True):
        if wl and w > 0:
            out.setdefault(wl, np.zeros(n))[row] += w
    return Counts(out)


def flows(
    ca: FloatArray, cb: FloatArray, request: FloatArray, response: FloatArray
) -> tuple[FloatArray, FloatArray, np.ndarray]:
    """(received, transmitted bytes/s per node, active per pair) for pairs whose source pods per
    node are the rows of `ca` and destination pods those of `cb` (pairs x nodes).  A pod pair
    carries request / (na x nb) from source to destination and response / (na x nb) back; only
    pod pairs on different nodes cross NICs."""
    na, nb = ca.sum(axis=1), cb.sum(axis=1)
    active = (na > 0) & (nb > 0)
    scale = np.where(active, 1.0 / np.where(active, na * nb, 1.0), 0.0)
    a_out = ca * (nb[:, None] - cb)  # source pods per node times destination pods elsewhere
    b_out = cb * (na[:, None] - ca)
    req, resp = (request * scale)[:, None], (response * scale)[:, None]
    rx = (b_out * req + a_out * resp).sum(axis=0)
    tx = (a_out * req + b_out * resp).sum(axis=0)
    return rx, tx, active


def nic_loads(traffic: Traffic, c: Counts, n: int) -> tuple[FloatArray, FloatArray]:
    """Bytes/s every node's NIC receives and transmits for the pairs' flows."""
    if not traffic.pairs:
        return np.zeros(n), np.zeros(n)
    ca = np.array([c.of(p.a, n) for p in traffic.pairs])
    cb = np.array([c.of(p.b, n) for p in traffic.pairs])
    request = np.array([p.request for p in traffic.pairs])
    response = np.array([p.response for p in traffic.pairs])
    rx, tx, _ = flows(ca, cb, request, response)
    return rx, tx


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
        if na <= 0 or nb <= 0 or p.rate <= 0:
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


@dataclass(frozen=True, slots=True)
class PlacementTraffic:
    """What a placement does with the pairs: the shares crossing nodes and levels, and each
    node's NIC load from the flows (bytes/s, received and transmitted, no background)."""

    shares: Shares
    rx: FloatArray
    tx: FloatArray


def placement_traffic(
    traffic: Traffic,
    per_node: Mapping[str, Sequence[float]],
    levels: Mapping[str, Sequence[str | None]] | None = None,
) -> PlacementTraffic:
    """The traffic figures of a placement given as workload "namespace/name" -> pods on each node
    (one list entry per node, all of one length): for a harness that replays a scenario
    elsewhere (a real API server and Prometheus) and wants the same figures simulate reports."""
    sizes = {len(v) for v in per_node.values()} | {len(v) for v in (levels or {}).values()}
    if len(sizes) > 1:
        raise ValueError(f"per_node and levels must give one entry per node, got lengths {sorted(sizes)}")
    n = sizes.pop() if sizes else 0
    c = Counts({k: np.asarray(v, dtype=np.float64) for k, v in per_node.items()})
    rx, tx = nic_loads(traffic, c, n)
    return PlacementTraffic(shares(traffic, c, n, levels or {}), rx, tx)


def _codes(values: Sequence[str | None]) -> tuple[np.ndarray[Any, np.dtype[np.int64]], int]:
    index: dict[str, int] = {}
    out = [index.setdefault(v, len(index)) if v is not None else -1 for v in values]
    size = len(index) + 1
    return np.array([size - 1 if c < 0 else c for c in out], dtype=np.int64), size


def _num(v: float) -> float | None:
    return None if v != v or math.isinf(v) else round(float(v), 6)


def levels_of(nodes: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> dict[str, list[str | None]]:
    """label -> each node's value, for the scenario's topology levels."""
    return {key: [(n["metadata"].get("labels") or {}).get(key) for n in nodes] for key in labels}
