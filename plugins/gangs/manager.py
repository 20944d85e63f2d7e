"""The gang manager: what the scheduler knows about every gang, apart from the plugin shells.

Shaped like scheduler-plugins' Coscheduling PodGroupManager: the PodGroups
(parsed once per resourceVersion), the groups that passed the minResources
check recently (permitted), the groups that failed recently (backed off), the
gangs whose members wait at Permit (attempts), and, new here, the placement
decision of each gang being placed (plugins/gangs/placement.py).  The
Coscheduling and GangTopology plugins are thin shells over it; they reach it
with `gangs_of(handle)`, so neither imports the other.

The manager answers, the shells act: Permit gets a PermitAnswer (allow the
gang, or wait and wake these siblings), a release a Release (how the attempt
ended, typed as GangOutcome, and the event's message); the shells allow and
reject waiting pods, activate siblings, send events and record metrics.  What
it remembers per gang expires by time, with a bound (expiring.py).

The first gang plugin built makes the one manager of the process (a shared
service: it outlives a config reload, as the pods waiting at Permit do), with
the members' pod index and the PodGroup status writer; every gang plugin built
registers the periodic tasks (so a reload that drops them all stops them): the
status writes, and one that wakes the gangs whose backoff ended: a gang whose backoff is over is retried then, not
at the next unrelated cluster event or the 5-minute flush of unschedulable pods.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from netsched.framework import (
    PODS,
    Clock,
    EventRecorder,
    Handle,
    ObjectReader,
    ObjectRef,
    PluginMetrics,
    PodInfo,
    ServiceKey,
    Snapshot,
    Status,
    WaitingPod,
    format_canonical,
)

from .expiring import Expiring
from .placement import Placement
from .podgroup import (
    PODGROUPS_KEY,
    GroupCache,
    GroupError,
    PodGroup,
    full_name,
    group_name,
)
from .status import PodGroupStatusWriter, StatusUpdate

# Placement decisions (and event messages) kept before the stale ones are dropped.
MAX_PLACEMENTS = 10_000


class GangMetrics:
    """The gang plugins' own metrics, declared in the scheduler's registry."""

    def __init__(self, metrics: PluginMetrics) -> None:
        self.gangs_waiting = metrics.gauge(
            "netsched_gangs_waiting",
            "Pod groups with members waiting at Permit for the rest of their gang.",
            ["profile"],
        )
        self.gang_outcomes = metrics.counter(
            "netsched_gang_outcomes",
            "Gang attempts by outcome: scheduled (minMember reached), rejected (a member fit nowhere), "
            "timed_out (members released after the wait).",
            ["outcome", "profile"],
        )
        self.gang_placements = metrics.counter(
            "netsched_gang_placements",
            "Gang placement decisions by outcome: placed (one domain of `level` holds the whole gang), "
            "spread (preferred level: no domain of any level could), unschedulable (required level: "
            "no domain could).",
            ["outcome", "level", "profile"],
        )


class BackedOffGroups(Expiring[bool]):
    """Gangs that failed recently, until when (podGroupBackoffSeconds)."""

    def add(self, group: str, now: float, seconds: float) -> None:
        if seconds > 0:
            self.put(group, True, now + seconds, now)


class GangOutcome(StrEnum):
    """How a gang's attempt at Permit ended."""

    SCHEDULED = "scheduled"  # minMember reached: every waiting member allowed
    REJECTED = "rejected"  # a member fit nowhere, or was unreserved
    TIMED_OUT = "timed_out"  # the wait at Permit ended first


class PermitVerdict(StrEnum):
    ALLOW = "allow"  # this member completes the gang: allow it and every waiting member
    WAIT = "wait"  # hold it (reserved) until the rest are placed


@dataclass(frozen=True, slots=True)
class PermitAnswer:
    """What Permit should do for a member, and what it ended or started."""

    verdict: PermitVerdict
    more: int = 0  # members still to place (WAIT)
    siblings: tuple[PodInfo, ...] = ()  # pending members to wake now (WAIT)
    ended: Attempt | None = None  # the attempt this member completed (ALLOW)


@dataclass(frozen=True, slots=True)
class Release:
    """What a release ended: the attempt (None when no member waited) and how, with the
    message of the gang's GangReleased event."""

    ended: Attempt | None
    outcome: GangOutcome
    message: str


@dataclass(frozen=True, slots=True)
class Attempt:
    """A gang with members waiting at Permit: since when, for how long, for which profile."""

    started: float
    timeout: float
    profile: str


