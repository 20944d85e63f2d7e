"""One placement decision per gang: the topology domain that holds it whole, chosen by link headroom.

When the first member of a gang is scheduled, `decide` looks for every domain
(nodes sharing one value of a topology level's node label) that can hold the
whole gang: the members still to place are simulated one after the other
through the profile's real PreFilter and Filter plugins, each placed member
counted on its node before the next is filtered (on clones of the nodes, in a
what-if of the cycle's snapshot; the cycle's own is never written).  Of
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

Domains are simulated one at a time, best estimate first: the first member's
filter pass over every node is shared by all domains, each later member is
filtered over the nodes of the domain being simulated, and the what-if is put
back after each domain, so only the members planned in that domain count, for
what a node decides alone (resources, ports, taints, volumes' node limits,
metrics thresholds) and for pod (anti-)affinity and topology spread alike.

Levels: a required level is the only one tried; a preferred level is tried
first, then each level outward of it (the profile lists levels outer to
inner); when no domain of any of them holds the gang, it spreads (placed
member by member, anywhere).  `kubernetes.io/hostname` is the implicit
innermost level: every node its own domain.

The decision runs in phases, each result frozen: generation (domains.py: a
level's candidate domains, those too small marked out), feasibility
(simulation.py: an Finding per candidate, estimated, then for the best ones
simulated through the filters), scoring (`rank_of`, the one ranking estimates
and simulations share).  links.py holds the link load.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from netsched.framework import (
    CPU,
    MEMORY,
    CycleState,
    PodInfo,
    Snapshot,
)

from .domains import Domain, domain_of, domain_rows, domains_at
from .links import LinkLoad, LinkView
from .podgroup import PREFERRED, REQUIRED, TopologyRequest
from .simulation import Finding, Reasons, Scene, Trial, estimate, simulate_members


class PlacementOutcome(StrEnum):
    """What a decision found: one domain holds the gang; none does and the level is only
    preferred (members go anywhere); none does and it is required (the gang cannot start)."""

    PLACED = "placed"
    SPREAD = "spread"
    UNSCHEDULABLE = "unschedulable"


PLACED, SPREAD, UNSCHEDULABLE = (
    PlacementOutcome.PLACED,
    PlacementOutcome.SPREAD,
    PlacementOutcome.UNSCHEDULABLE,
)
# Domains kept per level in a decision's record (the best ones, then the nearest misses).
MAX_VERDICTS_PER_LEVEL = 32
# Domains named in a FailedScheduling message.
MAX_DOMAINS_IN_MESSAGE = 6


@dataclass(frozen=True, slots=True)
class Policy:
    """One profile's topology settings (GangTopologyArgs)."""

    levels: tuple[str, ...]  # outer to inner; LABEL_HOSTNAME last
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
    outcome: PlacementOutcome
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


# Where a gang member's cycle keeps the placement it was steered by (its PostFilter and Reserve
# read it with placement_in; explanations read the cycle's "gang" note).
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


@dataclass(frozen=True, slots=True)
class Gang:
    """What a decision is for: the group, what it asks, and its members still to place."""

    group: str
    request: TopologyRequest
    members: tuple[PodInfo, ...]


def decide(gang: Gang, scene: Scene, policy: Policy, links: LinkView | None) -> Placement:
    """Find the domain for the gang's members not yet placed (see the module doc).

    Per level, in phases with frozen results: generate the candidate domains (those too
    small for the members' requests, or where the first member passes the filters on no
    node, are out at once); check them, first by an estimate (the same greedy placement on
    the nodes the first member passes, counting only resources and link load), then by
    simulation through the real filters, best estimate first, until no candidate left can
    beat the best simulated one (an estimate never beats its simulation: the real filters
    only take nodes away); score: the one ranking (`rank_of`) orders estimates and
    simulations alike.  Members are tried on cloned nodes in the scene's what-if, never in
    its snapshot."""
    trial = _trial(gang, scene, policy, links)
    request, snapshot = gang.request, scene.snapshot
    considered: list[DomainVerdict] = []
    skipped: dict[str, int] = {}
    for level in policy.levels_for(request):
        domains = _candidates(level, trial)
        findings = _check(domains, trial, policy.binpack)
        verdicts = [_verdict(level, d, f, snapshot) for d, f in zip(domains, findings, strict=True)]
        ranked = sorted((v for v in verdicts if v.feasible), key=lambda v: rank(v, policy.binpack))
        kept = (ranked + [v for v in verdicts if not v.feasible])[:MAX_VERDICTS_PER_LEVEL]
        considered += kept
        if len(verdicts) > len(kept):
            skipped[level] = len(verdicts) - len(kept)
        best = _best(domains, findings, policy.binpack)
        if best is not None:
            names = frozenset(snapshot.nodes[int(r)].name for r in best.rows)
            return Placement(
                gang.group,
                request,
                PLACED,
                level,
                best.value,
                names,
                tuple(considered),
                skipped,
                len(trial.order),
            )
        if request.mode == REQUIRED:
            break
    n = len(trial.order)
    if request.mode == PREFERRED:
        return Placement(gang.group, request, SPREAD, "", "", None, tuple(considered), skipped, n)
    return Placement(
        gang.group, request, UNSCHEDULABLE, request.level, "", frozenset(), tuple(considered), skipped, n
    )


