"""Coscheduling: all of a gang's pods start together, or none holds anything.

scheduler-plugins' Coscheduling over PodGroups, as a thin shell over the
scheduler's gang manager (netsched.plugins.gangs: the PodGroups, permitted and
backed-off groups, members waiting at Permit).  Members queue together
(QueueSort by the group's creation time), are turned away at once when the
gang cannot start (PreFilter: too few members, minResources beyond the
cluster, failed recently), and wait at Permit, reserved on their nodes, until
`minMember` of them are reserved or bound; then all are allowed at once.
When a member fits nowhere (PostFilter), a member is unreserved or the wait
times out (Unreserve), every waiting member is rejected and its reservation
freed, so two gangs that each fit only alone never hold half the cluster each.
"""

from __future__ import annotations

from collections.abc import Sequence

from netsched.framework import (
    ASSIGNED_POD,
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Diagnosis,
    Handle,
    PermitPlugin,
    PodInfo,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueingHint,
    QueueSortPlugin,
    ReservePlugin,
    Snapshot,
    Status,
)
from netsched.framework.names import COSCHEDULING

from ..gangs import (
    PODGROUP_KIND,
    Attempt,
    GangOutcome,
    GroupError,
    PermitVerdict,
    PodGroup,
    full_name,
    gangs_of,
    group_name,
    is_own_group,
    spec_changed,
)
from .args import CoschedulingArgs


