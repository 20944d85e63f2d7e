"""SchedulingQueue: ordering, backoff, the unschedulable pool, gating, moves, delete."""

from __future__ import annotations

from typing import Any

import pytest
from test_queue_helpers import KeySort, LessSort, new_queue, pod

from netsched.framework import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, QueueSortPlugin
from netsched.framework.status import Status
from netsched.framework.types import PodInfo, QueuedPodInfo
from netsched.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE, SchedulingQueue, backoff_duration
from netsched.testing.clock import FakeClock


@pytest.fixture(params=[KeySort, LessSort], ids=["sort_key", "less"])
def sort(request: pytest.FixtureRequest) -> QueueSortPlugin:
    return request.param()  # type: ignore[no-any-return]


def pop_now(q: SchedulingQueue) -> QueuedPodInfo:
    qp = q.pop(timeout=0)
    assert qp is not None
    return qp


def fail(q: SchedulingQueue, clock: FakeClock, name: str, times: int, error: bool = True) -> QueuedPodInfo:
    """Pop `name` and requeue it as failed, `times` times (jumping over its backoff)."""
    qp: QueuedPodInfo | None = None
    for _ in range(times):
        q.activate([f"uid-{name}"])
        qp = pop_now(q)
        assert qp.pod.name == name
        assert q.add_unschedulable_if_not_present(qp, error=error)
        q.done(qp.pod.uid)
    assert qp is not None
    return qp


# ------------------------------------------------------------------ ordering


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param([("a", 0), ("b", 0), ("c", 0)], ["a", "b", "c"], id="fifo"),
        pytest.param([("low", 1), ("high", 100), ("mid", 50)], ["high", "mid", "low"], id="priority"),
        pytest.param(
            [("a1", 5), ("b0", 0), ("a2", 5), ("b1", 0)], ["a1", "a2", "b0", "b1"], id="priority-then-fifo"
        ),
        pytest.param([("neg", -10), ("zero", 0)], ["zero", "neg"], id="negative-priority"),
    ],
)
def test_pop_order_is_priority_then_timestamp(
    sort: QueueSortPlugin, pods: list[tuple[str, int]], expected: list[str]
) -> None:
    clock = FakeClock()
    q = new_queue(clock, sort)
    for name, prio in pods:
        assert q.add(pod(name, prio))
        clock.step(1)
    assert [pop_now(q).pod.name for _ in pods] == expected
    assert q.pop(timeout=0) is None


def test_same_timestamp_keeps_insertion_order(sort: QueueSortPlugin) -> None:
    q = new_queue(FakeClock(), sort)
    names = [f"p{i}" for i in range(20)]
    for n in names:
        q.add(pod(n))
    assert [pop_now(q).pod.name for _ in names] == names


def test_pop_counts_attempts_and_cycles_and_sets_initial_attempt_timestamp() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    clock.step(5)
    qp = pop_now(q)
    assert (qp.attempts, qp.initial_attempt_timestamp, q.scheduling_cycle) == (1, clock.now(), 1)
    first = clock.now()
    q.add_unschedulable_if_not_present(qp, error=True)
    q.done("uid-a")
    clock.step(1)
    q.flush()
    qp = pop_now(q)
    assert (qp.attempts, qp.initial_attempt_timestamp, q.scheduling_cycle) == (2, first, 2)


def test_sort_key_returning_none_is_an_error() -> None:
    class Broken(KeySort):
        def sort_key(self, qp: QueuedPodInfo) -> Any:
            return None

    q = new_queue(FakeClock(), Broken())
    with pytest.raises(TypeError, match="returned None"):
        q.add(pod("a"))


# ------------------------------------------------------------------ backoff


@pytest.mark.parametrize(
    ("attempts", "seconds"),
    [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (1000, 10.0)],
)
def test_backoff_duration(attempts: int, seconds: float) -> None:
    assert backoff_duration(attempts, 1.0, 10.0) == seconds


