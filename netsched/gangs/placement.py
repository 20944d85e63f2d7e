"""One placement decision per gang: the topology domain that holds it whole, chosen by link headroom.

When the first member of a gang is scheduled, `decide` looks for every domain
(nodes sharing one value of a topology level's node label) that can hold the
whole gang: the members still to place are simulated one after the other
through the profile's real PreFilter and Filter plugins, each placed member
counted on its node before the next is filtered (the snapshot rows it touches
are replaced by copies with the member added, and put back afterwards).  Of
the domains that hold the gang, the one whose busiest link would be least
utilised once the gang's declared bandwidth is added wins; a domain whose
links would go above the threshold does not hold the gang; equal headroom
(or, with binpacking preferred, first of all) goes to the fuller domain, so
whole domains stay free for the gangs to come (Volcano's binpacking).

    u(n)        = busier direction of n's link (measured, plus pods reserved since the
                  last sample) / link speed; without a link speed, relative to the busiest
                  fresh node; without fresh metrics the fresh nodes' mean (failOpen) or
                  unusable (failClosed)
    u_after(n)  = u(n) + bandwidth of the members planned on n / link speed
    peak(D)     = max u_after over the nodes the gang was planned on in domain D
    D holds the gang  iff every member passes the filters on some node of D and no
                  planned node's u_after is above the threshold (nodes with a link speed)
    choice      = min peak (in whole percent), then max fullness, then the domain's name
                  (binpack: max fullness first, then min peak)
    fullness(D) = mean over cpu and memory of requested / allocatable on D's nodes

Domains are simulated side by side (one filter pass per member over the nodes
of every candidate domain): exact for what a node decides alone (resources,
ports, taints, affinity to nodes, volumes' node limits, metrics thresholds).
A gang whose members carry pod (anti-)affinity or topology spread constraints
is simulated one domain at a time, so only its own domain's members count.

Levels: a required level is the only one tried; a preferred level is tried
first, then each level outward of it (the profile lists levels outer to
inner); when no domain of any of them holds the gang, it spreads (placed
member by member, anywhere).  `kubernetes.io/hostname` is the implicit
innermost level: every node its own domain.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.diagnosis import Diagnosis
from netsched.framework.pod_index import INDEX_KEY, PodIndex, label_codes
from netsched.framework.quantity import CPU, MEMORY, PODS, format_canonical
from netsched.framework.snapshot import BoolArray, IntArray, Snapshot
from netsched.framework.types import NodeInfo, PodInfo
from netsched.gangs.podgroup import PREFERRED, REQUIRED, TopologyRequest

HOSTNAME = "kubernetes.io/hostname"
PLACED, SPREAD, UNSCHEDULABLE = "placed", "spread", "unschedulable"
# Domains kept per level in a decision's record (the best ones, then the nearest misses).
MAX_VERDICTS_PER_LEVEL = 32
# Domains named in a FailedScheduling message.
MAX_DOMAINS_IN_MESSAGE = 6

FloatArray = np.ndarray  # float64 vectors over snapshot rows
# (member, snapshot rows) -> (rows where the member passes PreFilter and Filter, why the others do not)
Feasible = Callable[[PodInfo, IntArray], tuple[IntArray, Diagnosis]]


@dataclass(frozen=True, slots=True)
class LinkView:
    """The metrics cache's link load over the snapshot rows, as NetworkTraffic reads it."""

    busy: FloatArray  # bytes/s of the busier direction (estimates of reserved pods included)
    speed: FloatArray  # bytes/s; NaN where unknown
    fresh: BoolArray
    fail_closed: bool
    bandwidth: Callable[[PodInfo], float]  # bytes/s a member adds (busier direction)
    measured: bool = True  # False: Prometheus unreachable, busy is what pods requested


@dataclass(frozen=True, slots=True)
class Policy:
    """One profile's topology settings (GangTopologyArgs)."""

    levels: tuple[str, ...]  # outer to inner; HOSTNAME last
    default: TopologyRequest | None
    max_utilisation: float | None  # 0..1; None: no threshold
    binpack: bool = False

    def levels_for(self, request: TopologyRequest) -> list[str]:
        """The levels to try, innermost first: a required one alone; a preferred one, then outward."""
        if request.mode == REQUIRED or request.level not in self.levels:
            return [request.level]
        i = self.levels.index(request.level)
        return [self.levels[j] for j in range(i, -1, -1)]


