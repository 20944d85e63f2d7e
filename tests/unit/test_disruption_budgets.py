"""PodDisruptionBudget arithmetic (netsched.framework.disruption), table-driven after kube's own tests.

The status cases port pkg/controller/disruption/disruption_test.go (TestNoSelector,
TestUnavailable, TestIntegerMaxUnavailable(WithScaling), TestPercentageMaxUnavailableWithScaling,
TestNakedPod, TestUnsupportedControllerPod, TestReplicaSet, TestStatefulSetController's
rounding, TestUpdateDisruptedPods); the eviction cases port
pkg/registry/core/pod/storage/eviction_test.go (TestEviction, TestEvictionIgnorePDB,
TestEvictionPDBStatus) and checkAndDecrement's refusals.
"""

from __future__ import annotations

from typing import Any

import pytest

from netsched.clock import rfc3339
from netsched.framework.disruption import (
    DELETION_TIMEOUT,
    Budget,
    BudgetError,
    BudgetPod,
    EvictionPlan,
    budget_status,
    plan_eviction,
    precondition_refusal,
    replica_set_scale,
    scaled_value,
)
from netsched.kube.errors import (
    DisruptionBudgetRefusal,
    Forbidden,
    MultipleDisruptionBudgets,
    TooManyRequests,
    from_status,
    is_transient,
)
from netsched.testing.workloads import pod_disruption_budget

NOW = 1_700_000_000.0
FOO_BAR = {"foo": "bar"}
RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}


def budget(
    *,
    min_available: Any = None,
    max_unavailable: Any = None,
    selector: object = None,
    status: dict[str, Any] | None = None,
    policy: str | None = None,
    generation: int = 1,
    name: str = "foobar",
) -> Budget:
    """The kit's budget over foo=bar (or `selector` as the raw spec.selector), stored at
    `generation` with a status observed at generation 1."""
    raw = pod_disruption_budget(
        name,
        FOO_BAR,
        min_available=min_available,
        max_unavailable=max_unavailable,
        unhealthy_pod_eviction_policy=policy,
        status=status or {},
    )
    raw["metadata"]["generation"] = generation
    if selector is not None:
        raw["spec"]["selector"] = selector
    return Budget.from_raw(raw)


def pod(
    name: str,
    *,
    ready: bool = True,
    owner: dict[str, Any] | None = None,
    phase: str = "Running",
    deleting: bool = False,
    labels: dict[str, str] | None = None,
) -> BudgetPod:
    return BudgetPod(
        "default",
        name,
        uid=f"uid-{name}",
        labels=FOO_BAR if labels is None else labels,
        phase=phase,
        ready=ready,
        deleting=deleting,
        controller=owner,
    )


def scale_of(replicas: int | None) -> Any:
    """A ScaleFinder that knows one ReplicaSet, uid rs-uid, of `replicas` (None: none)."""
    return replica_set_scale(
        lambda key, ns, name: (
            None
            if replicas is None or key != "apps/replicasets"
            else {"metadata": {"name": name, "uid": "rs-uid"}, "spec": {"replicas": replicas}}
        )
    )


def counts(status: dict[str, Any]) -> tuple[int, int, int, int]:
    """(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods), kube's VerifyPdbStatus order."""
    return (
        status["disruptionsAllowed"],
        status["currentHealthy"],
        status["desiredHealthy"],
        status["expectedPods"],
    )


# --- intstr.GetScaledValueFromIntOrPercent ------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "up", "want"),
    [
        (3, 10, True, 3),
        ("34%", 3, True, 2),  # 1.02 rounds up
        ("34%", 3, False, 1),
        ("30%", 7, True, 3),
        ("28%", 11, True, 4),
        ("0%", 5, True, 0),
        ("100%", 5, True, 5),
        ("1%", 0, True, 0),
    ],
)
def test_scaled_value(value: object, total: int, up: bool, want: int) -> None:
    assert scaled_value(value, total, round_up=up) == want


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5", "invalid value for IntOrString: invalid type: string is not a percentage"),
        ("x%", 'invalid value for IntOrString: invalid value "x%"'),
        (1.5, "invalid value for IntOrString: invalid type: neither int nor percentage"),
        (True, "invalid value for IntOrString: invalid type: neither int nor percentage"),
    ],
)
def test_scaled_value_refuses_what_kube_refuses(value: object, message: str) -> None:
    with pytest.raises(BudgetError, match=message.replace("(", r"\(")):
        scaled_value(value, 10, round_up=True)


