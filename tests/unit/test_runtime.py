"""Framework runtime rules: profile build checks, point ordering, scores, reserve/permit/bind."""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
import pytest

from netsched.framework import (
    BindPlugin,
    Diagnosis,
    FilterPlugin,
    FrameworkBuildError,
    PermitPlugin,
    PluginArgs,
    PluginFault,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    Rejection,
    ReservePlugin,
    ScorePlugin,
)
from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import Fields
from netsched.framework.handle import Services
from netsched.framework.search import FitError, NodeSearch, num_feasible_nodes_to_find
from netsched.framework.snapshot import IntArray, Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.framework.whatif import pre_filter_rows
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.framework import FifoSort, NoopBinder, Ref, TestProfile, build_framework, schedule_pod
from netsched.testing.handle import MemoryAPI, RecordingEvents

CALLS: list[str] = []


class RejectOdd(FilterPlugin):
    """Rejects nodes whose name ends in an odd digit."""

    name = "RejectOdd"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if int(node.name[-1]) % 2:
            return Status.unschedulable("node(s) were odd")
        return Status.success()


class RejectAll(FilterPlugin):
    name = "RejectAll"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.unresolvable("node(s) were rejected by all")


class NameScore(ScorePlugin):
    """Raw score = the node's trailing digit x 10."""

    name = "NameScore"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(node.name[-1]) * 10


class ReverseScore(ScorePlugin):
    name = "ReverseScore"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 100 - int(node.name[-1]) * 10


class BadScore(ScorePlugin):
    name = "BadScore"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 150


class NormalizingScore(ScorePlugin):
    """Raw 1000s, normalised by dividing by 100."""

    name = "NormalizingScore"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(node.name[-1]) * 1000

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: Any) -> None:
        scores //= 100


def nodes(n: int) -> list[Any]:
    return [make_node(f"n{i}") for i in range(n)]


def test_profile_build_fails_without_weight_queue_sort_or_binder() -> None:
    services = Services(api=MemoryAPI(), events=RecordingEvents(), clock=FakeClock())
    reg = {c.name: c for c in (FifoSort, NoopBinder, NameScore)}
    no_weight = TestProfile(
        plugins={
            "queueSort": [Ref("TestFifoSort")],
            "bind": [Ref("TestBinder")],
            "score": [Ref("NameScore", 0)],
        }
    )
    with pytest.raises(FrameworkBuildError, match="score plugin 'NameScore' is not configured with weight"):
        build = __import__("netsched.framework.runtime", fromlist=["Framework"]).Framework
        build(no_weight, reg, services)
    from netsched.framework.runtime import Framework

    with pytest.raises(FrameworkBuildError, match="only one queue sort plugin"):
        Framework(TestProfile(plugins={"bind": [Ref("TestBinder")]}), reg, services)
    with pytest.raises(FrameworkBuildError, match="at least one bind plugin"):
        Framework(TestProfile(plugins={"queueSort": [Ref("TestFifoSort")]}), reg, services)
    with pytest.raises(FrameworkBuildError, match="does not extend filter"):
        Framework(
            TestProfile(
                plugins={
                    "queueSort": [Ref("TestFifoSort")],
                    "bind": [Ref("TestBinder")],
                    "filter": [Ref("NameScore")],
                }
            ),
            reg,
            services,
        )


def test_weights_multiply_and_sum() -> None:
    out = schedule_pod(
        make_pod("p"),
        nodes(4),
        plugins=[NameScore, ReverseScore],
        weights={"NameScore": 3, "ReverseScore": 1},
    )
    # n3: 30*3 + 70*1 = 160 is the best; n0: 0 + 100 = 100.
    assert out.totals == {"n0": 100, "n1": 120, "n2": 140, "n3": 160}
    assert out.node == "n3"
    assert out.scores["NameScore"]["n2"] == (20, 60)


