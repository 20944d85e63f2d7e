"""DefaultPreemption: when a pod fits nowhere, evict lower-priority pods to make room.

As kube-scheduler's DefaultPreemption (PostFilter):
  1. Eligibility: preemptionPolicy Never never preempts; a pod already
     nominated to a node where a lower-priority pod is terminating because
     of a preemption (DisruptionTarget=True, reason PreemptionByScheduler)
     waits for it instead of preempting again (unless that node is now
     UnschedulableAndUnresolvable for it).
  2. Candidates: only nodes whose filter verdict was Unschedulable (removing
     pods might help), dry-run from a random offset until enough are found
     (args.py), victims chosen per node as in victims.py.
  3. The best candidate (candidates.py) is prepared: each victim gets the
     DisruptionTarget condition and is then deleted (a victim waiting in
     Permit is rejected instead), with a "Preempted" event each, and
     lower-priority pods nominated to that node lose their nomination so
     they look elsewhere.
  4. Success with the node name: the scheduler records it as the pod's
     nominatedNodeName and retries the pod once the victims are gone.
Without a candidate the status message is kube's ("0/N nodes are available:
...") and the runtime prefixes it with "preemption: ".
"""

from __future__ import annotations

import logging
import random

import numpy as np

from netsched.framework import (
    Code,
    CycleState,
    Diagnosis,
    Handle,
    NotFound,
    PodInfo,
    PostFilterPlugin,
    PostFilterResult,
    Snapshot,
    Status,
    names,
)

from .args import DefaultPreemptionArgs
from .candidates import Candidate, pick_one
from .victims import Pdb, parse_pdbs, select_victims_on_node

log = logging.getLogger(__name__)

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
# The pod condition a preemption victim carries while it terminates (core/v1 DisruptionTarget,
# reason PodReasonPreemptionByScheduler).
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