# --- the disruption controller's status ----------------------------------------------------


STATUS_CASES: list[tuple[str, Budget, list[BudgetPod], int | None, tuple[int, int, int, int]]] = [
    # TestNoSelector: an empty selector selects every pod of the namespace.
    ("no selector, no pods", budget(min_available=3, selector={}), [], None, (0, 0, 3, 0)),
    ("no selector, one pod", budget(min_available=3, selector={}), [pod("p", labels={})], None, (0, 1, 3, 1)),
    # TestUnavailable: counts go up with ready pods, down when one turns unready.
    ("min 3, three pods", budget(min_available=3), [pod(f"p{i}") for i in range(3)], None, (0, 3, 3, 3)),
    ("min 3, four pods", budget(min_available=3), [pod(f"p{i}") for i in range(4)], None, (1, 4, 3, 4)),
    (
        "min 3, one of four unready",
        budget(min_available=3),
        [pod("p0", ready=False), *(pod(f"p{i}") for i in range(1, 4))],
        None,
        (0, 3, 3, 4),
    ),
    # TestIntegerMaxUnavailable: a naked pod has no scale, so nothing is expected.
    ("max 1, naked pod", budget(max_unavailable=1), [pod("naked")], None, (0, 1, 0, 0)),
    # TestIntegerMaxUnavailableWithScaling.
    ("max 2 of 7", budget(max_unavailable=2), [pod("p", owner=RS)], 7, (0, 1, 5, 7)),
    ("max 2 of 5", budget(max_unavailable=2), [pod("p", owner=RS)], 5, (0, 1, 3, 5)),
    # TestPercentageMaxUnavailableWithScaling: 30 % of 7 rounds up to 3, of 3 to 1.
    ("max 30% of 7", budget(max_unavailable="30%"), [pod("p", owner=RS)], 7, (0, 1, 4, 7)),
    ("max 30% of 3", budget(max_unavailable="30%"), [pod("p", owner=RS)], 3, (0, 1, 2, 3)),
    # TestNakedPod: a percentage over an unmanaged pod expects nothing.
    ("min 28%, naked pod", budget(min_available="28%"), [pod("naked")], None, (0, 1, 0, 0)),
    # TestReplicaSet: 20 % of 10.
    ("min 20% of 10", budget(min_available="20%"), [pod("p", owner=RS)], 10, (0, 1, 2, 10)),
    # TestStatefulSetController's rounding (34 % of 3 rounds up to 2), over a ReplicaSet.
    (
        "min 34% of 3, two ready",
        budget(min_available="34%"),
        [pod("a", owner=RS), pod("b", owner=RS)],
        3,
        (0, 2, 2, 3),
    ),
    (
        "min 34% of 3, three ready",
        budget(min_available="34%"),
        [pod(n, owner=RS) for n in "abc"],
        3,
        (1, 3, 2, 3),
    ),
    # Deployment-like: maxUnavailable 1 over 10 replicas, all ready.
    (
        "max 1 of 10",
        budget(max_unavailable=1),
        [pod(f"p{i}", owner=RS) for i in range(10)],
        10,
        (1, 10, 9, 10),
    ),
    # Not selected: other labels, another namespace.
    ("other labels", budget(min_available=1), [pod("p", labels={"app": "x"})], None, (0, 0, 1, 0)),
    (
        "another namespace",
        budget(min_available=1),
        [BudgetPod("other", "p", labels=FOO_BAR, phase="Running", ready=True)],
        None,
        (0, 0, 1, 0),
    ),
    # A pod being deleted is not healthy.
    ("min 1, one deleting", budget(min_available=1), [pod("a"), pod("b", deleting=True)], None, (0, 1, 1, 2)),
    # maxUnavailable larger than the scale: desiredHealthy stops at 0.
    ("max 5 of 3", budget(max_unavailable=5), [pod(n, owner=RS) for n in "abc"], 3, (3, 3, 0, 3)),
]


@pytest.mark.parametrize(
    ("name", "pdb", "pods", "replicas", "want"), STATUS_CASES, ids=[c[0] for c in STATUS_CASES]
)
def test_budget_status(
    name: str, pdb: Budget, pods: list[BudgetPod], replicas: int | None, want: tuple[int, int, int, int]
) -> None:
    status = budget_status(pdb, pods, scale_of(replicas), NOW)
    assert counts(status) == want
    assert status["observedGeneration"] == 1
    (cond,) = status["conditions"]
    allowed = want[0] > 0
    assert cond["type"] == "DisruptionAllowed"
    assert cond["status"] == ("True" if allowed else "False")
    assert cond["reason"] == ("SufficientPods" if allowed else "InsufficientPods")