# How long the manager remembers, at most: members it released (their bindings unreserve in
# far less), and a member turned away for too few siblings (the next ones wait, gated).
RELEASED_SECONDS = 300.0
SHORT_SECONDS = 300.0
# How long a group counts as seen (its status recomputed, its malformed-group Event sent), and
# how many are remembered: past either, the status is recomputed or the Event sent once more.
SEEN_SECONDS = 3600.0
SEEN_BOUND = 10_000


class GangManager:
    """The gangs' state, and the answers the plugin shells act on (see the module doc)."""

    def __init__(
        self,
        clock: Clock,
        objects: ObjectReader,
        members: Callable[[str, str], Iterable[PodInfo]],
        status: PodGroupStatusWriter,
        metrics: GangMetrics | None = None,
    ) -> None:
        self.clock = clock
        self._objects = objects
        self._members = members
        self.status = status
        self.metrics = metrics  # recorded by the shells
        self.groups = GroupCache()
        self.backed_off = BackedOffGroups()
        self._permitted: Expiring[bool] = Expiring()  # passed the minResources check, until
        self._released: Expiring[frozenset[str]] = Expiring()  # members released, until reserved again
        self._short: Expiring[bool] = Expiring()  # a member was turned away: too few siblings
        self._attempts: dict[str, Attempt] = {}  # gangs with members waiting at Permit
        self._holding: dict[str, set[str]] = {}  # gang -> members told to Wait, not yet allowed
        self._placements: dict[str, Placement] = {}  # gang -> its committed placement decision
        # Groups whose status was recomputed, events sent once: a memory, not a record.
        self._seen: Expiring[bool] = Expiring(SEEN_BOUND)
        self._lock = threading.Lock()
        status.computes_with(self.status_of)

    # ------------------------------------------------------------ lookups

    def group_of(self, pod: PodInfo) -> PodGroup | None:
        """The pod's PodGroup; None when it has none or it does not exist; GroupError if malformed."""
        name = group_name(pod)
        return self._group(pod.namespace, name) if name else None

    def _group(self, namespace: str, name: str) -> PodGroup | None:
        """PodGroup namespace/name as watched; None when it does not exist; GroupError if malformed."""
        raw = self._objects.get(PODGROUPS_KEY, namespace, name)
        return None if raw is None else self.groups.parse(raw)

    def ref_of(self, namespace: str, name: str) -> ObjectRef:
        """PodGroup namespace/name as the object an Event is about, with its uid (kubectl
        describe finds a PodGroup's events by uid) even when it is malformed."""
        raw = self._objects.get(PODGROUPS_KEY, namespace, name)
        meta = (raw or {}).get("metadata") or {}
        return PodGroup(
            namespace,
            name,
            0,
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
        ).ref()

    def members(self, pg: PodGroup) -> list[PodInfo]:
        """The group's pods: pending ones and assigned ones (bound, or reserved on a node)."""
        return self.group_members(pg.namespace, pg.name)

    def group_members(self, namespace: str, name: str) -> list[PodInfo]:
        """The pods labelled as members of PodGroup namespace/name (it need not exist)."""
        return list(self._members(namespace, name))

    def placed(self, pg: PodGroup, members: list[PodInfo] | None = None) -> list[PodInfo]:
        """THE placed members: on a node (bound, or reserved), not released since.  A member
        released at Permit stays reserved until its binding cycle unreserves it; it counts
        again once it is reserved anew (Reserve: `reserved`).  Permit, PostFilter, the status,
        minResources and GangTopology's decision and locality all count with this."""
        return self.placed_of(pg.namespace, pg.name, members)

    def placed_of(self, namespace: str, name: str, members: list[PodInfo] | None = None) -> list[PodInfo]:
        """`placed` for PodGroup namespace/name (it need not exist: members may come first)."""
        gone = self._released.get(f"{namespace}/{name}", self.clock.now()) or frozenset()
        return [
            p
            for p in (members if members is not None else self.group_members(namespace, name))
            if p.node_name and p.uid not in gone
        ]

    def reserved(self, pod: PodInfo) -> None:
        """A member was reserved on a node: placed again if it had been released."""
        group = full_name(pod)
        now = self.clock.now()
        if group and pod.uid in (self._released.get(group, now) or ()):
            self._released.update(
                group, lambda g: (g or frozenset()) - {pod.uid}, now + RELEASED_SECONDS, now
            )

    def waiting(self, handle: Handle, group: str) -> list[WaitingPod]:
        return [wp for wp in handle.iterate_waiting_pods() if full_name(wp.pod) == group]

    def waiting_gangs(self, profile: str) -> int:
        """Gangs of `profile` with members waiting at Permit (the gangs_waiting gauge)."""
        with self._lock:
            return sum(1 for a in self._attempts.values() if a.profile == profile)

    # ------------------------------------------------------------ PreEnqueue and PreFilter

    def gate(self, pod: PodInfo, pg: PodGroup) -> Status:
        """Hold a member out of the active queue while its gang is known to be short (a member
        was turned away for too few siblings and no sibling came since): trying it would
        cost an attempt that cannot pass.  The member that completes the count passes, and
        reaching Permit it wakes the others (`permit` answers them as siblings)."""
        if self._short.get(pg.full_name, self.clock.now()) is None:
            return Status.success()
        have = len(self.members(pg))
        if have >= pg.min_member:
            return Status.success()
        return Status.unresolvable(
            f"waiting for {pg.min_member - have} more pod(s) of group {pg.name} "
            f"(current pods number: {have}, minMember: {pg.min_member})"
        )

    def pre_filter(self, pod: PodInfo, pg: PodGroup, snapshot: Snapshot, permit_seconds: float) -> Status:
        """Backed off, too few members, or minResources beyond the cluster: rejected at once."""
        group = pg.full_name
        now = self.clock.now()
        if self._seen.get(group, now) is None:  # recompute a status a crash may have left stale
            self._seen.put(group, True, now + SEEN_SECONDS, now)
            self.status.mark(group)
        left = self.backed_off.remaining(group, now)
        if left > 0:
            return Status.unresolvable(f"podGroup {group} failed recently (backoff {left:.0f}s left)")
        members = self.members(pg)
        if len(members) < pg.min_member:
            self._short.put(group, True, now + SHORT_SECONDS, now)
            return Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: "
                f"{len(members)}, minMember of group: {pg.min_member} "
                f"(waiting for {pg.min_member - len(members)} more)"
            )
        self._short.pop(group)
        if not pg.min_resources or self._permitted.get(group, now):
            return Status.success()
        gap = resource_gap(pg, snapshot, self.placed(pg, members))
        if gap:
            return Status.unresolvable(f"podGroup {group} cannot fit the cluster: resource gap: {gap}")
        self._permitted.put(group, True, now + permit_seconds, now)
        return Status.success()

    # ------------------------------------------------------------ PostFilter

    def runs(self, pg: PodGroup) -> bool:
        """minMember are placed already: a late extra member that fits nowhere costs the others
        nothing."""
        return len(self.placed(pg)) >= pg.min_member

    def back_off(self, pg: PodGroup, seconds: float) -> None:
        """The gang failed with all its members known: none is tried for `seconds`."""
        if len(self.members(pg)) >= pg.min_member:
            self.backed_off.add(pg.full_name, self.clock.now(), seconds)

    # ------------------------------------------------------------ Permit

    def permit(self, pod: PodInfo, pg: PodGroup, timeout: float, profile: str) -> PermitAnswer:
        """Wait until minMember members are placed; the member that completes the gang allows
        all.  The cache already counts this pod (assumed) among the placed members."""
        group = pg.full_name
        members = self.members(pg)
        now = self.clock.now()
        # Counted under the lock `release` records the released members under: a gang is
        # never allowed on members a release on the binding thread is rejecting.
        with self._lock:
            placed = len(self.placed(pg, members))
            allow = placed >= pg.min_member
            if allow:
                self._holding.pop(group, None)
                ended = self._attempts.pop(group, None)
            else:
                # The status changes with the first member to wait (phase Scheduling); the
                # next ones leave it as it is.
                first = group not in self._attempts
                self._holding.setdefault(group, set()).add(pod.uid)
                if first:
                    self._attempts[group] = Attempt(now, timeout, profile)
        if allow:
            self.status.mark(group)
            return PermitAnswer(PermitVerdict.ALLOW, ended=ended)
        if first:
            self.status.mark(group)
        # The siblings turned away (too few members then, backed off, or held out at
        # PreEnqueue) should follow at once, as upstream's ActivateSiblings.
        siblings = tuple(p for p in members if not p.node_name and p.uid != pod.uid)
        return PermitAnswer(PermitVerdict.WAIT, more=pg.min_member - placed, siblings=siblings)

    # ------------------------------------------------------------ release

    def release(
        self, pg: PodGroup, why: str, outcome: GangOutcome | None, released: Iterable[str]
    ) -> Release | None:
        """Forget the gang's attempt: the members `released` (to be rejected at Permit by the
        caller, after this returns, or the one unreserved) no longer count as placed, the minResources pass and the placement
        decision are dropped (the next attempt decides again).  `outcome` None: timed out
        when the wait had run its course, else rejected.  None when no attempt was under way."""
        group = pg.full_name
        now = self.clock.now()
        members = self.members(pg)
        with self._lock:  # atomic with Permit's count (see permit)
            placed = len(self.placed(pg, members))  # what the gang held when it was released
            gone = set(released) | self._holding.pop(group, set())
            self._placements.pop(group, None)
            attempt = self._attempts.pop(group, None)
            if gone:
                self._released.update(group, lambda g: (g or frozenset()) | gone, now + RELEASED_SECONDS, now)
        self._permitted.pop(group)
        if attempt is None:
            if gone:
                self.status.mark(group)
            return None
        if outcome is None:
            timed_out = now - attempt.started >= attempt.timeout - 1e-6
            outcome = GangOutcome.TIMED_OUT if timed_out else GangOutcome.REJECTED
        if outcome is GangOutcome.TIMED_OUT:
            msg = f"group {pg.name} timed out after {attempt.timeout:g}s: {placed} of {pg.min_member} placed, released"
        else:
            msg = f"group {pg.name} rejected ({why}): {placed} of {pg.min_member} placed, released"
        self.status.mark(group)
        return Release(attempt, outcome, msg)

    # ------------------------------------------------------------ backoff

    def backoffs_over(self) -> list[tuple[str, list[PodInfo]]]:
        """Each gang whose backoff just ended, with its pending members (to wake)."""
        out = []
        for group in self.backed_off.take_ended(self.clock.now()):
            ns, _, name = group.partition("/")
            out.append((group, [p for p in self._members(ns, name) if not p.node_name]))
        return out

    def no_longer_short(self) -> list[tuple[str, list[PodInfo]]]:
        """Each gang held out at PreEnqueue whose count is reached without a member entering
        (its minMember lowered, say), with its pending members (to wake)."""
        out = []
        for group in self._short.live(self.clock.now()):
            ns, _, name = group.partition("/")
            try:
                pg = self._group(ns, name)
            except GroupError:
                continue
            members = list(self._members(ns, name))
            if pg is None or len(members) >= pg.min_member:
                self._short.pop(group)
                out.append((group, [p for p in members if not p.node_name]))
        return out

    # ------------------------------------------------------------ placement decisions

    def placement(self, group: str) -> Placement | None:
        with self._lock:
            return self._placements.get(group)

    def keep_placement(self, placement: Placement) -> bool:
        """Keep the decision for the gang's later members; False when one is already kept."""
        with self._lock:
            if placement.group in self._placements:
                return False
            if len(self._placements) >= MAX_PLACEMENTS:
                self._forget_deleted_groups()
            self._placements[placement.group] = placement
        return True

    def _forget_deleted_groups(self) -> None:
        """Drop the decisions of PodGroups that no longer exist (lock held)."""
        for group in list(self._placements):
            ns, _, name = group.partition("/")
            if self._objects.get(PODGROUPS_KEY, ns, name) is None:
                del self._placements[group]

    def drop_placement(self, group: str) -> None:
        with self._lock:
            self._placements.pop(group, None)

    # ------------------------------------------------------------ status and events

    def status_of(self, group: str) -> StatusUpdate | None:
        """The PodGroup's status as the pods show it now (see status.py)."""
        ns, _, name = group.partition("/")
        raw = self._objects.get(PODGROUPS_KEY, ns, name)
        if raw is None:  # deleted: forget it (a group of that name later is a new one)
            self._seen.pop(group)
            return None
        try:
            pg = self.groups.parse(raw)
        except GroupError:
            return None
        with self._lock:
            waiting = set(self._holding.get(group, ()))
        members = self.members(pg)
        # Members allowed at Permit are as good as bound; released ones are gone.
        scheduled = sum(1 for p in self.placed(pg, members) if p.uid not in waiting)
        running = sum(1 for p in members if p.node_name and p.phase == "Running")
        if running and running >= pg.min_member:
            phase = "Running"
        elif scheduled >= pg.min_member and scheduled:
            phase = "Scheduled"
        elif scheduled or waiting:
            phase = "Scheduling"
        elif len(members) >= pg.min_member:
            phase = "PreScheduling"
        else:
            phase = "Pending"
        # The stored status as it is now (a write need not bump the cached resourceVersion).
        stored = raw.get("status") or {}
        return StatusUpdate(ns, name, stored, {"phase": phase, "scheduled": scheduled, "running": running})

    def warn_once(self, events: EventRecorder, ns: str, name: str, reason: str, msg: str) -> None:
        """A Warning Event about PodGroup ns/name, sent the first time this message comes up
        (first_time): the plugins' one way to report on a group."""
        if self.first_time(ns, name, msg):
            events.event(self.ref_of(ns, name), "Warning", reason, "Scheduling", msg)

    def first_time(self, ns: str, name: str, msg: str) -> bool:
        """True the first time this message is asked about for the group (a malformed group is
        retried often: its Event is sent once)."""
        key = f"event:{ns}/{name}:{msg}"
        now = self.clock.now()
        with self._lock:
            if self._seen.get(key, now) is not None:
                return False
            self._seen.put(key, True, now + SEEN_SECONDS, now)
        return True