@dataclass(frozen=True, slots=True)
class DomainVerdict:
    level: str
    value: str
    nodes: int
    feasible: bool
    reason: str = ""  # why it cannot hold the gang
    peak: float | None = None  # highest link utilisation once the gang is added (None: unknown)
    fullness: float = 0.0
    planned: tuple[str, ...] = ()  # where the simulation put each member
    simulated: bool = False  # False: judged by its estimate (a better domain was simulated first)

    @property
    def name(self) -> str:
        return f"{self.level}={self.value}"

    @property
    def headroom(self) -> float | None:
        return None if self.peak is None else 1.0 - self.peak

    def describe(self) -> str:
        link = "links unknown" if self.peak is None else f"peak link {self.peak:.0%}"
        if self.feasible and self.simulated:
            return f"{self.name}: holds the gang ({link}, {self.fullness:.0%} full, {self.nodes} nodes)"
        if self.feasible:
            return f"{self.name}: not simulated, estimated {link} ({self.fullness:.0%} full): a better domain held it"
        return f"{self.name}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Placement:
    """A gang's placement decision: where its members go, and what was considered."""

    group: str
    request: TopologyRequest
    outcome: str  # PLACED | SPREAD | UNSCHEDULABLE
    level: str = ""  # the level of the chosen domain ("" when spread, the asked one when none)
    domain: str = ""  # the chosen domain's label value
    node_names: frozenset[str] | None = None  # None: anywhere
    considered: tuple[DomainVerdict, ...] = ()
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)  # level -> verdicts left out
    members: int = 0  # members the decision placed
    derived: bool = False  # rebuilt from the members already placed (no simulation)

    @property
    def chosen(self) -> str:
        return f"{self.level}={self.domain}" if self.outcome == PLACED else ""

    def to_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "request": {"mode": self.request.mode, "level": self.request.level},
            "outcome": self.outcome,
            "chosen": self.chosen,
            "derived": self.derived,
            "members": self.members,
            "domains": [
                {
                    "level": v.level,
                    "domain": v.value,
                    "nodes": v.nodes,
                    "holdsGang": v.feasible,
                    "simulated": v.simulated,
                    "reason": v.reason,
                    "peakLinkUtilization": v.peak,
                    "linkHeadroom": v.headroom,
                    "fullness": v.fullness,
                    "planned": list(v.planned),
                }
                for v in self.considered
            ],
            "domainsLeftOut": dict(self.skipped),
        }

    def lines(self) -> list[str]:
        """The decision as explain's text shows it: what was asked, each domain, the choice."""
        how = (
            "rebuilt from where its members are"
            if self.derived
            else f"{len(self.considered)} domain(s) considered"
        )
        head = f"gang {self.group} ({self.request}, {self.members} member(s) to place): {self.outcome}"
        out = [head + (f" in {self.chosen}" if self.chosen else "") + f"; {how}"]
        for v in self.considered:
            mark = " *" if v.name == self.chosen else ""
            out.append(f"  {v.describe()}{mark}")
        for level, n in self.skipped.items():
            out.append(f"  ... and {n} more {level} domain(s) not listed")
        return out

    def message(self) -> str:
        """One line for FailedScheduling and events."""
        if self.outcome == PLACED:
            how = "from its placed members" if self.derived else f"of {len(self.considered)} considered"
            return f"gang {self.group} placed in {self.chosen} ({how})"
        misses = [v for v in self.considered if not v.feasible]
        shown = "; ".join(v.describe() for v in misses[:MAX_DOMAINS_IN_MESSAGE])
        more = len(misses) - MAX_DOMAINS_IN_MESSAGE + sum(self.skipped.values())
        if more > 0:
            shown += f"; and {more} more"
        if self.outcome == SPREAD:
            return (
                f"gang {self.group}: no domain of {self.request.level} or outward holds it, spread ({shown})"
            )
        if not self.considered and not self.skipped:
            shown = f"no node has label {self.request.level}"
        return f"gang {self.group} needs one {self.request.level} domain for {self.members} members: {shown}"