def test_update_disrupted_pods() -> None:
    """kube's TestUpdateDisruptedPods: an entry goes when its pod is deleting, gone or the
    DeletionTimeout passed; a kept entry's pod is not healthy."""
    disrupted = {
        "p1": rfc3339(NOW),  # its deletion started
        "p2": rfc3339(NOW - 3 * 60),  # expired
        "p3": rfc3339(NOW - 60),  # untouched: still expected to go
        "notthere": rfc3339(NOW),  # deleted
    }
    pdb = budget(min_available=1, status={"disruptedPods": disrupted})
    status = budget_status(pdb, [pod("p1", deleting=True), pod("p2"), pod("p3")], scale_of(None), NOW)
    assert counts(status) == (0, 1, 1, 3)
    assert status["disruptedPods"] == {"p3": rfc3339(NOW - 60)}


def test_a_disrupted_entry_expires_exactly_after_the_deletion_timeout() -> None:
    pdb = budget(min_available=1, status={"disruptedPods": {"p": rfc3339(NOW)}})
    at_timeout = budget_status(pdb, [pod("p")], scale_of(None), NOW + DELETION_TIMEOUT)
    after = budget_status(pdb, [pod("p")], scale_of(None), NOW + DELETION_TIMEOUT + 1)
    assert counts(at_timeout)[1] == 0 and "p" in at_timeout["disruptedPods"]
    assert counts(after)[1] == 1 and "disruptedPods" not in after


