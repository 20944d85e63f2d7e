"""Where a gang's members would go inside a domain: estimated first, then simulated.

The estimate places the members greedily counting only resources and link
load (in closed form when they are alike, else a few vector operations per
member over every domain at once); the decision ranks domains by it.  The
simulation places them one by one through the profile's real PreFilter and
Filter plugins, each counted on its node (a copy of its snapshot row) before
the next is filtered; the real filters only take nodes away, so an estimate
never beats its simulation.  Both say why a domain cannot hold the gang.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from netsched.framework.diagnosis import Diagnosis
from netsched.framework.pod_index import INDEX_KEY, PodIndex
from netsched.framework.quantity import CPU, PODS
from netsched.framework.snapshot import BoolArray, FloatArray, IntArray, Snapshot
from netsched.framework.types import NodeInfo, PodInfo
from netsched.gangs.domains import Domain, wanted
from netsched.gangs.links import LinkLoad

# (member, snapshot rows) -> (rows where the member passes PreFilter and Filter, why the others do not)
Feasible = Callable[[PodInfo, IntArray], tuple[IntArray, Diagnosis]]


def estimate(
    domains: list[Domain], order: Sequence[PodInfo], snapshot: Snapshot, first_ok: BoolArray, load: LinkLoad
) -> None:
    """Each domain's estimated peak, or why it cannot hold the members even counting only
    resources and link load (see _estimate_alike and _estimate_each)."""
    if not domains:
        return
    first = order[0]
    if all(
        p.requests == first.requests and load.bandwidth[p.uid] == load.bandwidth[first.uid] for p in order
    ):
        _estimate_alike(domains, order, snapshot, first_ok, load)
    else:
        _estimate_each(domains, order, snapshot, first_ok, load)


def _estimate_alike(
    domains: list[Domain], order: Sequence[PodInfo], snapshot: Snapshot, first_ok: BoolArray, load: LinkLoad
) -> None:
    """The greedy placement of `m` alike members in closed form: node n can take k = 1..c_n of
    them (c_n by room), the k-th leaving its link at u_n + k x b x s_n; the greedy takes the m
    smallest of these values (each node's are increasing), so the peak is the m-th smallest of
    the domain's values under the threshold."""
    m = len(order)
    rows = np.concatenate([d.rows for d in domains])
    sizes = np.array([len(d.rows) for d in domains])
    dom = np.repeat(np.arange(len(domains)), sizes)
    want = wanted(order[:1])
    names = [r for r in want if r in snapshot.col]
    need = np.array([want[r] for r in names])
    left = (
        snapshot.allocatable[rows][:, [snapshot.col[r] for r in names]]
        - snapshot.requested[rows][:, [snapshot.col[r] for r in names]]
    )
    with np.errstate(divide="ignore"):
        fit = np.floor_divide(left, np.where(need > 0, need, 1)).min(axis=1).clip(0, m)
    room = first_ok[rows] & (fit > 0)
    usable = load.usable[rows]
    step = load.bandwidth[order[0].uid] * load.scale[rows]
    k = np.arange(1, m + 1)
    after = load.u[rows][:, None] + step[:, None] * k[None, :]  # rows x m
    valid = (k[None, :] <= fit[:, None]) & (room & usable)[:, None]
    if load.limit is not None:
        valid &= ~(load.absolute[rows][:, None] & (after > load.limit + 1e-9))
    counts = np.bincount(dom, weights=valid.sum(axis=1), minlength=len(domains)).astype(np.int64)
    # The m-th smallest value of each domain: sort (domain, value), take each segment's m-th.
    flat_dom = np.repeat(dom, m)
    flat = np.where(valid, after, np.inf).ravel()
    ranked = flat[np.lexsort((flat, flat_dom))]
    mth = np.r_[0, np.cumsum(sizes * m)[:-1]] + m - 1
    for j, d in enumerate(domains):
        if counts[j] >= m:
            d.peak = float(ranked[mth[j]]) if load.known else None
            continue
        here = dom == j
        in_room = int(np.where(room[here], fit[here], 0).sum())  # slots by room alone
        with_metrics = int(np.where((room & usable)[here], fit[here], 0).sum())
        if in_room < m:
            d.reason = _no_node(in_room, m, False, False, load)
        elif with_metrics < m:
            d.reason = _no_node(with_metrics, m, True, False, load)
        else:
            d.reason = _no_node(int(counts[j]), m, True, True, load)


def _estimate_each(
    domains: list[Domain], order: Sequence[PodInfo], snapshot: Snapshot, first_ok: BoolArray, load: LinkLoad
) -> None:
    """Each domain's greedy placement counting only resources and link load, member by member,
    all domains at once (a few vector operations per member, the domains as segments of one
    row vector).  The rows the first member passes stand for every member's."""
    rows = np.concatenate([d.rows for d in domains])
    sizes = np.array([len(d.rows) for d in domains])
    seg = np.r_[0, np.cumsum(sizes)[:-1]]
    dom = np.repeat(np.arange(len(domains)), sizes)
    want = wanted(order)
    names = [r for r in want if r in snapshot.col]
    cols = [snapshot.col[r] for r in names]
    left = snapshot.allocatable[rows][:, cols] - snapshot.requested[rows][:, cols]
    tie = _cpu_share(snapshot, rows) * 1e-6  # fuller nodes first among equal links (below rounding)
    usable = load.usable[rows]
    ok = first_ok[rows] & usable
    u, scale, absolute = load.u[rows], load.scale[rows], load.absolute[rows]
    added = np.zeros(len(rows))
    limit = np.inf if load.limit is None else load.limit + 1e-9
    dead = np.zeros(len(domains), dtype=bool)
    top = np.zeros(len(domains))
    for j, member in enumerate(order):
        need = np.array([1 if r == PODS else member.requests.get(r, 0) for r in names])
        after = u + added + load.bandwidth[member.uid] * scale
        room = (left >= need).all(axis=1)
        fits = ok & room & ~dead[dom] & ~(absolute & (after > limit))
        key = np.where(fits, np.round(after, 3) - tie, np.inf)
        best = np.minimum.reduceat(key, seg)
        took = np.isfinite(best)
        for k in np.flatnonzero(~dead & ~took).tolist():
            dead[k] = True
            roomy = (dom == k) & first_ok[rows] & room
            domains[k].reason = _no_node(j, len(order), bool(roomy.any()), bool((roomy & usable).any()), load)
        hit = np.flatnonzero(fits & (key == best[dom]))
        first = hit[np.r_[True, dom[hit][1:] != dom[hit][:-1]]] if len(hit) else hit
        left[first] -= need
        added[first] += load.bandwidth[member.uid] * scale[first]
        top[dom[first]] = np.maximum(top[dom[first]], u[first] + added[first])
    for k, d in enumerate(domains):
        if not dead[k]:
            d.peak = float(top[k]) if load.known else None


def _cpu_share(snapshot: Snapshot, rows: IntArray) -> FloatArray:
    cpu = snapshot.col[CPU]
    alloc = snapshot.allocatable[rows, cpu].astype(np.float64)
    out = np.zeros(len(rows))
    np.divide(snapshot.requested[rows, cpu], alloc, out=out, where=alloc > 0)
    return out


def simulate(
    d: Domain,
    order: Sequence[PodInfo],
    snapshot: Snapshot,
    feasible: Feasible,
    first_ok: BoolArray,
    load: LinkLoad,
    reasons: Reasons,
) -> None:
    """Place the members one by one in `d` through the real filters, each counted on its node
    before the next is filtered: `d` ends with one planned row per member and the peak link
    utilisation that leaves, or with the reason it cannot hold them."""
    d.simulated = True
    d.peak = None
    load.reset()
    sim = _Scratch(snapshot)
    try:
        for j, member in enumerate(order):
            diag: Diagnosis | None = None
            ok_mask = first_ok
            if j:
                ok_rows, diag = feasible(member, d.rows)
                ok_mask = np.zeros(len(snapshot), dtype=bool)
                ok_mask[ok_rows] = True
            row = _pick(d, member, ok_mask, load, snapshot)
            if row is None:
                d.reason = reasons.miss(j, d, diag, ok_mask, load)
                d.planned.clear()
                return
            d.planned.append(row)
            load.add(row, member)
            sim.add(row, member)
        d.peak = load.peak(d.planned)
    finally:
        sim.restore()
        load.reset()


def _pick(d: Domain, member: PodInfo, ok_mask: BoolArray, load: LinkLoad, snapshot: Snapshot) -> int | None:
    """The node of `d` the member would take: it passes the filters, its link stays under the
    threshold; the coldest link after adding the member, then the fullest node (keep room whole)."""
    rows = d.rows[ok_mask[d.rows] & load.usable[d.rows]]
    if not len(rows):
        return None
    after = load.after(rows, member)
    keep = ~load.over(rows, after)
    rows, after = rows[keep], after[keep]
    if not len(rows):
        return None
    best = np.lexsort((rows, -_cpu_share(snapshot, rows), np.round(after, 3)))[0]
    return int(rows[best])


def _no_node(j: int, members: int, room: bool, metrics: bool, load: LinkLoad) -> str:
    """Why member j found no node in a domain although the filters (or the room) allowed some."""
    if not room:
        return f"room for {j} of {members} members on the nodes the first member passes"
    if not metrics:
        return f"member {j + 1} of {members}: the nodes with room have no recent network metrics"
    above = "" if load.limit is None else f" above {load.limit:.0%}"
    return f"member {j + 1} of {members}: every node with room would have its link{above} with the gang's bandwidth"


class Reasons:
    """Why a domain could not take a member. A filter pass over the domain's own nodes names
    its reasons precisely; past a budget (a level of a thousand hostnames) the count says it."""

    BUDGET = 8

    def __init__(self, order: Sequence[PodInfo], feasible: Feasible) -> None:
        self._order = order
        self._feasible = feasible
        self._left = self.BUDGET

    def miss(
        self,
        j: int,
        d: Domain,
        diag: Diagnosis | None,
        ok_mask: BoolArray | None = None,
        load: LinkLoad | None = None,
    ) -> str:
        who = f"member {j + 1} of {len(self._order)}"
        passing = d.rows[ok_mask[d.rows]] if ok_mask is not None else d.rows[:0]
        if len(passing) and load is not None:
            return _no_node(j, len(self._order), True, bool(load.usable[passing].any()), load)
        if diag is None or self._left <= 0:
            return f"{who} fits none of its {len(d.rows)} nodes"
        self._left -= 1
        _, own = self._feasible(self._order[j], d.rows)
        return f"{who} fits none of its {len(d.rows)} nodes: {_why(own)}"


def _why(diag: Diagnosis) -> str:
    if diag.pre_filter_msg:
        return diag.pre_filter_msg
    return ", ".join(sorted(f"{n} {r}" for r, n in diag.reasons.items())) or "filtered out"


class _Scratch:
    """Members added to snapshot rows for a simulation, and the rows put back afterwards.

    Each change replaces the row's NodeInfo with a new copy (the pod index and the
    plugins' per-row caches follow rows by object identity), and restore() puts the
    original objects back, so the cycle's snapshot ends exactly as it began."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._saved: dict[int, NodeInfo] = {}

    def add(self, row: int, pod: PodInfo) -> None:
        current = self._snapshot.nodes[row]
        self._saved.setdefault(row, current)
        node = current.clone()
        node.add_pod(dataclasses.replace(pod, node_name=node.name))
        if not self._snapshot.set_node(row, node):  # pragma: no cover - a member fits no such node
            raise ValueError(f"member {pod.key} brings a resource node {node.name} does not have")

    def restore(self) -> None:
        if not self._saved:
            return
        for row, node in self._saved.items():
            self._snapshot.set_node(row, node)
        self._saved.clear()
        index = self._snapshot.cache.get(INDEX_KEY)
        if isinstance(index, PodIndex):
            index.sync(self._snapshot)  # back to the real rows for the rest of the cycle
