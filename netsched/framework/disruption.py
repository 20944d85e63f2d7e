"""PodDisruptionBudgets as kube keeps them: which budgets guard a pod, a budget's status, an eviction.

Three parts of kube decide whether a pod may be evicted, and this module says each once,
on raw JSON, for everything in netsched that evicts or answers an eviction (the fake API
server's pods/eviction and its disruption controller, netsched.fakeapi; the in-memory
cluster's MemoryAPI.evict, for simulations):

- which budgets a pod falls under: `Budget.guards` as the eviction handler matches them (same
  namespace, a selector that is neither missing, empty nor invalid) and `Budget.selects` as
  the disruption controller counts pods (an empty selector there selects every pod);
- a budget's status, as kube's disruption controller (pkg/controller/disruption) computes it:
  `budget_status` (expectedPods from the pods' controllers' scale for maxUnavailable and a
  percentage minAvailable, the pods for an integer minAvailable; percentages rounded up;
  currentHealthy counts Ready pods that are neither being deleted nor recently evicted;
  disruptionsAllowed = currentHealthy - desiredHealthy, never below 0 and 0 while no pod is
  expected; the DisruptionAllowed condition; a sync that fails sets disruptionsAllowed to 0
  with reason SyncFailed, as kube's failSafe does);
- the eviction handler's verdict (pkg/registry/core/pod/storage/eviction.go): `plan_eviction`
  (a terminal, pending or terminating pod is deleted without a budget; two budgets are a 500;
  an unready pod under AlwaysAllow, or under IfHealthyBudget while the budget is healthy, is
  deleted without charging it; else the budget is checked and decremented, the pod recorded in
  status.disruptedPods, or the eviction refused with kube's 429 and its DisruptionBudget cause).

`EvictionResult` / `EvictionOutcome` are what ClusterAPI.evict answers (the seam's types).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from netsched.clock import rfc3339
from netsched.framework.parse import PodParseError, parse_label_selector
from netsched.framework.selectors import LabelSelector
from netsched.kube.errors import DISRUPTION_BUDGET_CAUSE, MULTIPLE_BUDGETS_MESSAGE, failure_status

JsonObj = Mapping[str, Any]

# kube's DeletionTimeout: an evicted pod not seen terminating within it counts as healthy again.
DELETION_TIMEOUT = 120.0
# kube's MaxDisruptedPodSize: evictions the controller has not confirmed, at most, per budget.
MAX_DISRUPTED_PODS = 2000
ALWAYS_ALLOW = "AlwaysAllow"
IF_HEALTHY_BUDGET = "IfHealthyBudget"
DISRUPTION_ALLOWED = "DisruptionAllowed"  # the condition type
SUFFICIENT_PODS, INSUFFICIENT_PODS, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"
REFUSED_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
_TERMINAL = ("Succeeded", "Failed")


class EvictionResult(enum.Enum):
    """What became of an eviction (ClusterAPI.evict)."""

    EVICTED = "evicted"  # the API accepted it: the pod is being deleted
    WOULD_EVICT = "wouldEvict"  # a dry run the API (or a shadow scheduler) accepted: nothing deleted
    REFUSED = "refused"  # a PodDisruptionBudget does not allow it now: try again in a later round
    GONE = "gone"  # the pod no longer exists (404)
    CONFLICT = "conflict"  # the pod of that name is another one now (uid precondition, 409)


@dataclass(frozen=True, slots=True)
class EvictionOutcome:
    """An eviction's result with the API's words: `message` is its Status message ("Cannot evict
    pod as it would violate the pod's disruption budget."), `causes` the budget's own
    ("The disruption budget web needs 9 healthy pods and has 9 currently"), `retry_after` the
    seconds it suggested (0: none)."""

    result: EvictionResult
    message: str = ""
    causes: tuple[str, ...] = ()
    retry_after: float = 0.0


def _seconds(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def pod_ready(raw: JsonObj) -> bool:
    """The pod's Ready condition is True (kube's IsPodReady)."""
    for cond in (raw.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def controller_of(raw: JsonObj) -> JsonObj | None:
    """The ownerReference with controller: true (metav1.GetControllerOf), or None."""
    for ref in (raw.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


@dataclass(frozen=True, slots=True)
class BudgetPod:
    """What the budget rules read of a pod; `from_raw` reads it from the API's JSON (the
    in-memory cluster, with no kubelet, says a bound pod is Running and Ready itself)."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    phase: str = "Pending"
    ready: bool = False
    deleting: bool = False
    controller: JsonObj | None = None

    @classmethod
    def from_raw(cls, raw: JsonObj) -> BudgetPod:
        meta = raw.get("metadata") or {}
        labels = meta.get("labels")
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            labels=labels if isinstance(labels, Mapping) else {},
            phase=str((raw.get("status") or {}).get("phase") or "Pending"),
            ready=pod_ready(raw),
            deleting=bool(meta.get("deletionTimestamp")),
            controller=controller_of(raw),
        )