class Coscheduling(
    PreEnqueuePlugin[CoschedulingArgs],
    QueueSortPlugin[CoschedulingArgs],
    PreFilterPlugin[CoschedulingArgs],
    PostFilterPlugin[CoschedulingArgs],
    PermitPlugin[CoschedulingArgs],
    ReservePlugin[CoschedulingArgs],
    PostBindPlugin[CoschedulingArgs],
):
    name = COSCHEDULING

    def __init__(self, args: CoschedulingArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.gangs = gangs_of(handle)
        # _member_added's last answer: (the arriving pod, its group, the group's
        # resourceVersion, whether the group has minMember pods with it).
        self._count_memo: tuple[PodInfo, str, str, bool] | None = None

    def group_of(self, pod: PodInfo) -> PodGroup | None:
        """The pod's PodGroup; None when it has none or it does not exist; GroupError if malformed."""
        return self.gangs.group_of(pod)

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """What can undo each PreFilter rejection (see the README's Queueing hints).

        Too few members: a member bound (by anyone), a new pending member that completes the
        count (a gated one is never tried itself, so it cannot wake the rest at Permit; kube's
        GangScheduling registers UnscheduledPod/Add alike), or the group's minMember lowered.
        PodGroup missing or malformed: the group added or its spec changed.  minResources
        beyond the cluster: room freed or added.  Backed off: any of these once the backoff is
        over (and the gang manager wakes a backed-off gang when its backoff ends).  Members
        rejected at Permit are woken by the sibling that reaches Permit next.
        """
        return [
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.ADD), self._group_added),
            ClusterEventWithHint(ClusterEvent(PODGROUP_KIND, ActionType.UPDATE), self._group_spec_changed),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD), self._member_bound),
            ClusterEventWithHint(ClusterEvent(UNSCHEDULED_POD, ActionType.ADD), self._member_added),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._room_freed),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), self._room_freed
            ),
        ]

    def _group_added(self, pod: PodInfo, _old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE if is_own_group(pod, new) else QueueingHint.SKIP

    def _group_deleted(self, pod: PodInfo, old: object, _new: object) -> QueueingHint:
        return QueueingHint.QUEUE if is_own_group(pod, old) else QueueingHint.SKIP

    def _group_spec_changed(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        """Only the spec and the topology annotations decide PreFilter; status writes (ours
        included) change nothing."""
        return QueueingHint.QUEUE if is_own_group(pod, new) and spec_changed(old, new) else QueueingHint.SKIP

    def _member_bound(self, pod: PodInfo, _old: object, new: object) -> QueueingHint:
        group = full_name(pod)
        if group and isinstance(new, PodInfo) and full_name(new) == group:
            return QueueingHint.QUEUE
        return self._backoff_over(pod)

    def _member_added(self, pod: PodInfo, _old: object, new: object) -> QueueingHint:
        """Only the member that brings the group to minMember: one arriving before would send
        every sibling through another attempt that cannot pass."""
        group = full_name(pod)
        if not group or not isinstance(new, PodInfo) or new.uid == pod.uid or full_name(new) != group:
            return QueueingHint.SKIP
        try:
            pg = self.group_of(pod)
        except GroupError:
            return QueueingHint.SKIP
        if pg is None or not self._completes_count(pg, new):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def _completes_count(self, pg: PodGroup, new: PodInfo) -> bool:
        """Whether the group has minMember pods now that `new` arrived.  One event asks once per
        parked sibling, each answer the same: the first is kept for the rest (the queue asks its
        hints one event at a time, under its lock), so an arrival costs one member list, not one
        per sibling.  The answer is kept for this very event object and group version only."""
        memo = self._count_memo
        if memo is not None and memo[0] is new and memo[1] == pg.full_name and memo[2] == pg.resource_version:
            return memo[3]
        complete = len(self.gangs.members(pg)) >= pg.min_member
        self._count_memo = (new, pg.full_name, pg.resource_version, complete)
        return complete

    def _room_freed(self, pod: PodInfo, _old: object, _new: object) -> QueueingHint:
        try:
            pg = self.group_of(pod)
        except GroupError:
            return QueueingHint.SKIP  # only the PodGroup's own update can mend it
        if pg is not None and pg.min_resources:
            return QueueingHint.QUEUE
        return self._backoff_over(pod)

    def _backoff_over(self, pod: PodInfo) -> QueueingHint:
        group = full_name(pod)
        if group and self.gangs.backed_off.ended(group, self.handle.clock.now()):
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

    # ------------------------------------------------------------ PreEnqueue

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """A member of a gang known to be short stays out of the active queue (no attempt that
        cannot pass); the one that completes the count wakes it from Permit."""
        try:
            pg = self.group_of(pod)
        except GroupError:
            return Status.success()  # PreFilter reports it, with the event
        return Status.success() if pg is None else self.gangs.gate(pod, pg)

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
            self.gangs.warn_once(self.handle.events, pod.namespace, name, "InvalidPodGroup", str(e))
            return None, Status.unresolvable(str(e))
        if pg is None:
            return None, Status.unresolvable(f"PodGroup {pod.namespace}/{name} not found")
        return None, self.gangs.pre_filter(pod, pg, snapshot, self.args.permit_waiting_time_seconds)

    # ------------------------------------------------------------ PostFilter

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """A member fits nowhere: unless minMember are already placed, release what the gang
        holds and back it off."""
        try:
            pg = self.group_of(pod)
        except GroupError:
            pg = None
        if pg is None:
            return None, Status.unschedulable("can not find pod group", plugin=self.name)
        if self.gangs.runs(pg):
            return None, Status.unschedulable(plugin=self.name)
        why = f"optimistic rejection in PostFilter: pod {pod.name} is unschedulable"
        self._release(pg, why, GangOutcome.REJECTED)
        self.gangs.back_off(pg, self.args.pod_group_backoff_seconds)
        msg = f"PodGroup {pg.full_name} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
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
        timeout = float(pg.schedule_timeout or self.args.permit_waiting_time_seconds)
        answer = self.gangs.permit(pod, pg, timeout, self.handle.profile_name)
        if answer.verdict is PermitVerdict.ALLOW:
            for wp in self.gangs.waiting(self.handle, pg.full_name):
                wp.allow(self.name)
            self._ended(answer.ended, GangOutcome.SCHEDULED)
            return Status.success(), 0.0
        self._observe_waiting(self.handle.profile_name)
        self.handle.activate(answer.siblings)
        msg = f"waiting for {answer.more} more pod{'s' if answer.more != 1 else ''} of group {pg.name}"
        self.handle.events.event(pod, "Normal", "WaitingForGang", "Permit", msg)
        return Status(Code.WAIT, [msg], self.name), timeout

    # ------------------------------------------------------------ Reserve / Unreserve

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if group_name(pod):
            self.gangs.reserved(pod)
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        try:
            pg = self.group_of(pod)
        except GroupError:
            pg = None
        if pg is not None:
            self._release(pg, f"rejection in Unreserve: pod {pod.name} was unreserved", None, pod)

    # ------------------------------------------------------------ PostBind

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        group = full_name(pod)
        if group:
            self.gangs.status.mark(group)

    # ------------------------------------------------------------ acting on the manager's answers

    def _release(
        self, pg: PodGroup, why: str, outcome: GangOutcome | None, pod: PodInfo | None = None
    ) -> None:
        """The manager forgets the attempt and records the members released, then every
        waiting member is rejected (their bindings then unreserve and forget them); the
        manager says how the attempt ended, for the event and the metrics.  Recorded first: a
        Permit on the scheduling thread meanwhile must not count the rejected as placed."""
        waiting = self.gangs.waiting(self.handle, pg.full_name)
        gone = [wp.pod.uid for wp in waiting] + ([pod.uid] if pod is not None else [])
        release = self.gangs.release(pg, why, outcome, gone)
        for wp in waiting:
            wp.reject(self.name, why)
        if release is not None:
            self.handle.events.event(pg.ref(), "Warning", "GangReleased", "Permit", release.message)
            self._ended(release.ended, release.outcome)

    def _ended(self, attempt: Attempt | None, outcome: GangOutcome) -> None:
        metrics = self.gangs.metrics
        if attempt is None or metrics is None:  # nothing waited: a gang of one, or a late extra member
            return
        metrics.gang_outcomes.labels(outcome, attempt.profile).inc()
        self._observe_waiting(attempt.profile)

    def _observe_waiting(self, profile: str) -> None:
        if self.gangs.metrics is not None:
            self.gangs.metrics.gangs_waiting.labels(profile).set(self.gangs.waiting_gangs(profile))