def resource_gap(pg: PodGroup, snapshot: Snapshot, placed: list[PodInfo]) -> str:
    """What minResources (plus minMember pod slots) misses of the cluster's free room, the
    group's own placed members (GangManager.placed) counted as free ("" when it fits)."""
    want = dict(pg.min_resources)
    want[PODS] = max(want.get(PODS, 0), pg.min_member)
    free = (snapshot.allocatable - snapshot.requested).sum(axis=0) if len(snapshot) else np.zeros(0)
    own: dict[str, int] = {}
    for p in placed:
        for r, v in p.requests.items():
            own[r] = own.get(r, 0) + v
        own[PODS] = own.get(PODS, 0) + 1
    missing = []
    for r, amount in sorted(want.items()):
        col = snapshot.col.get(r)
        have = (int(free[col]) if col is not None and len(free) else 0) + own.get(r, 0)
        if have < amount:
            missing.append(f"{r}: {format_canonical(r, amount - have)}")
    return ", ".join(missing)


# The gang plugins' slots in the core: the manager they share, the pod index of gang members
# (by "namespace/group"), and the periodic work (backoffs that ended, PodGroup statuses).
GANGS: ServiceKey[GangManager] = ServiceKey("gangs", GangManager)
MEMBERS_INDEX = "gangs/podgroup"
BACKOFF_TASK = "gangs/backoff"
STATUS_TASK = "gangs/status"
# How often a gang whose backoff ended is looked for, and statuses written (without a nudge).
BACKOFF_PERIOD_SECONDS = 1.0
STATUS_PERIOD_SECONDS = 1.0