def test_normalize_then_range_check() -> None:
    out = schedule_pod(make_pod("p"), nodes(3), plugins=[NormalizingScore])
    assert out.totals == {"n0": 0, "n1": 10, "n2": 20}
    with pytest.raises(PluginFault, match="invalid score 150"):
        schedule_pod(make_pod("p"), nodes(3), plugins=[BadScore])


def raw_scorer(plugin: str, raw: list[int]) -> type[ScorePlugin]:
    class Raw(ScorePlugin):
        name = plugin

        def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
            return np.array(raw, dtype=np.int64)[: len(idx)]

    return Raw


@pytest.mark.parametrize(
    ("raw", "bad"),
    [
        ([0, 100, 50], None),
        ([0, 101, 50], 101),
        ([-1, 100, 50], -1),
        ([0, 100, -(2**63)], -(2**63)),
        ([2**63 - 1, 0, 0], 2**63 - 1),
    ],
)
def test_scores_outside_zero_to_max_are_a_plugin_fault(raw: list[int], bad: int | None) -> None:
    Raw = raw_scorer("Raw", raw)
    if bad is None:
        out = schedule_pod(make_pod("p"), nodes(3), plugins=[Raw])
        assert out.totals == {"n0": 0, "n1": 100, "n2": 50}
        return
    with pytest.raises(PluginFault, match=rf"invalid score {bad} for node"):
        schedule_pod(make_pod("p"), nodes(3), plugins=[Raw])


@pytest.mark.parametrize(
    ("first", "second", "fault"),
    [
        ([0, 100, 50], [1, 2, 3], None),
        ([0, 100, 50], [1, 200, -3], "plugin 'B' returns an invalid score 200 for node 'n1'"),
        ([0, 101, 50], [-7, 2, 3], "plugin 'A' returns an invalid score 101 for node 'n1'"),
        ([0, 100, -5], [1, 2, 300], "plugin 'A' returns an invalid score -5 for node 'n2'"),
    ],
)
def test_the_range_check_names_the_first_plugin_in_order_and_its_first_node(
    first: list[int], second: list[int], fault: str | None
) -> None:
    """Every plugin scores and normalises before the range check (kube's applyScoreWeights);
    the fault names the first plugin of the profile with a score out of range."""
    plugins = [raw_scorer("A", first), raw_scorer("B", second)]
    if fault is None:
        out = schedule_pod(make_pod("p"), nodes(3), plugins=plugins, weights={"A": 2, "B": 3})
        assert out.totals == {"n0": 3, "n1": 206, "n2": 109}
        return
    with pytest.raises(PluginFault, match=fault) as ei:
        schedule_pod(make_pod("p"), nodes(3), plugins=plugins)
    assert ei.value.status.plugin == fault.split("'")[1]


def test_a_plugin_returning_too_few_scores_is_a_plugin_fault() -> None:
    with pytest.raises(PluginFault, match="returned 2 scores for 3 nodes"):
        schedule_pod(make_pod("p"), nodes(3), plugins=[raw_scorer("Short", [1, 2])])


def test_filter_first_rejection_counts_and_message() -> None:
    with pytest.raises(FitError) as ei:
        schedule_pod(make_pod("p"), nodes(5), plugins=[RejectOdd, RejectAll])
    d = ei.value.diagnosis
    # Odd nodes stop at RejectOdd; the rest at RejectAll. kube sorts "count reason" strings.
    assert d.reasons == {"node(s) were odd": 2, "node(s) were rejected by all": 3}
    assert str(ei.value) == "0/5 nodes are available: 2 node(s) were odd, 3 node(s) were rejected by all."
    assert list(d.node_codes) == [3, 2, 3, 2, 3]
    assert d.unschedulable_plugins == {"RejectOdd", "RejectAll"}


class SkipPreFilter(PreFilterPlugin, FilterPlugin):
    name = "SkipPreFilter"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        return None, Status.skip()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise AssertionError("filter must be skipped after PreFilter Skip")


