"""The gang manager: what the scheduler knows about every gang, apart from the plugin shells.

Shaped like scheduler-plugins' Coscheduling PodGroupManager: the PodGroups
(parsed once per resourceVersion), the groups that passed the minResources
check recently (permitted), the groups that failed recently (backed off), the
gangs whose members wait at Permit (attempts), and, new here, the placement
decision of each gang being placed (netsched/gangs/placement.py).  The
Coscheduling and GangTopology plugins are thin shells over it; they reach it
through `handle.gangs` (gangs_of), so neither imports the other.

The composition root builds one manager per scheduler (it outlives a config
reload, as the pods waiting at Permit do), wires the PodGroup status writer
to it, and calls `wake_backed_off()` from its periodic housekeeping: a gang
whose backoff is over is retried then, not at the next unrelated cluster
event or the 5-minute flush of unschedulable pods.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from netsched.clock import Clock
from netsched.framework.names import COSCHEDULING  # it allows and rejects members at Permit
from netsched.framework.quantity import PODS, format_canonical
from netsched.framework.seams import Handle, ObjectReader, PluginMetrics, WaitingPod
from netsched.framework.shared import ServiceKey
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import PodInfo
from netsched.gangs.placement import Placement
from netsched.gangs.podgroup import PODGROUPS_KEY, GroupCache, GroupError, PodGroup, full_name, group_name
from netsched.gangs.status import PodGroupStatusWriter, StatusUpdate

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


class BackedOffGroups:
    """Gangs that failed recently, until when (podGroupBackoffSeconds), and whose end was seen."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, group: str, now: float, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self._until[group] = now + seconds

    def remaining(self, group: str, now: float) -> float:
        """Seconds of backoff left; an ended backoff is forgotten (a member is being tried)."""
        with self._lock:
            until = self._until.get(group)
            if until is None:
                return 0.0
            if until <= now:
                del self._until[group]
                return 0.0
            return until - now

    def expired(self, group: str, now: float) -> bool:
        """The group was backed off and that is over, though nobody took notice yet."""
        with self._lock:
            until = self._until.get(group)
            return until is not None and until <= now

    def take_expired(self, now: float) -> list[str]:
        """The groups whose backoff is over, forgotten from now on."""
        with self._lock:
            done = sorted(g for g, until in self._until.items() if until <= now)
            for g in done:
                del self._until[g]
            return done


@dataclass(slots=True)
class _Attempt:
    """A gang with members waiting at Permit: since when, for how long, for which profile."""

    started: float
    timeout: float
    profile: str