def gangs_of(handle: Handle) -> GangManager:
    """The scheduler's gang manager, built by the first gang plugin that asks (one per process:
    every profile and every reload share it, as the pods waiting at Permit are shared)."""
    gangs = handle.shared(GANGS, lambda: _build(handle))
    _register_tasks(handle, gangs)  # by every gang plugin built: the tasks live while one does
    return gangs


def _build(handle: Handle) -> GangManager:
    handle.add_pod_index(MEMBERS_INDEX, full_name)
    status = PodGroupStatusWriter(
        handle.api,
        inline=handle.api.synchronous,
        soon=lambda: handle.run_soon(STATUS_TASK),
        sleep=lambda s: handle.shutting_down(s),
        stopped=handle.shutting_down,
    )

    def members(namespace: str, name: str) -> list[PodInfo]:
        return handle.pods_by_index(MEMBERS_INDEX, f"{namespace}/{name}")

    metrics = GangMetrics(handle.plugin_metrics) if handle.plugin_metrics is not None else None
    return GangManager(handle.clock, handle.objects, members, status, metrics)


def _register_tasks(handle: Handle, gangs: GangManager) -> None:
    def wake_backed_off() -> None:
        """A gang whose backoff is over, or that was held out at PreEnqueue and is short no
        more, is retried now: no cluster event would wake members held out at PreEnqueue, nor
        the ones parked in the unschedulable pool for a backoff."""
        for _group, pending in gangs.backoffs_over() + gangs.no_longer_short():
            handle.activate(pending)

    handle.every(BACKOFF_TASK, BACKOFF_PERIOD_SECONDS, wake_backed_off)
    if not handle.api.synchronous:
        handle.every(STATUS_TASK, STATUS_PERIOD_SECONDS, gangs.status.write_marked)