class OnlyNodes(PreFilterPlugin):
    name = "OnlyNodes"
    allowed: set[str] = {"n1", "n3"}

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        return PreFilterResult(set(self.allowed)), Status.success()


class OnlyOther(PreFilterPlugin):
    name = "OnlyOther"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        return PreFilterResult({"n0"}), Status.success()


def test_prefilter_skip_skips_filter_and_subset_narrows() -> None:
    out = schedule_pod(make_pod("p"), nodes(4), plugins=[SkipPreFilter, OnlyNodes, NameScore])
    assert out.node == "n3"
    assert set(out.totals) == {"n1", "n3"}
    with pytest.raises(FitError) as ei:
        schedule_pod(make_pod("p"), nodes(4), plugins=[OnlyNodes, OnlyOther])
    assert "didn't satisfy plugin(s) [OnlyNodes, OnlyOther] simultaneously" in str(ei.value)


class Unresolvable(PreFilterPlugin):
    name = "Unresolvable"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        return None, Status.unresolvable("no way")


def test_pre_filter_rows_maps_the_node_set_to_rows_and_diagnoses_a_rejection() -> None:
    # Shared by NodeSearch.schedule (all rows) and Framework.filter_rows (the rows asked about).
    snap = Snapshot.of(node_infos(nodes(5)))
    pod = make_pod("p").info()
    fwk = build_framework([OnlyNodes])
    allowed, diag, st = pre_filter_rows(fwk, CycleState(), pod, snap)
    assert st.ok and allowed is not None and allowed.tolist() == [1, 3]
    assert diag.num_all_nodes == 5 and not diag.node_codes.any()
    rows = np.asarray([4, 3, 2, 1], dtype=np.int64)
    allowed, _, _ = pre_filter_rows(fwk, CycleState(), pod, snap, rows)
    assert allowed is not None and allowed.tolist() == [3, 1]  # in the order asked
    allowed, _, st = pre_filter_rows(build_framework([SkipPreFilter]), CycleState(), pod, snap, rows)
    assert st.ok and allowed is None  # every node allowed
    unres = build_framework([Unresolvable])
    u = int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    for asked, codes in ((None, [u] * 5), (rows[:2], [0, 0, 0, u, u])):
        allowed, diag, st = pre_filter_rows(unres, CycleState(), pod, snap, asked)
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and allowed is None
        assert (diag.pre_filter_msg, diag.node_codes.tolist()) == ("no way", codes)
        assert diag.unschedulable_plugins == {"Unresolvable"}
        assert unres.filter_rows(pod, snap, rows)[0].tolist() == []


class SkipScore(PreScorePlugin, ScorePlugin):
    name = "SkipScore"

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: Any) -> Status:
        return Status.skip()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise AssertionError("score must be skipped after PreScore Skip")


def test_prescore_skip() -> None:
    out = schedule_pod(make_pod("p"), nodes(3), plugins=[SkipScore, NameScore])
    assert out.node == "n2"
    assert "SkipScore" not in out.scores