class GangManager:
    def __init__(
        self,
        clock: Clock,
        objects: ObjectReader,
        members: Callable[[str, str], Iterable[PodInfo]],
        activate: Callable[[Iterable[PodInfo]], int],
        status: PodGroupStatusWriter,
        metrics: GangMetrics | None = None,
    ) -> None:
        self.clock = clock
        self._objects = objects
        self._members = members
        self._activate = activate
        self.status = status
        self.metrics = metrics
        self.groups = GroupCache()
        self.backed_off = BackedOffGroups()
        self._permitted: dict[str, float] = {}  # passed the minResources check, until
        self._attempts: dict[str, _Attempt] = {}
        self._released: dict[str, set[str]] = {}  # gang -> members released, until the next attempt
        self._holding: dict[str, set[str]] = {}  # gang -> members told to Wait, not yet allowed
        self._placements: dict[str, Placement] = {}  # gang -> its committed placement decision
        self._seen: set[str] = set()  # groups whose status was recomputed, events sent once
        self._lock = threading.Lock()
        status.computes_with(self.status_of)

    # ------------------------------------------------------------ lookups

    def group_of(self, pod: PodInfo) -> PodGroup | None:
        """The pod's PodGroup; None when it has none or it does not exist; GroupError if malformed."""
        name = group_name(pod)
        if not name:
            return None
        raw = self._objects.get(PODGROUPS_KEY, pod.namespace, name)
        return None if raw is None else self.groups.parse(raw)

    def members(self, pg: PodGroup) -> list[PodInfo]:
        """The group's pods: pending ones and assigned ones (bound, or reserved on a node)."""
        return self.group_members(pg.namespace, pg.name)

    def group_members(self, namespace: str, name: str) -> list[PodInfo]:
        """The pods labelled as members of PodGroup namespace/name (it need not exist)."""
        return list(self._members(namespace, name))

    def placed(self, pg: PodGroup, members: list[PodInfo] | None = None) -> list[PodInfo]:
        """Members on a node (bound, or reserved and not released)."""
        with self._lock:
            gone = set(self._released.get(pg.full_name, ()))
        return [
            p
            for p in (members if members is not None else self.members(pg))
            if p.node_name and p.uid not in gone
        ]

    def waiting(self, handle: Handle, group: str) -> list[WaitingPod]:
        return [wp for wp in handle.iterate_waiting_pods() if full_name(wp.pod) == group]

    # ------------------------------------------------------------ PreFilter

    def pre_filter(self, pod: PodInfo, pg: PodGroup, snapshot: Snapshot, permit_seconds: float) -> Status:
        """Backed off, too few members, or minResources beyond the cluster: rejected at once."""
        group = pg.full_name
        if group not in self._seen:  # recompute a status a crash may have left stale
            self._seen.add(group)
            self.status.mark(group)
        now = self.clock.now()
        left = self.backed_off.remaining(group, now)
        if left > 0:
            return Status.unresolvable(f"podGroup {group} failed recently (backoff {left:.0f}s left)")
        members = self.members(pg)
        if len(members) < pg.min_member:
            return Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: "
                f"{len(members)}, minMember of group: {pg.min_member} "
                f"(waiting for {pg.min_member - len(members)} more)"
            )
        if not pg.min_resources:
            return Status.success()
        with self._lock:
            until = self._permitted.get(group, 0.0)
        if until > now:
            return Status.success()
        gap = resource_gap(pg, snapshot, members)
        if gap:
            return Status.unresolvable(f"podGroup {group} cannot fit the cluster: resource gap: {gap}")
        with self._lock:
            self._permitted[group] = now + permit_seconds
        return Status.success()

    # ------------------------------------------------------------ PostFilter

    def reject_gang(self, handle: Handle, pod: PodInfo, pg: PodGroup, backoff_seconds: float) -> Status:
        """A member fits nowhere: unless minMember are already placed, release what the gang
        holds and back it off."""
        members = self.members(pg)
        if len(self.placed(pg, members)) >= pg.min_member:
            # The gang already runs: a late extra member does not cost the others anything.
            return Status.unschedulable(plugin=COSCHEDULING)
        group = pg.full_name
        self.release(
            handle, pg, f"optimistic rejection in PostFilter: pod {pod.name} is unschedulable", "rejected"
        )
        if len(members) >= pg.min_member:
            self.backed_off.add(group, self.clock.now(), backoff_seconds)
        msg = f"PodGroup {group} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        return Status.unschedulable(msg, plugin=COSCHEDULING)

    # ------------------------------------------------------------ Permit

    def permit(self, handle: Handle, pod: PodInfo, pg: PodGroup, timeout: float) -> tuple[Status, float]:
        """Wait until minMember members are placed; the member that completes the gang allows all."""
        group = pg.full_name
        # The cache already counts this pod (assumed) among the group's placed members.
        members = self.members(pg)
        assigned = sum(1 for p in members if p.node_name)
        if assigned >= pg.min_member:
            for wp in self.waiting(handle, group):
                wp.allow(COSCHEDULING)
            with self._lock:
                self._holding.pop(group, None)
            self._finish_attempt(group, "scheduled")
            self.status.mark(group)
            return Status.success(), 0.0
        with self._lock:
            # The status changes with the first member to wait (phase Scheduling, released
            # members forgotten); the next ones leave it as it is.
            changes = self._released.pop(group, None) is not None or group not in self._attempts
            self._holding.setdefault(group, set()).add(pod.uid)
            if group not in self._attempts:
                self._attempts[group] = _Attempt(self.clock.now(), timeout, handle.profile_name)
        self._observe_waiting(handle.profile_name)
        # Wake the siblings that were turned away (too few members then, or backed off), as
        # upstream's ActivateSiblings: the gang is now being placed, they should follow at once.
        handle.activate([p for p in members if not p.node_name and p.uid != pod.uid])
        more = pg.min_member - assigned
        msg = f"waiting for {more} more pod{'s' if more != 1 else ''} of group {pg.name}"
        handle.events.event(pod, "Normal", "WaitingForGang", "Permit", msg)
        if changes:
            self.status.mark(group)
        return Status(Code.WAIT, [msg], COSCHEDULING), timeout

    # ------------------------------------------------------------ release

    def release(
        self, handle: Handle, pg: PodGroup, why: str, outcome: str, pod: PodInfo | None = None
    ) -> None:
        """Reject every waiting member (their bindings then unreserve and forget them) and drop
        the gang's placement decision: the next attempt decides again."""
        group = pg.full_name
        waiting = self.waiting(handle, group)
        for wp in waiting:
            wp.reject(COSCHEDULING, why)
        with self._lock:
            gone = self._released.setdefault(group, set())
            gone.update(wp.pod.uid for wp in waiting)
            gone.update(self._holding.pop(group, ()))
            if pod is not None:
                gone.add(pod.uid)
            self._permitted.pop(group, None)
            self._placements.pop(group, None)
            attempt = self._attempts.get(group)
        if attempt is None:
            if waiting:
                self.status.mark(group)
            return
        now = self.clock.now()
        placed = sum(1 for p in self.members(pg) if p.node_name)
        if not outcome:
            outcome = "timed_out" if now - attempt.started >= attempt.timeout - 1e-6 else "rejected"
        if outcome == "timed_out":
            msg = f"group {pg.name} timed out after {attempt.timeout:g}s: {placed} of {pg.min_member} placed, released"
        else:
            msg = f"group {pg.name} rejected ({why}): {placed} of {pg.min_member} placed, released"
        handle.events.event(pg.ref(), "Warning", "GangReleased", "Permit", msg)
        self._finish_attempt(group, outcome)
        self.status.mark(group)

    def _finish_attempt(self, group: str, outcome: str) -> None:
        with self._lock:
            attempt = self._attempts.pop(group, None)
        if attempt is None:  # nothing waited: a gang of one, or a member beyond minMember
            return
        self._observe_waiting(attempt.profile)
        if self.metrics is not None:
            self.metrics.gang_outcomes.labels(outcome, attempt.profile).inc()

    def _observe_waiting(self, profile: str) -> None:
        if self.metrics is not None:
            with self._lock:
                n = sum(1 for a in self._attempts.values() if a.profile == profile)
            self.metrics.gangs_waiting.labels(profile).set(n)

    # ------------------------------------------------------------ backoff

    def wake_backed_off(self) -> int:
        """Move the pending members of every gang whose backoff just ended to the active queue
        (the composition root calls this periodically); how many pods moved."""
        moved = 0
        for group in self.backed_off.take_expired(self.clock.now()):
            ns, _, name = group.partition("/")
            moved += self._activate([p for p in self._members(ns, name) if not p.node_name])
        return moved

    # ------------------------------------------------------------ placement decisions

    def placement(self, group: str) -> Placement | None:
        with self._lock:
            return self._placements.get(group)

    def commit_placement(self, placement: Placement, profile: str) -> bool:
        """Keep a new decision for the gang's later members and count it (metrics); False when
        one is already kept."""
        if not self.keep_placement(placement):
            return False
        self.observe_placement(placement, profile)
        return True

    def keep_placement(self, placement: Placement) -> bool:
        """Keep the decision for the gang's later members without counting it (one rebuilt from
        the members already placed is no new placement); False when one is already kept."""
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

    def observe_placement(self, placement: Placement, profile: str) -> None:
        if self.metrics is not None:
            self.metrics.gang_placements.labels(placement.outcome, placement.level, profile).inc()

    # ------------------------------------------------------------ status and events

    def status_of(self, group: str) -> StatusUpdate | None:
        """The PodGroup's status as the pods show it now (see status.py)."""
        ns, _, name = group.partition("/")
        raw = self._objects.get(PODGROUPS_KEY, ns, name)
        if raw is None:
            return None
        try:
            pg = self.groups.parse(raw)
        except GroupError:
            return None
        with self._lock:
            gone = set(self._released.get(group, ()))
            waiting = set(self._holding.get(group, ()))
        members = self.members(pg)
        # Members allowed at Permit are as good as bound; released ones are gone.
        scheduled = sum(1 for p in members if p.node_name and p.uid not in waiting and p.uid not in gone)
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

    def event_once(self, handle: Handle, ns: str, name: str, type_: str, reason: str, msg: str) -> None:
        """An Event on the PodGroup, once per distinct message (a malformed group is retried often)."""
        key = f"event:{ns}/{name}:{msg}"
        with self._lock:
            if key in self._seen:
                return
            if len(self._seen) >= MAX_PLACEMENTS:  # a memory, not a record: start over
                self._seen.clear()
            self._seen.add(key)
        handle.events.event(PodGroup(ns, name, 0).ref(), type_, reason, "Scheduling", msg)