# Where a gang member's cycle keeps the placement it was steered by (explanations read it).
PLACEMENT_KEY = "netsched/gang-placement"


@dataclass(frozen=True, slots=True)
class Decision:
    """The placement a member's cycle used; `fresh` when this cycle decided it."""

    placement: Placement
    fresh: bool


def placement_in(state: CycleState) -> Decision | None:
    """The gang placement decision a member's cycle used (None: not a gang member, or no
    decision applies)."""
    got = state.get(PLACEMENT_KEY)
    return got if isinstance(got, Decision) else None


@dataclass(slots=True)
class _Domain:
    code: int
    value: str
    rows: IntArray
    fullness: float
    planned: list[int] = dataclasses.field(default_factory=list)
    reason: str = ""
    peak: float | None = None  # estimated, then (once simulated) what the simulation found
    simulated: bool = False


def decide(
    group: str,
    request: TopologyRequest,
    members: Sequence[PodInfo],
    snapshot: Snapshot,
    feasible: Feasible,
    policy: Policy,
    links: LinkView | None,
) -> Placement:
    """Find the domain for `members` (the gang's members not yet placed; see the module doc).

    Per level: the domains too small for the members' requests, or where the first member
    passes the filters on no node, are out at once; the others are ranked by an estimate
    (the same greedy placement, on the nodes the first member passes, counting only
    resources and link load) and simulated through the real filters best first, until no
    domain left can beat the best simulated one (an estimate never beats its simulation:
    the real filters only take nodes away).  The snapshot is changed while simulating and
    restored before returning."""
    order = sorted(members, key=lambda p: (-p.requests.get(CPU, 0), -p.requests.get(MEMORY, 0), p.key))
    n = len(snapshot)
    first_rows, first_diag = feasible(order[0], np.arange(n, dtype=np.int64))
    first_ok = np.zeros(n, dtype=bool)
    first_ok[first_rows] = True
    load = _Load(links, snapshot, policy.max_utilisation, order)
    considered: list[DomainVerdict] = []
    skipped: dict[str, int] = {}
    reasons = _Reasons(order, feasible)
    for level in policy.levels_for(request):
        domains = _domains(snapshot, level, order)
        for d in domains:
            if not d.reason and not first_ok[d.rows].any():
                d.reason = reasons.miss(0, d, first_diag)
        alive = [d for d in domains if not d.reason]
        _estimate(alive, order, snapshot, first_ok, load)
        best: _Domain | None = None
        for d in sorted((d for d in alive if not d.reason), key=lambda d: _rank(d, policy.binpack)):
            if best is not None and _rank(d, policy.binpack) >= _rank(best, policy.binpack):
                break
            _simulate(d, order, snapshot, feasible, first_ok, load, reasons)
            if not d.reason and (best is None or _rank(d, policy.binpack) < _rank(best, policy.binpack)):
                best = d
        verdicts = [_verdict(level, d, snapshot) for d in domains]
        ranked = sorted((v for v in verdicts if v.feasible), key=lambda v: _rank(v, policy.binpack))
        kept = (ranked + [v for v in verdicts if not v.feasible])[:MAX_VERDICTS_PER_LEVEL]
        considered += kept
        if len(verdicts) > len(kept):
            skipped[level] = len(verdicts) - len(kept)
        if best is not None:
            names = frozenset(snapshot.nodes[int(r)].name for r in best.rows)
            return Placement(
                group, request, PLACED, level, best.value, names, tuple(considered), skipped, len(order)
            )
        if request.mode == REQUIRED:
            break
    if request.mode == PREFERRED:
        return Placement(group, request, SPREAD, "", "", None, tuple(considered), skipped, len(order))
    return Placement(
        group, request, UNSCHEDULABLE, request.level, "", frozenset(), tuple(considered), skipped, len(order)
    )