class Preempt(PostFilterPlugin):
    name = "Preempt"
    seen: list[Diagnosis] = []

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        self.seen.append(diagnosis)
        if pod.name == "nominate":
            return PostFilterResult("n0"), Status.success()
        return None, Status.unschedulable(
            "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )


def test_postfilter_message_and_nomination() -> None:
    with pytest.raises(FitError) as ei:
        schedule_pod(make_pod("p"), nodes(2), plugins=[RejectAll, Preempt])
    # kube appends " preemption: <msg>." so a message ending in "." reads "..".
    assert str(ei.value) == (
        "0/2 nodes are available: 2 node(s) were rejected by all. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
    )
    with pytest.raises(FitError) as ei2:
        schedule_pod(make_pod("nominate"), nodes(2), plugins=[RejectAll, Preempt])
    assert ei2.value.nominated_node_name == "n0"


class Recorder(ReservePlugin, PermitPlugin):
    """Appends to CALLS; behaviour set per instance name."""

    name = "R1"
    fail_reserve = False
    permit_status = Status()

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        CALLS.append(f"reserve:{self.name}")
        return Status.unschedulable("no") if self.fail_reserve else Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        CALLS.append(f"unreserve:{self.name}")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return self.permit_status, 5.0


class R2(Recorder):
    name = "R2"


class R3(Recorder):
    name = "R3"
    fail_reserve = True


def test_unreserve_runs_all_in_reverse_order() -> None:
    CALLS.clear()
    fwk = build_framework([Recorder, R2, R3])
    pod = make_pod("p").info()
    st = fwk.run_reserve(CycleState(), pod, "n0")
    assert st.code == Code.UNSCHEDULABLE and st.plugin == "R3"
    fwk.run_unreserve(CycleState(), pod, "n0")
    assert CALLS == ["reserve:R1", "reserve:R2", "reserve:R3", "unreserve:R3", "unreserve:R2", "unreserve:R1"]


class WaitPermit(PermitPlugin):
    name = "WaitPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return Status.wait(), 30.0


def test_permit_wait_allow_reject_and_timeout() -> None:
    clock = FakeClock()
    services = Services(api=MemoryAPI(), events=RecordingEvents(), clock=clock)
    fwk = build_framework([WaitPermit], services=services)
    pod = make_pod("p").info()
    assert fwk.run_permit(CycleState(), pod, "n0").code == Code.WAIT
    wp = fwk.get_waiting_pod(pod.uid)
    assert wp is not None and wp.pending_plugins() == ["WaitPermit"]
    # Another plugin allows it through the waiting-pods map.
    for w in fwk.iterate_waiting_pods():
        w.allow("WaitPermit")
    assert fwk.wait_on_permit(pod).ok
    assert fwk.get_waiting_pod(pod.uid) is None

    pod2 = make_pod("p2").info()
    fwk.run_permit(CycleState(), pod2, "n0")
    fwk.get_waiting_pod(pod2.uid).reject("Gang", "gang member failed")  # type: ignore[union-attr]
    st = fwk.wait_on_permit(pod2)
    assert st.code == Code.UNSCHEDULABLE and st.plugin == "Gang" and st.reasons == ["gang member failed"]

    pod3 = make_pod("p3").info()
    fwk.run_permit(CycleState(), pod3, "n0")
    result: list[Status] = []
    t = threading.Thread(target=lambda: result.append(fwk.wait_on_permit(pod3)))
    t.start()
    clock.step(31)
    t.join(5)
    assert result and "timeout after waiting 30s at plugin WaitPermit" in result[0].message()


def test_shutting_down_ends_the_waits_at_permit_and_rejects_later_ones() -> None:
    clock = FakeClock()
    services = Services(api=MemoryAPI(), events=RecordingEvents(), clock=clock)
    fwk = build_framework([WaitPermit], services=services)
    handle = fwk  # the Framework is the Handle its plugins see
    pod = make_pod("p").info()
    assert fwk.run_permit(CycleState(), pod, "n0").code == Code.WAIT
    result: list[Status] = []
    t = threading.Thread(target=lambda: result.append(fwk.wait_on_permit(pod)))
    t.start()
    assert not handle.shutting_down()
    fwk.cancel_binding_waits()  # the manual clock never moves: only the cancel can end the wait
    t.join(5)
    assert result and result[0].code == Code.UNSCHEDULABLE
    assert result[0].reasons == ["rejected: the scheduler is shutting down"]
    assert handle.shutting_down() and handle.shutting_down(wait=30) and clock.now() == FakeClock().now()
    # A pod that reaches Permit after the cancel does not wait at all.
    late = make_pod("late").info()
    assert fwk.run_permit(CycleState(), late, "n0").code == Code.WAIT
    assert fwk.wait_on_permit(late).reasons == ["rejected: the scheduler is shutting down"]


class SkipBinder(BindPlugin):
    name = "SkipBinder"

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.skip()


def test_first_non_skip_binder_binds() -> None:
    fwk = build_framework([SkipBinder, NoopBinder])
    pod = make_pod("p").info()
    assert fwk.run_bind(CycleState(), pod, "n1").ok
    assert fwk.api.calls == [("bind", "default/p", "n1")]  # type: ignore[attr-defined]
    only_skip = build_framework([SkipBinder])
    st = only_skip.run_bind(CycleState(), pod, "n1")
    assert st.code == Code.ERROR


@pytest.mark.parametrize(
    ("nodes_n", "pct", "want"),
    [
        (50, None, 50),
        (100, None, 100),
        (1000, None, 420),
        (5000, None, 500),
        (6000, None, 300),
        (20000, None, 1000),
        (5000, 100, 5000),
        (5000, 1, 100),
    ],
)
def test_num_feasible_nodes_to_find(nodes_n: int, pct: int | None, want: int) -> None:
    # kube: adaptive = max(5, 50 - n/125) percent, at least 100 nodes.
    assert num_feasible_nodes_to_find(nodes_n, pct) == want


def test_rotating_start_index_spreads_evaluation() -> None:
    search = NodeSearch(build_framework([], percentage_of_nodes_to_score=10))
    snap = Snapshot.of(node_infos([make_node(f"n{i:03d}") for i in range(1000)]))
    pod = make_pod("p").info()
    firsts = []
    for _ in range(3):
        diag = Diagnosis(len(snap), np.zeros(len(snap), dtype=np.int8))
        feasible, evaluated = search.find_feasible(CycleState(), pod, snap, None, diag)
        assert len(feasible) == 100 and evaluated == 100
        firsts.append(int(feasible[0]))
    assert firsts == [0, 100, 200]


class RejectTenthCounting(FilterPlugin):
    """Rejects every tenth node; counts the filter passes (chunks) it is called for."""

    name = "RejectTenth"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.chunks = 0

    def filter_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: Any) -> list[Rejection]:
        self.chunks += 1
        return [Rejection(idx % 10 == 9, ("node(s) were tenth",))]