def resource_gap(pg: PodGroup, snapshot: Snapshot, members: list[PodInfo]) -> str:
    """What minResources (plus minMember pod slots) misses of the cluster's free room, the
    group's own assigned pods counted as free ("" when it fits)."""
    want = dict(pg.min_resources)
    want[PODS] = max(want.get(PODS, 0), pg.min_member)
    free = (snapshot.allocatable - snapshot.requested).sum(axis=0) if len(snapshot) else np.zeros(0)
    own: dict[str, int] = {}
    for p in members:
        if p.node_name:
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
    return handle.shared(GANGS, lambda: _build(handle))


def _build(handle: Handle) -> GangManager:
    handle.add_pod_index(MEMBERS_INDEX, full_name)
    inline = handle.api.synchronous
    status = PodGroupStatusWriter(
        handle.api,
        inline=inline,
        soon=lambda: handle.run_soon(STATUS_TASK),
        sleep=lambda s: handle.shutting_down(s),
        stopped=handle.shutting_down,
    )

    def members(namespace: str, name: str) -> list[PodInfo]:
        return handle.pods_by_index(MEMBERS_INDEX, f"{namespace}/{name}")

    metrics = GangMetrics(handle.plugin_metrics) if handle.plugin_metrics is not None else None
    gangs = GangManager(handle.clock, handle.objects, members, handle.activate, status, metrics)
    handle.every(BACKOFF_TASK, BACKOFF_PERIOD_SECONDS, gangs.wake_backed_off)
    if not inline:
        handle.every(STATUS_TASK, STATUS_PERIOD_SECONDS, status.write_marked)
    return gangs