def derive(
    group: str, request: TopologyRequest, placed: Sequence[PodInfo], snapshot: Snapshot, policy: Policy
) -> Placement:
    """The decision of a gang already (partly) placed, rebuilt from where its members are
    (after a restart or a reload): the innermost level tried whose one domain holds them all,
    the required level's domain holding most of them, or anywhere."""
    rows = [snapshot.index[p.node_name] for p in placed if p.node_name in snapshot.index]
    for level in policy.levels_for(request):
        values = [_value(snapshot, level, r) for r in rows]
        known = [v for v in values if v is not None]
        if not known:
            continue
        top = max(set(known), key=lambda v: (known.count(v), v))
        if request.mode == REQUIRED or len(set(values)) == 1:
            domain = next(d for d in _domains(snapshot, level, placed) if d.value == top)
            names = frozenset(snapshot.nodes[int(r)].name for r in domain.rows)
            return Placement(group, request, PLACED, level, top, names, members=len(placed), derived=True)
    return Placement(group, request, SPREAD, members=len(placed), derived=True)


# ---------------------------------------------------------------- domains


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
    if level == HOSTNAME:
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


def _domains(snapshot: Snapshot, level: str, order: Sequence[PodInfo]) -> list[_Domain]:
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
    want = _wanted(order)
    need = np.array([want.get(r, 0) for r in snapshot.resources])
    missing = any(r not in snapshot.col for r in want)  # a resource no node has
    short = np.asarray((free < need).any(axis=1), dtype=bool) | missing
    return [
        _Domain(
            k,
            value,
            rows,
            float(fullness[k]),
            reason=_too_small(want, snapshot, free[k]) if short[k] else "",
        )
        for k, (value, rows) in enumerate(zip(g.values, g.rows, strict=True))
    ]


def _wanted(order: Sequence[PodInfo]) -> dict[str, int]:
    want: dict[str, int] = {PODS: len(order)}
    for p in order:
        for r, v in p.requests.items():
            want[r] = want.get(r, 0) + v
    return want


def _too_small(want: dict[str, int], snapshot: Snapshot, free: FloatArray) -> str:
    """Why a domain's free room (its nodes together) cannot hold the members, "" if it can."""
    short = []
    for r, amount in sorted(want.items()):
        col = snapshot.col.get(r)
        have = int(free[col]) if col is not None else 0
        if have < amount:
            short.append(f"{format_canonical(r, have)} of {format_canonical(r, amount)} {r} free")
    return f"too small: {', '.join(short)}" if short else ""


def _value(snapshot: Snapshot, level: str, row: int) -> str | None:
    node = snapshot.nodes[row]
    return node.name if level == HOSTNAME else node.labels.get(level)


def _why(diag: Diagnosis) -> str:
    if diag.pre_filter_msg:
        return diag.pre_filter_msg
    return ", ".join(sorted(f"{n} {r}" for r, n in diag.reasons.items())) or "filtered out"


# ---------------------------------------------------------------- link load


class _Load:
    """Per-row link utilisation for the decision, and what each planned member adds."""

    def __init__(
        self, links: LinkView | None, snapshot: Snapshot, limit: float | None, members: Sequence[PodInfo]
    ) -> None:
        n = len(snapshot)
        self.limit = limit
        self.usable = np.ones(n, dtype=bool)
        self.u = np.zeros(n)
        self.scale = np.zeros(n)  # utilisation per byte/s added (0: not known)
        self.absolute = np.zeros(n, dtype=bool)  # a link speed is known: the threshold applies
        self.added = np.zeros(n)  # utilisation the simulation added
        self.known = links is not None
        self.bandwidth = {p.uid: links.bandwidth(p) if links is not None else 0.0 for p in members}
        if links is None:
            return
        speed, busy, fresh = links.speed, np.nan_to_num(links.busy), links.fresh
        self.absolute = np.isfinite(speed) & (speed > 0)
        np.divide(1.0, speed, out=self.scale, where=self.absolute)
        np.divide(busy, speed, out=self.u, where=self.absolute)
        relative = fresh & ~self.absolute
        ref = float(busy[relative].max()) if relative.any() else 0.0
        if ref > 0:
            rel = ~self.absolute
            self.u[rel] = busy[rel] / ref
            self.scale[rel] = 1.0 / ref
        stale = ~fresh | (not links.measured and links.fail_closed)
        if links.fail_closed:
            self.usable &= ~stale
        elif stale.any():
            self.u[stale] = float(self.u[~stale].mean()) if (~stale).any() else 0.0

    def after(self, rows: IntArray, pod: PodInfo) -> FloatArray:
        """u_after of each row if `pod` joined it."""
        return self.u[rows] + self.added[rows] + self.bandwidth[pod.uid] * self.scale[rows]

    def over(self, rows: IntArray, after: FloatArray) -> BoolArray:
        if self.limit is None:
            return np.zeros(len(rows), dtype=bool)
        return self.absolute[rows] & (after > self.limit + 1e-9)

    def add(self, rows: IntArray | int, pod: PodInfo) -> None:
        self.added[rows] += self.bandwidth[pod.uid] * self.scale[rows]

    def reset(self) -> None:
        self.added[:] = 0.0

    def peak(self, rows: Sequence[int] | IntArray) -> float | None:
        if not self.known or not len(rows):
            return None
        return float((self.u[rows] + self.added[rows]).max())