def test_backoff_durations_through_the_queue() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    seen = []
    for _ in range(6):
        qp = fail(q, clock, "a", 1)
        seen.append(q.backoff_expiry(qp) - qp.timestamp)
    assert seen == [1, 2, 4, 8, 10, 10]


def test_backoff_configurable() -> None:
    clock = FakeClock()
    q = new_queue(clock, initial_backoff=0.5, max_backoff=3.0)
    q.add(pod("a"))
    seen = [q.backoff_expiry(qp) - qp.timestamp for qp in (fail(q, clock, "a", 1) for _ in range(4))]
    assert seen == [0.5, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "kwargs",
    [{"initial_backoff": 0}, {"initial_backoff": 2, "max_backoff": 1}, {"max_unschedulable_seconds": 0}],
)
def test_invalid_settings_fail_fast(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        new_queue(FakeClock(), None, **kwargs)


def test_error_goes_to_backoff_and_flush_moves_it_when_expired() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    fail(q, clock, "a", 2)  # second failure: 2 s backoff
    assert q.where("uid-a") == BACKOFF
    for step, where in [(0.5, BACKOFF), (1.0, BACKOFF), (0.5, ACTIVE)]:
        clock.step(step)
        q.flush()
        assert q.where("uid-a") == where
    assert pop_now(q).pod.name == "a"


def test_backoff_queue_flushes_in_expiry_order() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("slow"))
    fail(q, clock, "slow", 3)  # 4 s
    q.add(pod("fast"))
    fail(q, clock, "fast", 1)  # 1 s
    clock.step(1)
    assert q.flush_backoff_completed() == 1
    assert q.pending_pods()[ACTIVE][0].name == "fast"
    clock.step(3)
    assert q.flush_backoff_completed() == 1
    assert q.counts()[BACKOFF] == 0


# ------------------------------------------------------------------ unschedulable pool


def test_rejected_pod_waits_in_unschedulable_pool() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    fail(q, clock, "a", 1, error=False)
    assert q.where("uid-a") == UNSCHEDULABLE
    clock.step(60)
    q.flush()
    assert q.where("uid-a") == UNSCHEDULABLE


@pytest.mark.parametrize(
    ("wait", "where"),
    [
        pytest.param(0.5, BACKOFF, id="still-backing-off"),
        pytest.param(1.0, ACTIVE, id="backoff-expired"),
    ],
)
def test_cluster_event_moves_unschedulable_pods(wait: float, where: str) -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    fail(q, clock, "a", 1, error=False)
    clock.step(wait)
    assert q.move_all_to_active_or_backoff("NodeAdd") == 1
    assert q.where("uid-a") == where


def test_cluster_event_pre_check_selects_pods() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    for n in ("a", "b"):
        q.add(pod(n))
        fail(q, clock, n, 1, error=False)
    clock.step(20)
    assert q.move_all_to_active_or_backoff("NodeAdd", pre_check=lambda p: p.name == "b") == 1
    assert (q.where("uid-a"), q.where("uid-b")) == (UNSCHEDULABLE, ACTIVE)


def test_unschedulable_pods_move_after_max_duration() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    fail(q, clock, "a", 1, error=False)
    clock.step(300)
    q.flush()
    assert q.where("uid-a") == UNSCHEDULABLE  # kube moves pods that stayed strictly longer
    clock.step(0.1)
    q.flush()
    assert q.where("uid-a") == ACTIVE


def test_move_request_during_cycle_sends_failed_pod_to_backoff() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    qp = pop_now(q)
    q.move_all_to_active_or_backoff("NodeUpdate")  # the cluster changed while "a" was being tried
    assert q.add_unschedulable_if_not_present(qp)
    q.done("uid-a")
    assert q.where("uid-a") == BACKOFF


def test_move_request_before_cycle_does_not_count() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    q.move_all_to_active_or_backoff("NodeUpdate")
    qp = pop_now(q)
    assert q.add_unschedulable_if_not_present(qp)
    assert q.where("uid-a") == UNSCHEDULABLE