def test_chunks_follow_the_pass_rate_and_never_change_what_is_found() -> None:
    """The first search filters `want` nodes, falls short (a tenth rejected) and filters a
    small second chunk, not a doubled one; the next search sizes its first chunk by that pass
    rate and needs one.  Found nodes and the next start are kube's either way."""
    fwk = build_framework([RejectTenthCounting], percentage_of_nodes_to_score=10)
    plugin = fwk.plugins["RejectTenth"]
    search = NodeSearch(fwk)
    snap = Snapshot.of(node_infos([make_node(f"n{i:04d}") for i in range(2000)]))
    pod = make_pod("p").info()
    expected_start = 0
    for chunks in (2, 1, 1):
        diag = Diagnosis(len(snap), np.zeros(len(snap), dtype=np.int8))
        before = plugin.chunks
        feasible, evaluated = search.find_feasible(CycleState(), pod, snap, None, diag)
        assert plugin.chunks - before == chunks
        rows = [r for r in range(expected_start, expected_start + 300) if r % 10 != 9][:200]
        assert feasible.tolist() == rows
        assert evaluated == rows[-1] + 1 - expected_start
        expected_start = rows[-1] + 1


def test_plugin_exception_becomes_error_with_plugin_name() -> None:
    class Boom(FilterPlugin):
        name = "Boom"

        def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
            raise RuntimeError("kaboom")

    with pytest.raises(PluginFault) as ei:
        schedule_pod(make_pod("p"), nodes(2), plugins=[Boom])
    assert ei.value.status.plugin == "Boom" and ei.value.status.code == Code.ERROR


def test_status_helpers() -> None:
    from netsched.framework.status import merge

    st = merge([Status.unschedulable("a"), Status.unresolvable("b"), Status.success()])
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.reasons == ["b"]
    assert Status.success().with_plugin("X").plugin == ""
    assert str(Status.unschedulable("x", plugin="P")) == "UNSCHEDULABLE P: x"