# ---------------------------------------------------------------- simulation


def _estimate(
    domains: list[_Domain], order: Sequence[PodInfo], snapshot: Snapshot, first_ok: BoolArray, load: _Load
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
    domains: list[_Domain], order: Sequence[PodInfo], snapshot: Snapshot, first_ok: BoolArray, load: _Load
) -> None:
    """The greedy placement of `m` alike members in closed form: node n can take k = 1..c_n of
    them (c_n by room), the k-th leaving its link at u_n + k x b x s_n; the greedy takes the m
    smallest of these values (each node's are increasing), so the peak is the m-th smallest of
    the domain's values under the threshold."""
    m = len(order)
    rows = np.concatenate([d.rows for d in domains])
    sizes = np.array([len(d.rows) for d in domains])
    dom = np.repeat(np.arange(len(domains)), sizes)
    want = _wanted(order[:1])
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
    domains: list[_Domain], order: Sequence[PodInfo], snapshot: Snapshot, first_ok: BoolArray, load: _Load
) -> None:
    """Each domain's greedy placement counting only resources and link load, member by member,
    all domains at once (a few vector operations per member, the domains as segments of one
    row vector).  The rows the first member passes stand for every member's."""
    rows = np.concatenate([d.rows for d in domains])
    sizes = np.array([len(d.rows) for d in domains])
    seg = np.r_[0, np.cumsum(sizes)[:-1]]
    dom = np.repeat(np.arange(len(domains)), sizes)
    want = _wanted(order)
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


def _simulate(
    d: _Domain,
    order: Sequence[PodInfo],
    snapshot: Snapshot,
    feasible: Feasible,
    first_ok: BoolArray,
    load: _Load,
    reasons: _Reasons,
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


def _pick(d: _Domain, member: PodInfo, ok_mask: BoolArray, load: _Load, snapshot: Snapshot) -> int | None:
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


def _no_node(j: int, members: int, room: bool, metrics: bool, load: _Load) -> str:
    """Why member j found no node in a domain although the filters (or the room) allowed some."""
    if not room:
        return f"room for {j} of {members} members on the nodes the first member passes"
    if not metrics:
        return f"member {j + 1} of {members}: the nodes with room have no recent network metrics"
    above = "" if load.limit is None else f" above {load.limit:.0%}"
    return f"member {j + 1} of {members}: every node with room would have its link{above} with the gang's bandwidth"


class _Reasons:
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
        d: _Domain,
        diag: Diagnosis | None,
        ok_mask: BoolArray | None = None,
        load: _Load | None = None,
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


def _verdict(level: str, d: _Domain, snapshot: Snapshot) -> DomainVerdict:
    if d.reason:
        return DomainVerdict(
            level, d.value, len(d.rows), False, d.reason, fullness=d.fullness, simulated=d.simulated
        )
    names = tuple(snapshot.nodes[r].name for r in d.planned)
    return DomainVerdict(level, d.value, len(d.rows), True, "", d.peak, d.fullness, names, d.simulated)


def _rank(d: _Domain | DomainVerdict, binpack: bool) -> tuple[float, float, str]:
    """Lower is better: the peak in whole percent, then the fuller domain (binpack: the other
    way round), then the name."""
    peak = round(100 * d.peak) if d.peak is not None else 0.0
    full = -round(100 * d.fullness)
    return (full, peak, d.value) if binpack else (peak, full, d.value)


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