def test_explicit_cycle_number_is_honoured_without_in_flight_record() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    qp = pop_now(q)
    cycle = q.scheduling_cycle
    q.done("uid-a")  # done before requeue: only the cycle number is left
    q.move_all_to_active_or_backoff("AssignedPodDelete")
    assert q.add_unschedulable_if_not_present(qp, cycle)
    assert q.where("uid-a") == BACKOFF


def test_update_of_pod_during_cycle_sends_it_to_backoff_with_the_new_version() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    old = pod("a")
    q.add(old)
    qp = pop_now(q)
    new = pod("a", labels={"x": "y"})
    q.update(old, new)
    assert "uid-a" not in q  # not queued twice while in flight
    assert q.add_unschedulable_if_not_present(qp)
    entry = q.get("uid-a")
    assert entry is not None and entry.pod.labels == {"x": "y"}
    assert q.where("uid-a") == BACKOFF


def test_add_unschedulable_if_not_present_refuses_duplicates() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    qp = pop_now(q)
    assert q.add_unschedulable_if_not_present(qp)
    assert not q.add_unschedulable_if_not_present(qp)
    assert len(q) == 1


def test_activate_moves_pods_to_active() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    for n in ("a", "b"):
        q.add(pod(n))
    fail(q, clock, "a", 1, error=False)
    fail(q, clock, "b", 3, error=True)
    assert q.counts() == {ACTIVE: 0, BACKOFF: 1, UNSCHEDULABLE: 1, GATED: 0}
    assert q.activate([pod("a"), "uid-b", "uid-unknown"]) == 2
    assert q.counts()[ACTIVE] == 2


# ------------------------------------------------------------------ updates


def test_update_in_unschedulable_pool() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    old = pod("a")
    q.add(old)
    fail(q, clock, "a", 2, error=False)
    clock.step(10)
    status_only = pod("a", nominated="n1")
    q.update(old, status_only)
    assert q.where("uid-a") == UNSCHEDULABLE
    relabelled = pod("a", labels={"team": "x"})
    q.update(status_only, relabelled)
    qp = pop_now(q)
    assert (qp.pod.labels, qp.attempts) == ({"team": "x"}, 3)


def test_update_of_still_backing_off_unschedulable_pod_goes_to_backoff() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    old = pod("a")
    q.add(old)
    fail(q, clock, "a", 1, error=False)
    q.update(old, pod("a", labels={"k": "v"}))
    assert q.where("uid-a") == BACKOFF


def test_update_in_active_queue_reorders() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a", 1))
    q.add(pod("b", 5))
    q.update(pod("a", 1), pod("a", 10))
    assert pop_now(q).pod.name == "a"


class RankSort(KeySort):
    """Sorts by a rank looked up outside the pod (as Coscheduling reads the PodGroup): a rank
    set later reaches queued pods only through sort_key_events."""

    name = "RankSort"

    def __init__(self) -> None:
        super().__init__()
        self.rank: dict[str, int] = {}

    def sort_key(self, qp: QueuedPodInfo) -> Any:
        return (self.rank.get(qp.pod.labels.get("team", ""), 99), qp.timestamp)

    def sort_key_events(self) -> list[ClusterEventWithHint]:
        def mine(p: PodInfo, _old: Any, new: Any) -> QueueingHint:
            return QueueingHint.QUEUE if p.labels.get("team") == new else QueueingHint.SKIP

        return [ClusterEventWithHint(ClusterEvent("Team", ActionType.ADD), mine)]


