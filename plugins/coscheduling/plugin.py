"""Coscheduling: all of a gang's pods start together, or none holds anything.

scheduler-plugins' Coscheduling over PodGroups (see groups.py).  Members queue
together (QueueSort by the group's creation time), are turned away at once
when the gang cannot start (PreFilter: too few members, minResources beyond
the cluster, failed recently), and wait at Permit, reserved on their nodes,
until `minMember` of them are reserved or bound; then all are allowed at once.
When a member fits nowhere (PostFilter), a member is unreserved or the wait
times out (Unreserve), every waiting member is rejected and its reservation
freed, so two gangs that each fit only alone never hold half the cluster each.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    Handle,
    PermitPlugin,
    PluginArgs,
    PodInfo,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueingHint,
    QueueSortPlugin,
    ReservePlugin,
    Snapshot,
    Status,
)
from netsched.framework.quantity import PODS, format_canonical
from netsched.plugins.coscheduling.args import CoschedulingArgs
from netsched.plugins.coscheduling.groups import (
    PODGROUP_KIND,
    PODGROUPS_KEY,
    Backoff,
    GroupCache,
    GroupError,
    PodGroup,
    full_name,
    group_name,
)
from netsched.plugins.coscheduling.status import StatusWriter

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Attempt:
    """A gang with members waiting at Permit: since when, for how long."""

    started: float
    timeout: float


class Coscheduling(
    QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, PermitPlugin, ReservePlugin, PostBindPlugin
):
    name = "Coscheduling"
    Args = CoschedulingArgs

    def __init__(self, args: PluginArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.cfg = self.args_as(CoschedulingArgs)
        self.groups = GroupCache()
        self.backoff = Backoff()
        self._permitted: dict[str, float] = {}  # passed the minResources check, until
        self._attempts: dict[str, _Attempt] = {}
        self._placed_at: dict[str, float] = {}  # gang -> when it was last fully placed
        self._released: dict[str, set[str]] = {}  # gang -> members released, until the next attempt
        self._holding: dict[str, set[str]] = {}  # gang -> members told to Wait, not yet allowed
        self._lock = threading.Lock()
        self.status = StatusWriter(handle, self._status_of)
        self._seen: set[str] = set()  # groups whose status was recomputed since start

    # ------------------------------------------------------------ lookups

    def group_of(self, pod: PodInfo) -> PodGroup | None:
        """The pod's PodGroup; None when it has none or it does not exist; GroupError if malformed."""
        name = group_name(pod)
        if not name:
            return None
        raw = self.handle.objects.get(PODGROUPS_KEY, pod.namespace, name)
        return None if raw is None else self.groups.parse(raw)

    def members(self, pg: PodGroup) -> list[PodInfo]:
        return self.handle.list_pods(pg.namespace, lambda p: group_name(p) == pg.name)

    def _waiting(self, group: str) -> list[Any]:
        return [wp for wp in self.handle.iterate_waiting_pods() if full_name(wp.pod) == group]

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """What can undo each PreFilter rejection (see the README's Queueing hints).

        Too few members: a member bound (by anyone) or the group's minMember lowered; a new
        pending member needs no event, it is tried itself and wakes the rest at Permit.
        PodGroup missing or malformed: the group added or its spec changed.  minResources
        beyond the cluster: room freed or added.  Backed off: any of these once the backoff is
        over.  Members rejected at Permit are woken by the sibling that reaches Permit next.
        """
        return [
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.ADD), self._group_added),
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.UPDATE), self._group_spec_changed),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD), self._member_bound),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._room_freed),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), self._room_freed
            ),
        ]

    def _is_own_group(self, pod: PodInfo, raw: Any) -> bool:
        meta = raw.get("metadata") if isinstance(raw, Mapping) else None
        if not isinstance(meta, Mapping):
            return False
        group = full_name(pod)
        return bool(group) and f"{meta.get('namespace') or 'default'}/{meta.get('name')}" == group

    def _group_added(self, pod: PodInfo, _old: Any, new: Any) -> QueueingHint:
        return QueueingHint.QUEUE if self._is_own_group(pod, new) else QueueingHint.SKIP

    def _group_spec_changed(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Only the spec decides PreFilter; status writes (ours included) change nothing."""
        if not self._is_own_group(pod, new) or not isinstance(old, Mapping):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if old.get("spec") != new.get("spec") else QueueingHint.SKIP

    def _member_bound(self, pod: PodInfo, _old: Any, new: Any) -> QueueingHint:
        group = full_name(pod)
        if group and isinstance(new, PodInfo) and full_name(new) == group:
            return QueueingHint.QUEUE
        return self._backoff_over(pod)

    def _room_freed(self, pod: PodInfo, _old: Any, _new: Any) -> QueueingHint:
        try:
            pg = self.group_of(pod)
        except GroupError:
            return QueueingHint.SKIP  # only the PodGroup's own update can mend it
        if pg is not None and pg.min_resources:
            return QueueingHint.QUEUE
        return self._backoff_over(pod)

    def _backoff_over(self, pod: PodInfo) -> QueueingHint:
        group = full_name(pod)
        if group and self.backoff.expired(group, self.handle.clock.now()):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    # ------------------------------------------------------------ QueueSort

    def sort_key_events(self) -> Sequence[ClusterEventWithHint]:
        """A member's key reads its PodGroup's creation time: a member queued before the group
        was known (informers list pods and PodGroups in parallel) sorts by its own time until
        the group is added, and back when it is deleted."""
        return [
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.ADD), self._group_added),
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.DELETE), self._group_deleted),
        ]

    def _group_deleted(self, pod: PodInfo, old: Any, _new: Any) -> QueueingHint:
        return QueueingHint.QUEUE if self._is_own_group(pod, old) else QueueingHint.SKIP

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    def sort_key(self, qp: QueuedPodInfo) -> tuple[int, float, str]:
        """Priority, then the group's creation time (a gang queues together), then the pod's
        first attempt; ties by "namespace/group" or "namespace/pod"."""
        pod = qp.pod
        try:
            pg = self.group_of(pod)
        except GroupError:
            pg = None
        if pg is not None and pg.created:
            return (-pod.priority, pg.created, pg.full_name)
        first = qp.initial_attempt_timestamp if qp.initial_attempt_timestamp is not None else qp.timestamp
        clock = self.handle.clock
        return (-pod.priority, first - clock.now() + clock.wall(), pod.key)

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        name = group_name(pod)
        if not name:
            return None, Status.success()
        try:
            pg = self.group_of(pod)
        except GroupError as e:
            self._group_event_once(pod.namespace, name, "Warning", "InvalidPodGroup", str(e))
            return None, Status.unresolvable(str(e))
        if pg is None:
            return None, Status.unresolvable(f"PodGroup {pod.namespace}/{name} not found")
        group = pg.full_name
        if group not in self._seen:  # recompute a status a crash may have left stale
            self._seen.add(group)
            self.status.mark(group)
        now = self.handle.clock.now()
        left = self.backoff.remaining(group, now)
        if left > 0:
            return None, Status.unresolvable(f"podGroup {group} failed recently (backoff {left:.0f}s left)")
        count = len(self.members(pg))
        if count < pg.min_member:
            return None, Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: {count}, "
                f"minMember of group: {pg.min_member} (waiting for {pg.min_member - count} more)"
            )
        if not pg.min_resources:
            return None, Status.success()
        with self._lock:
            until = self._permitted.get(group, 0.0)
        if until > now:
            return None, Status.success()
        gap = self._resource_gap(pg, snapshot)
        if gap:
            return None, Status.unresolvable(f"podGroup {group} cannot fit the cluster: resource gap: {gap}")
        with self._lock:
            self._permitted[group] = now + self.cfg.permit_waiting_time_seconds
        return None, Status.success()

    def _resource_gap(self, pg: PodGroup, snapshot: Snapshot) -> str:
        """What minResources (plus minMember pod slots) misses of the cluster's free room, the
        group's own assigned pods counted as free ("" when it fits)."""
        want = dict(pg.min_resources)
        want[PODS] = max(want.get(PODS, 0), pg.min_member)
        free = (snapshot.allocatable - snapshot.requested).sum(axis=0) if len(snapshot) else np.zeros(0)
        own: dict[str, int] = {}
        for p in self.members(pg):
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

    # ------------------------------------------------------------ PostFilter

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        try:
            pg = self.group_of(pod)
        except GroupError:
            pg = None
        if pg is None:
            return None, Status.unschedulable("can not find pod group", plugin=self.name)
        assigned = sum(1 for p in self.members(pg) if p.node_name)
        if assigned >= pg.min_member:
            # The gang already runs: a late extra member does not cost the others anything.
            return None, Status.unschedulable(plugin=self.name)
        group = pg.full_name
        self._release(pg, f"optimistic rejection in PostFilter: pod {pod.name} is unschedulable", "rejected")
        if len(self.members(pg)) >= pg.min_member:
            self.backoff.add(group, self.handle.clock.now(), self.cfg.pod_group_backoff_seconds)
        msg = f"PodGroup {group} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        return None, Status.unschedulable(msg, plugin=self.name)

    # ------------------------------------------------------------ Permit

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if not group_name(pod):
            return Status.success(), 0.0
        try:
            pg = self.group_of(pod)
        except GroupError as e:
            return Status.unresolvable(str(e)), 0.0
        if pg is None:
            return Status.unschedulable("PodGroup not found"), 0.0
        group = pg.full_name
        # The cache already counts this pod (assumed) among the group's placed members.
        members = self.members(pg)
        assigned = sum(1 for p in members if p.node_name)
        if assigned >= pg.min_member:
            for wp in self._waiting(group):
                wp.allow(self.name)
            with self._lock:
                self._holding.pop(group, None)
            self._finish_attempt(group, "scheduled")
            self.status.mark(group)
            return Status.success(), 0.0
        timeout = float(pg.schedule_timeout or self.cfg.permit_waiting_time_seconds)
        with self._lock:
            self._released.pop(group, None)
            self._holding.setdefault(group, set()).add(pod.uid)
            if group not in self._attempts:
                self._attempts[group] = _Attempt(self.handle.clock.now(), timeout)
            self._observe_waiting()
        # Wake the siblings that were turned away (too few members then, or backed off), as
        # upstream's ActivateSiblings: the gang is now being placed, they should follow at once.
        self.handle.activate([p for p in members if not p.node_name and p.uid != pod.uid])
        more = pg.min_member - assigned
        msg = f"waiting for {more} more pod{'s' if more != 1 else ''} of group {pg.name}"
        self.handle.events.event(pod, "Normal", "WaitingForGang", "Permit", msg)
        self.status.mark(group)
        return Status(Code.WAIT, [msg], self.name), timeout

    # ------------------------------------------------------------ Reserve / Unreserve

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        try:
            pg = self.group_of(pod)
        except GroupError:
            pg = None
        if pg is None:
            return
        self._release(pg, f"rejection in Unreserve: pod {pod.name} was unreserved", "", pod)

    def _release(self, pg: PodGroup, why: str, outcome: str, pod: PodInfo | None = None) -> None:
        """Reject every waiting member (their bindings then unreserve and forget them)."""
        group = pg.full_name
        waiting = self._waiting(group)
        for wp in waiting:
            wp.reject(self.name, why)
        with self._lock:
            gone = self._released.setdefault(group, set())
            gone.update(wp.pod.uid for wp in waiting)
            gone.update(self._holding.pop(group, ()))
            if pod is not None:
                gone.add(pod.uid)
            self._permitted.pop(group, None)
            attempt = self._attempts.get(group)
        if attempt is None:
            if waiting:
                self.status.mark(group)
            return
        now = self.handle.clock.now()
        placed = sum(1 for p in self.members(pg) if p.node_name)
        if not outcome:
            outcome = "timed_out" if now - attempt.started >= attempt.timeout - 1e-6 else "rejected"
        if outcome == "timed_out":
            msg = (
                f"group {pg.name} timed out after {attempt.timeout:g}s: "
                f"{placed} of {pg.min_member} placed, released"
            )
        else:
            msg = f"group {pg.name} rejected ({why}): {placed} of {pg.min_member} placed, released"
        self.handle.events.event(pg.ref(), "Warning", "GangReleased", "Permit", msg)
        self._finish_attempt(group, outcome)
        self.status.mark(group)

    def _finish_attempt(self, group: str, outcome: str) -> None:
        with self._lock:
            attempt = self._attempts.pop(group, None)
            self._observe_waiting()
        if attempt is None:  # nothing waited: a gang of one, or a member beyond minMember
            return
        metrics = _gang_metrics(self.handle)
        if metrics is not None:
            metrics.gang_outcomes.labels(outcome, self.handle.profile_name).inc()
        if outcome == "scheduled":
            with self._lock:
                self._placed_at[group] = self.handle.clock.now()

    def _observe_waiting(self) -> None:
        metrics = _gang_metrics(self.handle)
        if metrics is not None:
            metrics.gangs_waiting.labels(self.handle.profile_name).set(len(self._attempts))

    # ------------------------------------------------------------ PostBind

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        group = full_name(pod)
        if group:
            self.status.mark(group)

    # ------------------------------------------------------------ status and events

    def _status_of(self, group: str) -> tuple[PodGroup, dict[str, Any]] | None:
        """The PodGroup's status as the pods show it now (see status.py)."""
        ns, _, name = group.partition("/")
        raw = self.handle.objects.get(PODGROUPS_KEY, ns, name)
        if raw is None:
            return None
        try:
            # The stored status as it is now (a write need not bump the cached resourceVersion).
            pg = dataclasses.replace(self.groups.parse(raw), status=raw.get("status") or {})
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
        return pg, {"phase": phase, "scheduled": scheduled, "running": running}

    def _group_event_once(self, ns: str, name: str, type_: str, reason: str, msg: str) -> None:
        key = f"event:{ns}/{name}:{msg}"
        if key in self._seen:
            return
        self._seen.add(key)
        ref = PodGroup(ns, name, 0)
        self.handle.events.event(ref.ref(), type_, reason, "Scheduling", msg)


class _GangMetrics:
    """The scheduler metrics the plugin records (netsched.observability.SchedulerMetrics)."""

    gang_outcomes: Any
    gangs_waiting: Any


def _gang_metrics(handle: Handle) -> _GangMetrics | None:
    observe = getattr(handle, "observe", None)
    if observe is None or not hasattr(observe, "gang_outcomes"):
        return None
    return observe  # type: ignore[no-any-return]