def _trial(gang: Gang, scene: Scene, policy: Policy, links: LinkView | None) -> Trial:
    """The feasibility phase's fixed inputs: the members biggest first, the first one's filter
    pass over every node (shared by all domains), the link load."""
    order = tuple(
        sorted(gang.members, key=lambda p: (-p.requests.get(CPU, 0), -p.requests.get(MEMORY, 0), p.key))
    )
    n = len(scene.snapshot)
    first_rows, first_diag = scene.feasible(order[0], np.arange(n, dtype=np.int64))
    first_ok = np.zeros(n, dtype=bool)
    first_ok[first_rows] = True
    load = LinkLoad(links, scene.snapshot, policy.max_utilisation, order)
    return Trial(scene, order, first_ok, first_diag, load, Reasons(order, scene.feasible))


def _candidates(level: str, trial: Trial) -> list[Domain]:
    """Generation: the level's domains, those where the first member passes no node marked out."""
    return [
        d
        if d.reason or trial.first_ok[d.rows].any()
        else dataclasses.replace(d, reason=trial.reasons.miss(0, d, trial.first_diag))
        for d in domains_at(trial.scene.snapshot, level, trial.order)
    ]


def _check(domains: list[Domain], trial: Trial, binpack: bool) -> list[Finding]:
    """Feasibility: each candidate's estimate, then simulations best estimate first while one
    could still beat the best simulated; aligned with `domains`."""
    alive = [k for k, d in enumerate(domains) if not d.reason]
    findings = [Finding(reason=d.reason) for d in domains]
    for k, f in zip(alive, estimate([domains[k] for k in alive], trial), strict=True):
        findings[k] = f
    best: tuple[float, float, str] | None = None
    for k in sorted(
        (k for k in alive if findings[k].holds), key=lambda k: _key(domains[k], findings[k], binpack)
    ):
        if best is not None and _key(domains[k], findings[k], binpack) >= best:
            break
        findings[k] = simulate_members(domains[k], trial)
        if findings[k].holds and (best is None or _key(domains[k], findings[k], binpack) < best):
            best = _key(domains[k], findings[k], binpack)
    return findings


def _best(domains: list[Domain], outcomes: list[Finding], binpack: bool) -> Domain | None:
    """Score: the best simulated candidate that holds the gang (None when none does)."""
    held = [k for k, o in enumerate(outcomes) if o.simulated and o.holds]
    return domains[min(held, key=lambda k: _key(domains[k], outcomes[k], binpack))] if held else None


def _key(d: Domain, o: Finding, binpack: bool) -> tuple[float, float, str]:
    return rank_of(o.peak, d.fullness, d.value, binpack)


def derive(
    group: str, request: TopologyRequest, placed: Sequence[PodInfo], snapshot: Snapshot, policy: Policy
) -> Placement:
    """The decision of a gang already (partly) placed, rebuilt from where its members are
    (after a restart or a reload): the innermost level tried whose one domain holds them all,
    the required level's domain holding most of them, or anywhere."""
    rows = [snapshot.index[p.node_name] for p in placed if p.node_name in snapshot.index]
    for level in policy.levels_for(request):
        values = [domain_of(snapshot, level, r) for r in rows]
        known = [v for v in values if v is not None]
        if not known:
            continue
        counts = Counter(known)
        top = max(counts, key=lambda v: (counts[v], v))
        if request.mode == REQUIRED or len(set(values)) == 1:
            names = frozenset(snapshot.nodes[int(r)].name for r in domain_rows(snapshot, level, top))
            return Placement(group, request, PLACED, level, top, names, members=len(placed), derived=True)
    return Placement(group, request, SPREAD, members=len(placed), derived=True)


def _verdict(level: str, d: Domain, o: Finding, snapshot: Snapshot) -> DomainVerdict:
    if not o.holds:
        return DomainVerdict(
            level, d.value, len(d.rows), False, o.reason, fullness=d.fullness, simulated=o.simulated
        )
    names = tuple(snapshot.nodes[r].name for r in o.planned)
    return DomainVerdict(level, d.value, len(d.rows), True, "", o.peak, d.fullness, names, o.simulated)


def rank(v: DomainVerdict, binpack: bool) -> tuple[float, float, str]:
    return rank_of(v.peak, v.fullness, v.value, binpack)


def rank_of(peak: float | None, fullness: float, value: str, binpack: bool) -> tuple[float, float, str]:
    """The one ranking of candidate domains, for estimates, simulations and the record alike.
    Lower is better: the peak in whole percent, then the fuller domain (binpack: the other
    way round), then the name."""
    p = round(100 * peak) if peak is not None else 0.0
    full = -round(100 * fullness)
    return (full, p, value) if binpack else (p, full, value)