@pytest.mark.parametrize(
    ("pdb", "pods", "message"),
    [
        # TestUnsupportedControllerPod: a controller no finder knows fails the sync.
        (
            budget(min_available="28%"),
            [
                pod(
                    "p",
                    owner={
                        "apiVersion": "apps.test.io/v1",
                        "kind": "TestWorkload",
                        "uid": "x",
                        "controller": True,
                    },
                )
            ],
            'found no controllers for pod "p"',
        ),
        # A ReplicaSet that no longer exists (or another object of its name: another uid).
        (budget(max_unavailable=1), [pod("p", owner=RS)], 'found no controllers for pod "p"'),
        (budget(min_available="5"), [pod("p")], "string is not a percentage"),
        (
            budget(min_available=1, selector={"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
            [pod("p")],
            "spec.selector.matchExpressions[0].operator",
        ),
    ],
)
def test_a_failed_sync_allows_no_disruption(pdb: Budget, pods: list[BudgetPod], message: str) -> None:
    """kube's failSafe: disruptionsAllowed 0 and DisruptionAllowed=False, reason SyncFailed."""
    before = {**pdb.raw, "status": {"observedGeneration": 1, "disruptionsAllowed": 4, "currentHealthy": 7}}
    status = budget_status(Budget.from_raw(before), pods, scale_of(None), NOW)
    assert status["disruptionsAllowed"] == 0
    assert status["currentHealthy"] == 7  # the rest of the status is left as it was
    (cond,) = status["conditions"]
    assert (cond["status"], cond["reason"]) == ("False", "SyncFailed")
    assert message in cond["message"]


def test_the_condition_moves_its_transition_time_only_when_its_status_changes() -> None:
    pdb = budget(min_available=1)
    first = budget_status(pdb, [pod("a"), pod("b")], scale_of(None), NOW)
    again = budget_status(
        Budget.from_raw({**pdb.raw, "status": first}), [pod("a"), pod("c")], scale_of(None), NOW + 50
    )
    flipped = budget_status(
        Budget.from_raw({**pdb.raw, "status": again}), [pod("a")], scale_of(None), NOW + 99
    )
    assert first["conditions"][0]["lastTransitionTime"] == rfc3339(NOW)
    assert again == first
    assert flipped["conditions"][0]["lastTransitionTime"] == rfc3339(NOW + 99)


def test_selector_semantics_differ_between_the_controller_and_the_eviction_handler() -> None:
    """kube: the controller's empty selector selects everything (policy/v1); the eviction
    handler lets no empty or missing selector guard a pod."""
    empty = budget(min_available=1, selector={})
    missing = Budget.from_raw(
        {"metadata": {"name": "m", "namespace": "default"}, "spec": {"minAvailable": 1}}
    )
    p = pod("p")
    assert empty.selects(p) and not empty.guards(p)
    assert not missing.selects(p) and not missing.guards(p)
    assert budget(min_available=1).guards(p)


# --- the eviction handler --------------------------------------------------------------------


def allowing(n: int, *, current: int = 3, desired: int = 2, **kw: Any) -> Budget:
    return budget(
        min_available=desired,
        status={
            "disruptionsAllowed": n,
            "currentHealthy": current,
            "desiredHealthy": desired,
            "expectedPods": 3,
        },
        **kw,
    )


EVICTION_CASES: list[tuple[str, BudgetPod, list[Budget], int | None, str]] = [
    # (name, pod, budgets, code refused with (None: evicted), charged budget or "")
    ("matching budget allows one", pod("p"), [allowing(1)], None, "foobar"),
    ("matching budget allows none", pod("p"), [allowing(0, current=2)], 429, ""),
    ("non-matching budget", pod("p", labels={"app": "x"}), [allowing(0)], None, ""),
    ("two matching budgets", pod("p"), [allowing(1), allowing(1, name="other")], 500, ""),
    # TestEvictionIgnorePDB: pending, terminal and terminating pods go without a budget.
    ("pending pod", pod("p", phase="Pending", ready=False), [allowing(0)], None, ""),
    ("succeeded pod", pod("p", phase="Succeeded", ready=False), [allowing(0)], None, ""),
    ("failed pod", pod("p", phase="Failed", ready=False), [allowing(0)], None, ""),
    ("terminating pod", pod("p", deleting=True), [allowing(0)], None, ""),
    # An unready running pod: free while the budget is healthy (IfHealthyBudget, the default)...
    ("unready, budget healthy", pod("p", ready=False), [allowing(0, current=2, desired=2)], None, ""),
    ("unready, budget unhealthy", pod("p", ready=False), [allowing(0, current=1, desired=2)], 429, ""),
    (
        "unready, IfHealthyBudget, unhealthy",
        pod("p", ready=False),
        [allowing(0, current=1, desired=2, policy="IfHealthyBudget")],
        429,
        "",
    ),
    # ... and always under AlwaysAllow.
    (
        "unready, AlwaysAllow, unhealthy",
        pod("p", ready=False),
        [allowing(0, current=1, desired=2, policy="AlwaysAllow")],
        None,
        "",
    ),
    # An unready pod of an unhealthy budget that still allows one is charged.
    (
        "unready, unhealthy, one allowed",
        pod("p", ready=False),
        [allowing(1, current=1, desired=2)],
        None,
        "foobar",
    ),
    # checkAndDecrement's other refusals.
    ("status older than the spec", pod("p"), [allowing(1, generation=2)], 429, ""),
    ("negative allowance", pod("p"), [allowing(-1)], 403, ""),
    (
        "too many unconfirmed evictions",
        pod("p"),
        [
            budget(
                min_available=1,
                status={
                    "disruptionsAllowed": 1,
                    "disruptedPods": {f"x{i}": rfc3339(NOW) for i in range(2001)},
                },
            )
        ],
        403,
        "",
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "budgets", "code", "charged"), EVICTION_CASES, ids=[c[0] for c in EVICTION_CASES]
)
def test_plan_eviction(
    name: str, target: BudgetPod, budgets: list[Budget], code: int | None, charged: str
) -> None:
    plan = plan_eviction(target, budgets, NOW)
    if code is None:
        assert plan.refusal is None
        assert (plan.budget.name if plan.budget else "") == charged
    else:
        assert plan.refusal is not None and plan.refusal.code == code
        assert plan.budget is None and plan.status is None


def test_a_charge_decrements_records_the_pod_and_flips_the_condition_at_zero() -> None:
    """kube's TestEvictionPDBStatus."""
    plan = plan_eviction(pod("p"), [allowing(1)], NOW)
    assert plan.status is not None
    assert plan.status["disruptionsAllowed"] == 0
    assert plan.status["disruptedPods"] == {"p": rfc3339(NOW)}
    (cond,) = plan.status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "DisruptionAllowed",
        "False",
        "InsufficientPods",
    )
    two = plan_eviction(pod("p"), [allowing(2)], NOW)
    assert two.status is not None and two.status["disruptionsAllowed"] == 1
    assert "conditions" not in two.status  # only the last allowed disruption updates it


def status_of(plan: EvictionPlan) -> dict[str, Any]:
    assert plan.refusal is not None
    return plan.refusal.status()


def test_a_refusal_speaks_kubes_words_and_is_not_retried_by_the_client() -> None:
    refused = status_of(plan_eviction(pod("p"), [allowing(0, current=2, desired=2)], NOW))
    assert refused["reason"] == "TooManyRequests"
    assert refused["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert refused["details"]["causes"] == [
        {
            "type": "DisruptionBudget",
            "message": "The disruption budget foobar needs 2 healthy pods and has 2 currently",
        }
    ]
    assert "retryAfterSeconds" not in refused["details"]
    error = from_status(refused)
    assert isinstance(error, DisruptionBudgetRefusal) and isinstance(error, TooManyRequests)
    assert not is_transient(error)
    assert error.causes == ("The disruption budget foobar needs 2 healthy pods and has 2 currently",)


def test_a_budget_the_controller_has_not_seen_asks_to_come_back_in_ten_seconds() -> None:
    refused = status_of(plan_eviction(pod("p"), [allowing(1, generation=2)], NOW))
    assert refused["details"]["retryAfterSeconds"] == 10
    assert refused["details"]["causes"][0]["message"] == (
        "The disruption budget foobar is still being processed by the server."
    )
    assert from_status(refused).retry_after == 10


def test_two_budgets_are_a_500_no_retry_cures() -> None:
    refused = status_of(plan_eviction(pod("p"), [allowing(1), allowing(1, name="b")], NOW))
    assert refused["code"] == 500
    assert refused["message"] == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )
    error = from_status(refused)
    assert isinstance(error, MultipleDisruptionBudgets) and not is_transient(error)
    # Any other 500 still is transient.
    assert is_transient(from_status({"code": 500, "message": "etcdserver: leader changed"}))