@pytest.mark.parametrize("hints", [True, False], ids=["hints", "no-hints"])
def test_sort_key_event_re_sorts_the_active_pods_it_concerns(hints: bool) -> None:
    sort = RankSort()
    q = new_queue(FakeClock(), sort, queueing_hints=hints)
    for name, team in [("b0", "b"), ("a0", "a"), ("b1", "b"), ("a1", "a")]:
        q.add(pod(name, labels={"team": team}))
    sort.rank.update(a=1, b=2)  # both known now, as PodGroups listed after their pods
    q.move_all_to_active_or_backoff(ClusterEvent("Team", ActionType.ADD), new="a")
    q.move_all_to_active_or_backoff(ClusterEvent("Other", ActionType.ADD), new="b")  # not registered
    q.move_all_to_active_or_backoff("NodeAdd")  # a wildcard moves pods, it sorts nothing
    assert [pop_now(q).pod.name for _ in range(4)] == ["a0", "a1", "b0", "b1"]


def test_update_of_unknown_pod_adds_it_and_bound_pod_leaves() -> None:
    q = new_queue(FakeClock())
    q.update(None, pod("a"))
    assert q.where("uid-a") == ACTIVE
    q.update(pod("a"), pod("a", node="n1"))
    assert "uid-a" not in q
    assert len(q) == 0


# ------------------------------------------------------------------ gating


def test_gated_pod_stays_out_until_gates_are_removed() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    gated = pod("g", gates=["example.com/quota"])
    assert q.add(gated)
    assert q.where("uid-g") == GATED
    entry = q.get("uid-g")
    assert entry is not None and entry.gated and entry.unschedulable_plugins == {"SchedulingGates"}
    assert q.pop(timeout=0) is None
    q.move_all_to_active_or_backoff("NodeAdd")
    clock.step(3600)
    q.flush()
    assert q.where("uid-g") == GATED
    still = pod("g", gates=["example.com/quota"], labels={"a": "b"})
    q.update(gated, still)
    assert q.where("uid-g") == GATED
    q.update(still, pod("g"))
    qp = pop_now(q)
    assert (qp.pod.name, qp.gated, qp.attempts) == ("g", False, 1)


def test_pre_enqueue_runs_again_when_pod_leaves_backoff() -> None:
    clock = FakeClock()
    blocked: set[str] = set()

    def pre_enqueue(p: PodInfo) -> Status:
        return Status.unresolvable("blocked", plugin="Block") if p.uid in blocked else Status.success()

    q = SchedulingQueue(KeySort(), pre_enqueue, clock)
    q.add(pod("a"))
    fail(q, clock, "a", 1, error=True)
    blocked.add("uid-a")
    clock.step(1)
    q.flush()
    assert q.where("uid-a") == GATED


def test_pre_enqueue_exception_keeps_pod_gated() -> None:
    def boom(p: PodInfo) -> Status:
        raise RuntimeError("plugin bug")

    q = SchedulingQueue(KeySort(), boom, FakeClock())
    assert q.add(pod("a"))
    assert q.where("uid-a") == GATED


# ------------------------------------------------------------------ delete and bound pods


def test_bound_pods_are_never_queued() -> None:
    q = new_queue(FakeClock())
    assert not q.add(pod("a", node="n1"))
    assert len(q) == 0