class BudgetError(ValueError):
    """A budget the controller cannot compute a status for (its message goes in SyncFailed)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """A policy/v1 PodDisruptionBudget as the rules read it; `raw` is the object itself."""

    raw: JsonObj
    namespace: str
    name: str
    selector: LabelSelector | None  # None: missing, or invalid (`selector_error` says why)
    selector_error: str
    min_available: object  # int, "N%" or None (anything else fails the controller's sync)
    max_unavailable: object
    unhealthy_policy: str
    generation: int

    @classmethod
    def from_raw(cls, raw: JsonObj) -> Budget:
        meta, spec = raw.get("metadata") or {}, raw.get("spec") or {}
        selector, error = None, ""
        try:
            selector = parse_label_selector(spec.get("selector"), "spec.selector")
        except PodParseError as e:
            error = str(e)
        generation = meta.get("generation")
        return cls(
            raw=raw,
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            selector=selector,
            selector_error=error,
            min_available=spec.get("minAvailable"),
            max_unavailable=spec.get("maxUnavailable"),
            unhealthy_policy=str(spec.get("unhealthyPodEvictionPolicy") or IF_HEALTHY_BUDGET),
            generation=generation if isinstance(generation, int) else 0,
        )

    @property
    def status(self) -> JsonObj:
        status = self.raw.get("status")
        return status if isinstance(status, Mapping) else {}

    def count(self, key: str) -> int:
        """An integer field of the status (0 when missing)."""
        value = self.status.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def guards(self, pod: BudgetPod) -> bool:
        """The eviction handler's match: same namespace; a missing, empty or invalid selector
        guards no pod."""
        return (
            pod.namespace == self.namespace
            and self.selector is not None
            and not self.selector.empty
            and self.selector.matches(pod.labels)
        )

    def selects(self, pod: BudgetPod) -> bool:
        """The disruption controller's match: same namespace; an empty selector selects every pod
        (policy/v1), a missing one none."""
        return (
            pod.namespace == self.namespace
            and self.selector is not None
            and self.selector.matches(pod.labels)
        )


def scaled_value(value: object, total: int, *, round_up: bool) -> int:
    """kube's intstr.GetScaledValueFromIntOrPercent: an int as is, "N%" of `total` rounded up
    (or down); BudgetError with kube's message otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise BudgetError("invalid value for IntOrString: invalid type: neither int nor percentage")
    if not value.endswith("%"):
        raise BudgetError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = int(value[:-1])
    except ValueError as e:
        raise BudgetError(f'invalid value for IntOrString: invalid value "{value}": {e}') from e
    share = percent * total
    return -(-share // 100) if round_up else share // 100


# (the pod's controller ownerReference, namespace) -> (the uid of the controller whose scale
# counts, its spec.replicas), or None when no such controller exists (kube's podControllerFinder).
ScaleFinder = Callable[[JsonObj, str], tuple[str, int] | None]
# (resource key, namespace, name) -> the object, or None.
ObjectGetter = Callable[[str, str, str], JsonObj | None]
REPLICASETS_KEY, DEPLOYMENTS_KEY = "apps/replicasets", "apps/deployments"


def _owned(get: ObjectGetter, key: str, ref: JsonObj, namespace: str, kind: str) -> JsonObj | None:
    """The object `ref` names when it is of `kind` (group apps or extensions) and its uid matches."""
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    if ref.get("kind") != kind or group not in ("apps", "extensions"):
        return None
    obj = get(key, namespace, str(ref.get("name") or ""))
    if obj is None or (obj.get("metadata") or {}).get("uid") != ref.get("uid"):
        return None
    return obj


def _replicas(obj: JsonObj) -> int:
    replicas = (obj.get("spec") or {}).get("replicas", 1)
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1


def replica_set_scale(get: ObjectGetter) -> ScaleFinder:
    """A ScaleFinder over ReplicaSets and the Deployments that own them, `get` reading either
    (the kinds netsched's fake cluster and simulations keep): as kube, a ReplicaSet a stored
    Deployment controls counts with the Deployment's spec.replicas (once for all its
    ReplicaSets), another with its own.  Unlike kube, a ReplicaSet whose Deployment is not
    stored counts with its own too (kube finds no controller: the sync fails)."""

    def find(ref: JsonObj, namespace: str) -> tuple[str, int] | None:
        rs = _owned(get, REPLICASETS_KEY, ref, namespace, "ReplicaSet")
        if rs is None:
            return None
        owner = controller_of(rs)
        deployment = _owned(get, DEPLOYMENTS_KEY, owner, namespace, "Deployment") if owner else None
        chosen = deployment if deployment is not None else rs
        return str(chosen["metadata"]["uid"]), _replicas(chosen)

    return find


def _expected_scale(pods: Sequence[BudgetPod], find_scale: ScaleFinder) -> int:
    """The sum of the scales of the pods' controllers, each counted once; pods without a
    controller are left out (kube's unmanaged pods); a controller not found fails the sync."""
    found: dict[str, tuple[str, int]] = {}  # by the pods' controller uid
    for pod in pods:
        ref = pod.controller
        if ref is None:
            continue
        uid = str(ref.get("uid") or "")
        if uid in found:
            continue
        scale = find_scale(ref, pod.namespace)
        if scale is None:
            raise BudgetError(f'found no controllers for pod "{pod.name}"')
        found[uid] = scale
    return sum(dict(found.values()).values())


def expected_counts(budget: Budget, pods: Sequence[BudgetPod], find_scale: ScaleFinder) -> tuple[int, int]:
    """(expectedPods, desiredHealthy) of `budget` over the pods it selects (kube's getExpectedPodCount)."""
    if budget.max_unavailable is not None:
        expected = _expected_scale(pods, find_scale)
        unavailable = scaled_value(budget.max_unavailable, expected, round_up=True)
        return expected, max(0, expected - unavailable)
    if budget.min_available is None:
        return 0, 0
    if isinstance(budget.min_available, int) and not isinstance(budget.min_available, bool):
        return len(pods), budget.min_available
    expected = _expected_scale(pods, find_scale)
    return expected, scaled_value(budget.min_available, expected, round_up=True)


def _set_condition(
    conditions: list[dict[str, Any]], status: str, reason: str, message: str, generation: int, now: float
) -> None:
    """meta.SetStatusCondition for the DisruptionAllowed condition: lastTransitionTime moves only
    when its status changes."""
    for cond in conditions:
        if cond.get("type") == DISRUPTION_ALLOWED:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = rfc3339(now)
            cond.update(status=status, reason=reason, message=message, observedGeneration=generation)
            return
    conditions.append(
        {
            "type": DISRUPTION_ALLOWED,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": rfc3339(now),
        }
    )


def _allowed_condition(status: dict[str, Any], now: float) -> None:
    """pdbhelper.UpdateDisruptionAllowedCondition."""
    conditions = status.setdefault("conditions", [])
    generation = int(status.get("observedGeneration") or 0)
    if int(status.get("disruptionsAllowed") or 0) > 0:
        _set_condition(conditions, "True", SUFFICIENT_PODS, "", generation, now)
    else:
        _set_condition(conditions, "False", INSUFFICIENT_PODS, "", generation, now)


def budget_status(
    budget: Budget, pods: Iterable[BudgetPod], find_scale: ScaleFinder, now: float
) -> dict[str, Any]:
    """The status kube's disruption controller writes for `budget`, given every pod of its
    namespace (it picks the ones the budget selects) and the wall time `now`."""
    old = copy.deepcopy(dict(budget.status))
    try:
        if budget.selector is None and budget.selector_error:
            raise BudgetError(budget.selector_error)
        selected = [p for p in pods if budget.selects(p)]
        expected, desired = expected_counts(budget, selected, find_scale)
    except BudgetError as e:
        # kube's failSafe: whatever else the status says, no disruption is allowed.
        old["disruptionsAllowed"] = 0
        conditions = old.setdefault("conditions", [])
        _set_condition(conditions, "False", SYNC_FAILED, str(e), int(old.get("observedGeneration") or 0), now)
        return old
    disrupted = _still_disrupted(selected, budget.status.get("disruptedPods"), now)
    healthy = sum(1 for p in selected if not p.deleting and p.name not in disrupted and p.ready)
    allowed = healthy - desired if expected > 0 else 0
    status: dict[str, Any] = {
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": max(0, allowed),
        "observedGeneration": budget.generation,
        "conditions": old.get("conditions") or [],
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    _allowed_condition(status, now)
    return status


def _still_disrupted(pods: Sequence[BudgetPod], recorded: object, now: float) -> dict[str, str]:
    """The disruptedPods entries kube keeps: pods that still exist, are not yet terminating and
    were evicted less than DELETION_TIMEOUT ago (kube's buildDisruptedPodMap)."""
    if not isinstance(recorded, Mapping):
        return {}
    kept: dict[str, str] = {}
    for pod in pods:
        stamp = recorded.get(pod.name)
        at = _seconds(stamp)
        if pod.deleting or at is None:
            continue
        if at + DELETION_TIMEOUT >= now:
            kept[pod.name] = str(stamp)
    return kept


@dataclass(frozen=True, slots=True)
class Refusal:
    """An eviction the API refuses, as the metav1.Status it answers with (`status()`)."""

    code: int
    reason: str
    message: str
    causes: tuple[str, ...] = ()  # DisruptionBudget cause messages
    retry_after: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)

    def status(self) -> dict[str, object]:
        details: dict[str, Any] = dict(self.details)
        if self.causes:
            details["causes"] = [{"type": DISRUPTION_BUDGET_CAUSE, "message": m} for m in self.causes]
        if self.retry_after:
            details["retryAfterSeconds"] = self.retry_after
        return failure_status(self.code, self.reason, self.message, details or None)


@dataclass(frozen=True, slots=True)
class EvictionPlan:
    """What the eviction handler does: refuse (`refusal`), or delete the pod, after writing
    `status` to `budget` when one is charged.  The pod's delete must not race with the pod
    changing (kube guards the delete of an unready or pending pod with its resourceVersion):
    the callers here decide and delete under one lock, or on one thread."""

    refusal: Refusal | None = None
    budget: Budget | None = None
    status: dict[str, Any] | None = None


def precondition_refusal(pod: BudgetPod, preconditions: Mapping[str, Any]) -> Refusal | None:
    """The 409 for deleteOptions.preconditions (uid, resourceVersion) `pod` does not meet, in
    the words of kube's eviction handler; None when it meets them."""
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != pod.uid:
        why = (
            f"the UID in the precondition ({uid}) does not match the UID in record ({pod.uid}). "
            "The object might have been deleted and then recreated"
        )
    elif rv and rv != pod.resource_version:
        why = (
            f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in "
            f"record ({pod.resource_version}). The object might have been modified"
        )
    else:
        return None
    message = f'Operation cannot be fulfilled on Pod "{pod.name}": {why}'
    return Refusal(409, "Conflict", message, details={"name": pod.name, "kind": "Pod"})


def _still_processing(budget: Budget) -> Refusal:
    return Refusal(
        429,
        "TooManyRequests",
        REFUSED_MESSAGE,
        (f"The disruption budget {budget.name} is still being processed by the server.",),
        retry_after=10,
    )


def _forbidden(budget: Budget, why: str) -> Refusal:
    return Refusal(
        403,
        "Forbidden",
        f'poddisruptionbudget.policy "{budget.name}" is forbidden: {why}',
        details={"name": budget.name, "group": "policy", "kind": "poddisruptionbudget"},
    )


def plan_eviction(pod: BudgetPod, budgets: Iterable[Budget], now: float) -> EvictionPlan:
    """kube's verdict on evicting `pod`, given the budgets of its namespace as stored."""
    if pod.phase in (*_TERMINAL, "Pending") or pod.deleting:
        return EvictionPlan()  # already disrupted (or never running): deleted without a budget
    guarding = [b for b in budgets if b.guards(pod)]
    if len(guarding) > 1:
        return EvictionPlan(refusal=Refusal(500, "", MULTIPLE_BUDGETS_MESSAGE))
    if not guarding:
        return EvictionPlan()
    budget = guarding[0]
    current, desired = budget.count("currentHealthy"), budget.count("desiredHealthy")
    if not pod.ready and (budget.unhealthy_policy == ALWAYS_ALLOW or (current >= desired and desired > 0)):
        return EvictionPlan()  # an unready pod is not charged: it is not serving now
    status = budget.status
    if int(status.get("observedGeneration") or 0) < budget.generation:
        return EvictionPlan(refusal=_still_processing(budget))
    allowed = budget.count("disruptionsAllowed")
    disrupted = status.get("disruptedPods")
    if allowed < 0:
        return EvictionPlan(refusal=_forbidden(budget, "pdb disruptions allowed is negative"))
    if isinstance(disrupted, Mapping) and len(disrupted) > MAX_DISRUPTED_PODS:
        why = "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        return EvictionPlan(refusal=_forbidden(budget, why))
    if allowed == 0:
        cause = (
            f"The disruption budget {budget.name} needs {desired} healthy pods and has {current} currently"
        )
        return EvictionPlan(refusal=Refusal(429, "TooManyRequests", REFUSED_MESSAGE, (cause,)))
    new = copy.deepcopy(dict(status))
    new["disruptionsAllowed"] = allowed - 1
    if allowed == 1:
        _allowed_condition(new, now)
    new["disruptedPods"] = {**(disrupted if isinstance(disrupted, Mapping) else {}), pod.name: rfc3339(now)}
    return EvictionPlan(budget=budget, status=new)


__all__ = [
    "ALWAYS_ALLOW",
    "DELETION_TIMEOUT",
    "IF_HEALTHY_BUDGET",
    "MAX_DISRUPTED_PODS",
    "Budget",
    "BudgetError",
    "BudgetPod",
    "EvictionOutcome",
    "EvictionPlan",
    "EvictionResult",
    "Refusal",
    "budget_status",
    "controller_of",
    "expected_counts",
    "plan_eviction",
    "pod_ready",
    "precondition_refusal",
    "REPLICASETS_KEY",
    "DEPLOYMENTS_KEY",
    "replica_set_scale",
    "scaled_value",
]
