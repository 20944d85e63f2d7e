"""Where a gang's members would go inside a domain: estimated first, then simulated.

The estimate places the members greedily counting only resources and link
load (in closed form when they are alike, else a few vector operations per
member over every domain at once); the decision ranks domains by it.  The
simulation places them one by one through the profile's real PreFilter and
Filter plugins, each counted on a clone of its node in a what-if of the
cycle's snapshot (Snapshot.what_if: the cycle's own is never written) before
the next is filtered; the real filters only take nodes away, so an estimate
never beats its simulation.  Both give a frozen Finding per domain: its peak
link utilisation, or why it cannot hold the gang.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    CPU,
    PODS,
    BoolArray,
    Diagnosis,
    FloatArray,
    IntArray,
    PodInfo,
    Snapshot,
)

from .domains import Domain, wanted
from .links import LinkLoad

# (member, snapshot rows) -> (rows where the member passes PreFilter and Filter, why the others do not)
Feasible = Callable[[PodInfo, IntArray], tuple[IntArray, Diagnosis]]


@dataclass(frozen=True, slots=True)
class Scene:
    """Where a decision tries members: the cycle's snapshot (read, never written), its what-if
    (Snapshot.what_if: members are counted on cloned nodes there), and the profile's filter
    pass over the what-if."""

    snapshot: Snapshot
    what_if: Snapshot
    feasible: Feasible


@dataclass(frozen=True, slots=True)
class Trial:
    """One decision's fixed inputs to the feasibility phase: the scene, the members in
    placement order, the rows the first member passes (and why not the others), the link
    load, and the reasons' budget."""

    scene: Scene
    order: tuple[PodInfo, ...]
    first_ok: BoolArray
    first_diag: Diagnosis
    load: LinkLoad
    reasons: Reasons


@dataclass(frozen=True, slots=True)
class Finding:
    """What a phase found for one domain: the peak link utilisation with the members placed
    (None: links unknown), or why the domain cannot hold them; the simulation also says where
    each member went (snapshot rows, in member order)."""

    peak: float | None = None
    reason: str = ""
    planned: tuple[int, ...] = ()
    simulated: bool = False

    @property
    def holds(self) -> bool:
        return not self.reason


def estimate(domains: Sequence[Domain], trial: Trial) -> list[Finding]:
    """Each domain's estimated peak, or why it cannot hold the members even counting only
    resources and link load (see _estimate_alike and _estimate_each); aligned with `domains`."""
    if not domains:
        return []
    order, load = trial.order, trial.load
    first = order[0]
    if all(
        p.requests == first.requests and load.bandwidth[p.uid] == load.bandwidth[first.uid] for p in order
    ):
        return _estimate_alike(domains, trial)
    return _estimate_each(domains, trial)


def _estimate_alike(domains: Sequence[Domain], trial: Trial) -> list[Finding]:
    """The greedy placement of `m` alike members in closed form: node n can take k = 1..c_n of
    them (c_n by room), the k-th leaving its link at u_n + k x b x s_n; the greedy takes the m
    smallest of these values (each node's are increasing), so the peak is the m-th smallest of
    the domain's values under the threshold."""
    order, snapshot, first_ok, load = trial.order, trial.scene.snapshot, trial.first_ok, trial.load
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
    out = []
    for j in range(len(domains)):
        if counts[j] >= m:
            out.append(Finding(float(ranked[mth[j]]) if load.known else None))
            continue
        here = dom == j
        in_room = int(np.where(room[here], fit[here], 0).sum())  # slots by room alone
        with_metrics = int(np.where((room & usable)[here], fit[here], 0).sum())
        if in_room < m:
            out.append(Finding(reason=_no_node(in_room, m, False, False, load)))
        elif with_metrics < m:
            out.append(Finding(reason=_no_node(with_metrics, m, True, False, load)))
        else:
            out.append(Finding(reason=_no_node(int(counts[j]), m, True, True, load)))
    return out


def _estimate_each(domains: Sequence[Domain], trial: Trial) -> list[Finding]:
    """Each domain's greedy placement counting only resources and link load, member by member,
    all domains at once (a few vector operations per member, the domains as segments of one
    row vector).  The rows the first member passes stand for every member's."""
    order, snapshot, first_ok, load = trial.order, trial.scene.snapshot, trial.first_ok, trial.load
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
    why = [""] * len(domains)
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
            why[k] = _no_node(j, len(order), bool(roomy.any()), bool((roomy & usable).any()), load)
        hit = np.flatnonzero(fits & (key == best[dom]))
        first = hit[np.r_[True, dom[hit][1:] != dom[hit][:-1]]] if len(hit) else hit
        left[first] -= need
        added[first] += load.bandwidth[member.uid] * scale[first]
        top[dom[first]] = np.maximum(top[dom[first]], u[first] + added[first])
    return [
        Finding(reason=why[k]) if dead[k] else Finding(float(top[k]) if load.known else None)
        for k in range(len(domains))
    ]


def _cpu_share(snapshot: Snapshot, rows: IntArray) -> FloatArray:
    cpu = snapshot.col[CPU]
    alloc = snapshot.allocatable[rows, cpu].astype(np.float64)
    out = np.zeros(len(rows))
    np.divide(snapshot.requested[rows, cpu], alloc, out=out, where=alloc > 0)
    return out


def simulate_members(d: Domain, trial: Trial) -> Finding:
    """Place the members one by one in `d` through the real filters, each counted on its node
    before the next is filtered: one planned row per member and the peak link utilisation that
    leaves, or the reason `d` cannot hold them.  Members are counted on cloned NodeInfos in
    the rows of the what-if, put back to the snapshot's own before returning; the filter pass
    runs on the what-if, and the snapshot is never written."""
    live, what_if, feasible = trial.scene.snapshot, trial.scene.what_if, trial.scene.feasible
    load, reasons = trial.load, trial.reasons
    load.reset()
    planned: list[int] = []
    touched: set[int] = set()
    try:
        for j, member in enumerate(trial.order):
            diag: Diagnosis | None = None
            ok_mask = trial.first_ok
            if j:
                ok_rows, diag = feasible(member, d.rows)
                ok_mask = np.zeros(len(what_if), dtype=bool)
                ok_mask[ok_rows] = True
            row = _pick(d, member, ok_mask, load, what_if)
            if row is None:
                return Finding(reason=reasons.miss(j, d, diag, ok_mask, load), simulated=True)
            planned.append(row)
            load.add(row, member)
            _count(what_if, row, member)
            touched.add(row)
        return Finding(load.peak(planned), planned=tuple(planned), simulated=True)
    finally:
        for row in touched:
            what_if.set_node(row, live.nodes[row])
        load.reset()


def _count(trial: Snapshot, row: int, pod: PodInfo) -> None:
    """The member counted on a clone of its node in `trial`'s row."""
    node = trial.nodes[row].clone()
    node.add_pod(dataclasses.replace(pod, node_name=node.name))
    if not trial.set_node(row, node):  # pragma: no cover - a member fits no such node
        raise ValueError(f"member {pod.key} brings a resource node {node.name} does not have")


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