class _Args(PluginArgs):
    def __init__(self, limit: int = 3) -> None:
        self.limit = limit

    @classmethod
    def decode(cls, fields: Fields) -> _Args:
        return cls(fields.int("limit", 3, min=1))

    def encode(self) -> dict[str, Any]:
        return {"limit": self.limit}


class WithArgs(FilterPlugin):
    name = "WithArgs"
    Args = _Args

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


@pytest.mark.parametrize(
    ("given", "error"),
    [
        (None, ""),  # not configured: the defaults
        (_Args(5), ""),
        ({"limit": 7}, ""),  # a mapping is decoded with the plugin's own reader
        ({"limit": 0}, "plugin 'WithArgs': pluginConfig[WithArgs].args.limit: Invalid value: 0"),
        (object(), "plugin 'WithArgs': args must be _Args or a mapping, got object"),
    ],
)
def test_plugin_args_are_typed_at_build(given: Any, error: str) -> None:
    args = {} if given is None else {"WithArgs": given}
    if error:
        with pytest.raises(FrameworkBuildError, match=re.escape(error)):
            build_framework([WithArgs], args=args)
        return
    fwk = build_framework([WithArgs], args=args)
    got = fwk.filter_plugins[0].args
    assert isinstance(got, _Args)
    want = 3 if given is None else given["limit"] if isinstance(given, dict) else given.limit
    assert got.limit == want


def test_schedule_pod_scores_once_and_returns_the_breakdown() -> None:
    calls: list[str] = []

    class Counting(NameScore):
        name = "Counting"

        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
            calls.append(node.name)
            return super().score(state, pod, node)

    out = schedule_pod(make_pod("p"), nodes(3), plugins=[Counting], weights={"Counting": 2})
    assert sorted(calls) == ["n0", "n1", "n2"]  # one score loop, not a second pass for the breakdown
    assert out.node == "n2" and out.totals == {"n0": 0, "n1": 20, "n2": 40}
    assert out.scores["Counting"]["n1"] == (10, 20)


def test_score_plugins_find_the_rows_being_scored_in_the_cycle_state() -> None:
    seen: list[list[int] | None] = []

    class NotN1(FilterPlugin):
        name = "NotN1"

        def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
            return Status.unschedulable("not n1") if node.name == "n1" else Status.success()

    class Rows(ScorePlugin):
        name = "Rows"

        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
            seen.append(None if state.score_rows is None else state.score_rows.tolist())
            return 0

    schedule_pod(make_pod("p"), nodes(4), plugins=[NotN1, Rows])
    assert seen == [[0, 2, 3]] * 3  # the feasible rows, as PreScore got them, for every node


class Ticking(ScorePlugin):
    """Registers a periodic task that records which instance ran it."""

    name = "Ticking"
    ran: list[object] = []

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        handle.every("Ticking/tick", 1.0, lambda: Ticking.ran.append(self))
        handle.run_soon("Ticking/tick")

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0


def test_a_replica_takes_over_no_periodic_task_of_the_live_plugins() -> None:
    """Explanations run on a replica (Framework.replica); its plugins used to re-register the
    live plugins' periodic tasks, so the task then ran the replica's instance (frozen on the
    explanation's snapshot) until the next reload."""
    clock = FakeClock()
    fwk = build_framework([Ticking], clock=clock)
    live = fwk.plugins["Ticking"]
    replica = fwk.replica()
    assert replica.plugins["Ticking"] is not live
    periodic = fwk._services.periodic
    assert periodic is not None and periodic.names() == ["Ticking/tick"]
    Ticking.ran.clear()
    assert periodic.run_due() == 1  # the live plugin's run_soon
    clock.step(1.0)
    assert periodic.run_due() == 1
    assert Ticking.ran == [live, live]
