"""What an eviction says on the wire and what its answer means, for every ClusterAPI that evicts.

KubeAPI.evict POSTs `eviction_body(pod)` to pods/NAME/eviction; the in-memory cluster
(netsched.inmemory) answers with the same Status errors the API server would. Both turn
the answer into an EvictionOutcome with `outcome_of`, so a budget's refusal, a pod gone and
a namesake mean the same to the caller whichever cluster it evicts in.
"""

from __future__ import annotations

from typing import Any

from netsched.framework.disruption import EvictionOutcome, EvictionResult
from netsched.framework.types import PodInfo
from netsched.kube.errors import ApiError, Conflict, DisruptionBudgetRefusal, Forbidden, NotFound


def eviction_body(pod: PodInfo, *, dry_run: bool = False) -> dict[str, Any]:
    """A policy/v1 Eviction of `pod`; its uid is a precondition, so a pod re-created under the
    same name (a StatefulSet's, say) is never evicted in its place."""
    options: dict[str, Any] = {}
    if pod.uid:
        options["preconditions"] = {"uid": pod.uid}
    if dry_run:
        options["dryRun"] = ["All"]
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
        "deleteOptions": options,
    }


def outcome_of(error: ApiError) -> EvictionOutcome | None:
    """The outcome an eviction's error stands for, or None when it is a fault to raise.

    A budget's 429 (DisruptionBudget cause) and its 403s (a negative disruptionsAllowed, too
    many unconfirmed evictions: details name the poddisruptionbudget) are refusals; 404 is a
    pod gone; 409 a failed precondition (another pod has the name now).
    """
    if isinstance(error, DisruptionBudgetRefusal):
        return EvictionOutcome(EvictionResult.REFUSED, error.message, error.causes, error.retry_after)
    if isinstance(error, Forbidden) and error.details.get("kind") == "poddisruptionbudget":
        return EvictionOutcome(EvictionResult.REFUSED, error.message)
    if isinstance(error, NotFound):
        return EvictionOutcome(EvictionResult.GONE, error.message)
    if isinstance(error, Conflict):
        return EvictionOutcome(EvictionResult.CONFLICT, error.message)
    return None


def accepted(dry_run: bool) -> EvictionOutcome:
    return EvictionOutcome(EvictionResult.WOULD_EVICT if dry_run else EvictionResult.EVICTED)


__all__ = ["accepted", "eviction_body", "outcome_of"]
