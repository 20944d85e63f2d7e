"""The fake API server's pods/eviction subresource and its PodDisruptionBudget controller.

An eviction is a delete that asks the pod's PodDisruptionBudget first: `evict()` answers
POST .../pods/NAME/eviction as kube's eviction handler does (its verdict is
netsched.framework.disruption's, written once for the fake and the in-memory cluster), under
the store's lock, so the budget is charged and the pod deleted as one step.

`DisruptionController` keeps every budget's status as kube's disruption controller does,
but synchronously: a store reactor recomputes the budgets a write concerns (a pod created,
deleted, relabelled or become Ready; a budget or ReplicaSet written) before the write
returns, so a test never waits for it. It is on with FakeAPIServer(disruption_controller=True);
without it, budgets keep the status a test writes, and evictions read and charge that.

Where this differs from kube, on purpose:
- No lag: kube's controller catches up within a second or so, this one before the write
  returns (and before an eviction is decided, for the DeletionTimeout to pass with the clock).
  It recomputes every budget a pod write concerns, before and after a relabelling (kube only
  the first budget of the pod's new labels), and every budget of the namespace when a
  ReplicaSet changes (kube does not watch them and sees a new scale at the next pod event).
- expectedPods reads ReplicaSets and Deployments only: a ReplicaSet a stored Deployment
  controls counts with the Deployment's spec.replicas, as kube; one whose Deployment is not
  stored counts with its own (kube fails the sync); a StatefulSet's pod or any other kind's
  fails the sync (SyncFailed, no disruption allowed), as a kind kube cannot find does.  No Events (NoPods, UnmanagedPods, NotDeleted) are written.
- deleteOptions.preconditions are checked before the budget is charged (kube charges it, then
  fails the delete and leaves the charge until its DeletionTimeout).
- The pod is deleted at once, as every delete in the fake (no graceful termination).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from netsched.clock import rfc3339
from netsched.fakeapi.resources import PDBS, PODS, REPLICASETS, resolve_resource
from netsched.fakeapi.store import DELETED, JsonObj, StatusError, Store, WatchEvent
from netsched.framework.disruption import (
    DEPLOYMENTS_KEY,
    Budget,
    BudgetPod,
    budget_status,
    plan_eviction,
    precondition_refusal,
    replica_set_scale,
)

EVICTION_KINDS = ("policy/v1", "policy/v1beta1")
# The condition kube's eviction handler sets on the pod before deleting it.
DISRUPTION_TARGET = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "EvictionByEvictionAPI",
    "message": "Eviction API: evicting",
}


class DisruptionController:
    """Budgets' status, recomputed on every write that can change it (see the module docstring)."""

    def __init__(self, store: Store, wall: Callable[[], float]) -> None:
        self.store = store
        self.wall = wall
        self._scale = replica_set_scale(self._object)
        store.on_commit(self._react)

    def _object(self, key: str, namespace: str, name: str) -> JsonObj | None:
        try:
            return self.store.get(resolve_resource(key), namespace, name)
        except StatusError:
            return None

    def _react(self, event: WatchEvent) -> None:
        namespace = str((event.obj.get("metadata") or {}).get("namespace") or "")
        if event.key == PODS.key:
            pods = [BudgetPod.from_raw(event.obj)] + ([BudgetPod.from_raw(event.old)] if event.old else [])
            budgets = [b for b in self._budgets(namespace) if any(b.selects(p) for p in pods)]
        elif event.key == PDBS.key and event.type != DELETED:
            budgets = [Budget.from_raw(event.obj)]
        elif event.key in (REPLICASETS.key, DEPLOYMENTS_KEY):
            budgets = self._budgets(namespace)
        else:
            return
        for budget in budgets:
            self.sync(budget)

    def _budgets(self, namespace: str) -> list[Budget]:
        return [Budget.from_raw(o) for o in self.store.list(PDBS, namespace)[0]]

    def sync(self, budget: Budget) -> None:
        """Write `budget`'s status as the controller computes it now (nothing when unchanged)."""
        pods = [BudgetPod.from_raw(p) for p in self.store.list(PODS, budget.namespace)[0]]
        status = budget_status(budget, pods, self._scale, self.wall())
        if status == budget.status:
            return
        self.store.mutate(PDBS, budget.namespace, budget.name, lambda cur: {**cur, "status": status})

    def sync_namespace(self, namespace: str) -> None:
        """Recompute every budget of `namespace` (time alone can change one: an evicted pod not
        deleted within kube's DeletionTimeout counts as healthy again)."""
        for budget in self._budgets(namespace):
            self.sync(budget)