def test_a_negative_allowance_is_forbidden_by_the_budget() -> None:
    refused = status_of(plan_eviction(pod("p"), [allowing(-1)], NOW))
    assert (
        refused["message"]
        == 'poddisruptionbudget.policy "foobar" is forbidden: pdb disruptions allowed is negative'
    )
    error = from_status(refused)
    assert isinstance(error, Forbidden) and error.details["kind"] == "poddisruptionbudget"


@pytest.mark.parametrize(
    ("preconditions", "refused"),
    [
        ({}, None),
        ({"uid": "uid-p"}, None),
        ({"uid": "other"}, "the UID in the precondition (other) does not match the UID in record (uid-p)"),
        ({"resourceVersion": "9"}, "the ResourceVersion in the precondition (9) does not match"),
    ],
)
def test_preconditions(preconditions: dict[str, str], refused: str | None) -> None:
    target = BudgetPod("default", "p", uid="uid-p", resource_version="5")
    refusal = precondition_refusal(target, preconditions)
    if refused is None:
        assert refusal is None
    else:
        assert refusal is not None and refusal.code == 409
        assert refusal.message.startswith('Operation cannot be fulfilled on Pod "p": ')
        assert refused in refusal.message


def test_a_deployments_replica_sets_count_with_the_deployments_scale() -> None:
    """kube's getPodDeployment: in a rollout, the pods of the old and the new ReplicaSet count
    the Deployment's replicas once; a ReplicaSet whose Deployment is not stored counts its own."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": "d-uid",
        "controller": True,
    }
    objects = {
        ("apps/deployments", "web"): {"metadata": {"name": "web", "uid": "d-uid"}, "spec": {"replicas": 4}},
        ("apps/replicasets", "old"): {
            "metadata": {"uid": "old", "ownerReferences": [deployment]},
            "spec": {"replicas": 3},
        },
        ("apps/replicasets", "new"): {
            "metadata": {"uid": "new", "ownerReferences": [deployment]},
            "spec": {"replicas": 2},
        },
        ("apps/replicasets", "solo"): {"metadata": {"uid": "solo"}, "spec": {"replicas": 5}},
    }
    find = replica_set_scale(lambda key, ns, name: objects.get((key, name)))

    def owned_by(rs: str) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs, "controller": True}

    rollout = [
        pod("a", owner=owned_by("old")),
        pod("b", owner=owned_by("new")),
        pod("c", owner=owned_by("new")),
    ]
    assert counts(budget_status(budget(max_unavailable=1), rollout, find, NOW)) == (0, 3, 3, 4)
    del objects[("apps/deployments", "web")]
    assert counts(budget_status(budget(max_unavailable=1), rollout, find, NOW)) == (0, 3, 4, 5)
    alone = [pod(n, owner=owned_by("solo")) for n in "abcde"]
    assert counts(budget_status(budget(max_unavailable="20%"), alone, find, NOW)) == (1, 5, 4, 5)