@pytest.mark.parametrize("where", [ACTIVE, BACKOFF, UNSCHEDULABLE, GATED])
def test_delete_from_each_queue(where: str) -> None:
    clock = FakeClock()
    q = new_queue(clock)
    p = pod("a", gates=["g"]) if where == GATED else pod("a")
    q.add(p)
    if where in (BACKOFF, UNSCHEDULABLE):
        fail(q, clock, "a", 1, error=where == BACKOFF)
    assert q.where("uid-a") == where
    assert q.delete(p)
    assert "uid-a" not in q and len(q) == 0
    assert q.counts() == {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
    assert not q.delete("uid-a")
    assert q.pop(timeout=0) is None


@pytest.mark.parametrize("how", ["delete", "bound"])
def test_pod_gone_during_cycle_is_not_requeued(how: str) -> None:
    q = new_queue(FakeClock())
    p = pod("a")
    q.add(p)
    qp = pop_now(q)
    if how == "delete":
        q.delete(p)
    else:
        q.update(p, pod("a", node="n1"))
    assert not q.add_unschedulable_if_not_present(qp, error=True)
    q.done("uid-a")
    assert len(q) == 0 and q.in_flight() == []


# ------------------------------------------------------------------ inspection and metrics


def test_counts_pending_pods_and_metrics_hook() -> None:
    clock = FakeClock()
    reported: dict[str, int] = {}
    calls: list[tuple[str, int]] = []

    def hook(queue: str, n: int) -> None:
        reported[queue] = n
        calls.append((queue, n))

    q = new_queue(clock, metrics=hook)
    assert reported == {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
    q.add(pod("a"))
    q.add(pod("b"))
    q.add(pod("c"))
    q.add(pod("g", gates=["x"]))
    fail(q, clock, "a", 1, error=False)
    fail(q, clock, "b", 1, error=True)
    expected = {ACTIVE: 1, BACKOFF: 1, UNSCHEDULABLE: 1, GATED: 1}
    assert q.counts() == expected == reported
    assert len(q) == 4
    assert {k: [p.name for p in v] for k, v in q.pending_pods().items()} == {
        ACTIVE: ["c"],
        BACKOFF: ["b"],
        UNSCHEDULABLE: ["a"],
        GATED: ["g"],
    }
    n = len(calls)
    q.update(pod("a"), pod("a", nominated="n1"))  # nothing moved: no metric calls
    assert len(calls) == n
    assert "uid-c" in q and pod("c") in q and "uid-zzz" not in q and 3 not in q


def test_metrics_hook_object_and_failing_hook() -> None:
    class Gauge:
        def __init__(self) -> None:
            self.values: dict[str, int] = {}

        def set_pending(self, queue: str, count: int) -> None:
            self.values[queue] = count

    g = Gauge()
    q = new_queue(FakeClock(), metrics=g)
    q.add(pod("a"))
    assert g.values[ACTIVE] == 1

    def broken(queue: str, n: int) -> None:
        raise RuntimeError("prometheus down")

    q2 = new_queue(FakeClock(), metrics=broken)
    assert q2.add(pod("a"))
    assert pop_now(q2).pod.name == "a"


def test_queue_uses_sort_key_when_the_plugin_has_one_and_less_otherwise() -> None:
    calls = {"less": 0}

    class Counting(LessSort):
        def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
            calls["less"] += 1
            return super().less(a, b)

    class CountingKey(Counting, KeySort):
        pass

    for plugin, uses_less in [(Counting(), True), (CountingKey(), False)]:
        calls["less"] = 0
        q = new_queue(FakeClock(), plugin)
        for i in range(5):
            q.add(pod(f"p{i}", priority=i))
        assert [pop_now(q).pod.priority for _ in range(5)] == [4, 3, 2, 1, 0]
        assert (calls["less"] > 0) is uses_less


def test_rejections_count_each_rejecting_plugin_until_the_pod_is_popped_again() -> None:
    """kube's scheduler_unschedulable_pods{plugin,profile}: from the failed attempt to the next pop."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    q.add(pod("b"))
    assert q.rejections() == {}  # never attempted: nobody rejected them
    qp = pop_now(q)
    qp.unschedulable_plugins = frozenset({"LoadThreshold", "NodeResourcesFit"})
    assert q.add_unschedulable_if_not_present(qp)
    q.done(qp.pod.uid)
    profile = qp.pod.scheduler_name
    both = {("LoadThreshold", profile): 1, ("NodeResourcesFit", profile): 1}
    assert q.where(qp.pod.uid) == UNSCHEDULABLE and q.rejections() == both
    assert q.activate([qp.pod.uid]) == 1
    assert q.where(qp.pod.uid) == ACTIVE and q.rejections() == both  # queued, not yet retried
    while q.where(qp.pod.uid) is not None:
        pop_now(q)
    assert q.rejections() == {}