def evict(
    store: Store,
    namespace: str,
    name: str,
    body: JsonObj,
    *,
    dry_run: str,
    now: float,
    controller: DisruptionController | None,
) -> None:
    """Evict pod `namespace/name` as POST pods/NAME/eviction with `body` (a policy/v1 Eviction)
    does; `dry_run` is the request's dryRun parameter.  Raises StatusError with kube's code,
    reason and message when the eviction is refused."""
    options = _delete_options(body, namespace, name)
    dry = _dry_run(dry_run, options.get("dryRun"))
    preconditions = options.get("preconditions") or {}
    with store.atomic():
        pod = BudgetPod.from_raw(store.get(PODS, namespace, name))
        # Checked before a budget is charged (kube checks them at the delete, after charging it,
        # and leaves the charge in place when they fail).
        refusal = precondition_refusal(pod, preconditions)
        if refusal is None:
            if controller is not None:
                controller.sync_namespace(namespace)  # the controller has caught up with the clock
            budgets = [Budget.from_raw(o) for o in store.list(PDBS, namespace)[0]]
            plan = plan_eviction(pod, budgets, now)
            refusal = plan.refusal
        if refusal is not None:
            details = refusal.status().get("details")
            raise StatusError(
                refusal.code, refusal.reason, refusal.message, details if isinstance(details, dict) else None
            )
        if dry:
            return
        if plan.budget is not None and plan.status is not None:
            status = plan.status
            store.mutate(PDBS, namespace, plan.budget.name, lambda cur: {**cur, "status": status})
        store.mutate(PODS, namespace, name, lambda cur: _disruption_target(cur, now))
        store.delete(PODS, namespace, name)


def _delete_options(body: JsonObj, namespace: str, name: str) -> Mapping[str, Any]:
    if body.get("kind") not in (None, "Eviction") or body.get("apiVersion") not in (None, *EVICTION_KINDS):
        raise StatusError(
            400, "BadRequest", f"not a Eviction object: {body.get('apiVersion')}/{body.get('kind')}"
        )
    meta = body.get("metadata") or {}
    if meta.get("name") != name:
        raise StatusError(400, "BadRequest", "name in URL does not match name in Eviction object")
    if meta.get("namespace") not in (None, "", namespace):
        raise StatusError(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
        )
    options = body.get("deleteOptions") or {}
    if not isinstance(options, Mapping):
        raise StatusError(400, "BadRequest", "deleteOptions must be an object")
    return options


def _dry_run(query: str, in_body: object) -> bool:
    """kube's propagateDryRun: the query's dryRun and deleteOptions.dryRun must agree when both
    are given; "All" is the one value."""
    from_query = [query] if query else []
    from_body = list(in_body) if isinstance(in_body, list) else []
    if from_query and from_body and from_query != from_body:
        raise StatusError(
            400,
            "BadRequest",
            f"Non-matching dry-run options in request and content: {from_query} and {from_body}",
        )
    values = from_query or from_body
    if any(v != "All" for v in values):
        raise StatusError(400, "BadRequest", f"Invalid dry run value: {values} (supported: [All])")
    return bool(values)


def _disruption_target(pod: JsonObj, now: float) -> dict[str, Any]:
    status = dict(pod.get("status") or {})
    others = [c for c in status.get("conditions") or [] if c.get("type") != DISRUPTION_TARGET["type"]]
    status["conditions"] = [*others, {**DISRUPTION_TARGET, "lastTransitionTime": rfc3339(now)}]
    return {**pod, "status": status}
