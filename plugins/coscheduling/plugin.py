"""Coscheduling: all of a gang's pods start together, or none holds anything.

scheduler-plugins' Coscheduling over PodGroups, as a thin shell over the
scheduler's gang manager (netsched.gangs: the PodGroups, permitted and
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
from typing import Any

from netsched.framework import (
    ASSIGNED_POD,
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Diagnosis,
    Handle,
    PermitPlugin,
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
from netsched.framework.names import COSCHEDULING
from netsched.gangs import (
    PODGROUP_KIND,
    GroupError,
    PodGroup,
    full_name,
    gangs_of,
    group_name,
    is_own_group,
    spec_changed,
)
from netsched.plugins.coscheduling.args import CoschedulingArgs


class Coscheduling(
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

    def _group_added(self, pod: PodInfo, _old: Any, new: Any) -> QueueingHint:
        return QueueingHint.QUEUE if is_own_group(pod, new) else QueueingHint.SKIP

    def _group_deleted(self, pod: PodInfo, old: Any, _new: Any) -> QueueingHint:
        return QueueingHint.QUEUE if is_own_group(pod, old) else QueueingHint.SKIP

    def _group_spec_changed(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Only the spec and the topology annotations decide PreFilter; status writes (ours
        included) change nothing."""
        return QueueingHint.QUEUE if is_own_group(pod, new) and spec_changed(old, new) else QueueingHint.SKIP

    def _member_bound(self, pod: PodInfo, _old: Any, new: Any) -> QueueingHint:
        group = full_name(pod)
        if group and isinstance(new, PodInfo) and full_name(new) == group:
            return QueueingHint.QUEUE
        return self._backoff_over(pod)

    def _member_added(self, pod: PodInfo, _old: Any, new: Any) -> QueueingHint:
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
        if group and self.gangs.backed_off.expired(group, self.handle.clock.now()):
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
            self.gangs.event_once(self.handle, pod.namespace, name, "Warning", "InvalidPodGroup", str(e))
            return None, Status.unresolvable(str(e))
        if pg is None:
            return None, Status.unresolvable(f"PodGroup {pod.namespace}/{name} not found")
        return None, self.gangs.pre_filter(pod, pg, snapshot, self.args.permit_waiting_time_seconds)

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
        return None, self.gangs.reject_gang(self.handle, pod, pg, self.args.pod_group_backoff_seconds)

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
        return self.gangs.permit(self.handle, pod, pg, timeout)

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
        self.gangs.release(self.handle, pg, f"rejection in Unreserve: pod {pod.name} was unreserved", "", pod)

    # ------------------------------------------------------------ PostBind

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        group = full_name(pod)
        if group:
            self.gangs.status.mark(group)