class DefaultPreemption(PostFilterPlugin[DefaultPreemptionArgs]):
    name = names.DEFAULT_PREEMPTION

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.rng = random.Random()  # the dry-run's starting offset; tests seed it

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        snapshot = self.handle.snapshot()
        eligible, why = self.eligible(pod, snapshot, diagnosis)
        if not eligible:
            log.debug("Pod is not eligible for preemption pod=%s reason=%r", pod.key, why)
            return None, Status.unschedulable(why)

        rows = np.flatnonzero(diagnosis.node_codes[: len(snapshot)] == Code.UNSCHEDULABLE)
        if len(rows) == 0:
            log.debug("Preemption will not help schedule pod pod=%s", pod.key)
            self._clear_own_nomination(pod)
            return PostFilterResult(""), Status.unschedulable(_fit_message(len(snapshot), {}))

        pdbs = parse_pdbs(self.handle.list_pdbs())
        offset = self.rng.randrange(len(rows))
        candidates, statuses = self.dry_run(state, pod, snapshot, rows.tolist(), pdbs, offset)
        if not candidates:
            errors = [st for st in statuses.values() if st.code == Code.ERROR]
            if errors:
                return None, Status(Code.ERROR, [r for st in errors for r in st.reasons], self.name)
            self._clear_own_nomination(pod)
            return PostFilterResult(""), Status.unschedulable(_fit_message(len(snapshot), statuses))

        best = pick_one(candidates)
        assert best is not None
        st = self.prepare(best, pod)
        if not st.ok:
            return None, st
        return PostFilterResult(best.node, victims=len(best.pods)), Status.success()

    # ------------------------------------------------------------ steps

    def eligible(self, pod: PodInfo, snapshot: Snapshot, diagnosis: Diagnosis) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.nominated_node_name
        if not nominated:
            return True, ""
        row = snapshot.index.get(nominated)
        if row is None:
            return True, ""
        if (
            row < len(diagnosis.node_codes)
            and diagnosis.node_codes[row] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        ):
            return True, ""  # the nominated node can no longer work: look again
        for p in snapshot.nodes[row].pods.values():
            if p.priority < pod.priority and terminating_by_preemption(p):
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def num_candidates(self, num_nodes: int) -> int:
        return self.args.num_candidates(num_nodes)

    def dry_run(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        rows: list[int],
        pdbs: list[Pdb],
        offset: int,
    ) -> tuple[list[Candidate], dict[str, Status]]:
        """Candidates (non-violating first) and the status of every node that is not one."""
        want = self.num_candidates(len(rows))
        fine: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        for i in range(len(rows)):
            node = snapshot.nodes[rows[(offset + i) % len(rows)]]
            victims, st = select_victims_on_node(self.handle, state.clone(), pod, node.clone(), pdbs)
            if st.ok and victims is not None and victims.pods:
                bucket = fine if victims.num_pdb_violations == 0 else violating
                if len(bucket) < want:
                    bucket.append(Candidate(node.name, victims))
                if fine and len(fine) + len(violating) >= want:
                    break
                continue
            if st.ok:
                st = Status(
                    Code.ERROR, [f'expected at least one victim pod on node "{node.name}"'], self.name
                )
            statuses[node.name] = st
        return fine + violating, statuses

    def prepare(self, c: Candidate, pod: PodInfo) -> Status:
        """Evict the victims and clear lower-priority nominations on the node (kube's prepareCandidate)."""
        handle = self.handle
        first_error: BaseException | None = None
        for victim in c.pods:
            waiting = handle.get_waiting_pod(victim.uid)
            if waiting is not None:
                waiting.reject(self.name, "preempted")
                log.info(
                    "Preemptor pod rejected a waiting pod preemptor=%s victim=%s node=%s",
                    pod.key,
                    victim.key,
                    c.node,
                )
            else:
                try:
                    self._mark_disruption_target(victim, pod)
                    handle.api.delete_pod(victim)
                except Exception as e:
                    if not isinstance(e, NotFound):
                        log.error(
                            "Failed to preempt victim pod preemptor=%s victim=%s err=%s",
                            pod.key,
                            victim.key,
                            e,
                        )
                        first_error = first_error or e
                        continue
                log.info(
                    "Preemptor pod preempted victim pod preemptor=%s victim=%s node=%s",
                    pod.key,
                    victim.key,
                    c.node,
                )
            handle.events.event(
                victim, "Normal", "Preempted", "Preempting", f"Preempted by pod {pod.uid} on node {c.node}"
            )
        if first_error is not None:
            return Status.as_error(first_error, self.name)
        for p in handle.nominated_pods_for_node(c.node):
            if p.priority < pod.priority and p.uid != pod.uid:
                try:
                    handle.api.set_nominated_node_name(p, "")
                except Exception as e:  # not critical: the pod keeps a stale nomination
                    log.error("Cannot clear nominatedNodeName pod=%s err=%s", p.key, e)
        return Status.success()

    def _mark_disruption_target(self, victim: PodInfo, pod: PodInfo) -> None:
        """kube sets DisruptionTarget on a victim before deleting it."""
        self.handle.api.update_pod_condition(victim, disruption_target(pod))

    def _clear_own_nomination(self, pod: PodInfo) -> None:
        if not pod.nominated_node_name:
            return
        try:
            self.handle.api.set_nominated_node_name(pod, "")
        except Exception as e:
            log.error("Cannot clear nominatedNodeName pod=%s err=%s", pod.key, e)


def terminating_by_preemption(pod: PodInfo) -> bool:
    """A terminating pod that a scheduler's preemption is deleting (kube v1.31's
    podTerminatingByPreemption): its first DisruptionTarget condition is True with reason
    PreemptionByScheduler, the mark prepare() sets before each delete.  A pod terminating for
    any other reason (a rollout, the eviction API, a drain) is no preemption in progress."""
    if not pod.deleting:
        return False
    status = pod.raw.get("status") if isinstance(pod.raw, dict) else None
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions if isinstance(conditions, list) else ():
        if isinstance(cond, dict) and cond.get("type") == DISRUPTION_TARGET:
            return cond.get("status") == "True" and cond.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
    return False


def disruption_target(preemptor: PodInfo) -> dict[str, str]:
    """The condition kube v1.31's prepareCandidate patches into a victim's status before deleting it."""
    return {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": REASON_PREEMPTION_BY_SCHEDULER,
        "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
    }


def _fit_message(num_nodes: int, statuses: dict[str, Status]) -> str:
    """kube's FitError text over the dry-run statuses; nodes not tried count as not helpful."""
    reasons: dict[str, int] = {}
    for st in statuses.values():
        for r in st.reasons:
            reasons[r] = reasons.get(r, 0) + 1
    absent = num_nodes - len(statuses)
    if absent > 0:
        reasons[REASON_NOT_HELPFUL] = reasons.get(REASON_NOT_HELPFUL, 0) + absent
    return Diagnosis(num_nodes, np.zeros(0, dtype=np.int8), reasons).message()
