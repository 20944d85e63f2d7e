"""DefaultPreemption: eligibility, victim selection, PDBs, candidate choice, side effects, messages."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from netsched.framework import Diagnosis, FilterPlugin, PostFilterResult, PreFilterPlugin
from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.quantity import CPU
from netsched.framework.runtime import Framework
from netsched.framework.search import FitError
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.framework.waiting import WaitingPodImpl, WaitingPods
from netsched.kube.errors import NotFound
from netsched.plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs
from netsched.plugins.default_preemption.candidates import Candidate, pick_one
from netsched.plugins.default_preemption.victims import Victims, parse_pdbs, select_victims_on_node
from netsched.plugins.inter_pod_affinity import InterPodAffinity
from netsched.plugins.pod_topology_spread import PodTopologySpread
from netsched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_framework, fake_services, plugin_of, schedule_pod
from netsched.testing.handle import MemoryAPI, RecordingEvents

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


class CpuFit(FilterPlugin):
    """A tiny resource filter: the pod's cpu request must fit the node's free cpu."""

    name = "TestCpuFit"
    calls: list[str]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if hasattr(self, "calls"):
            self.calls.append(node.name)
        if node.free(CPU) < pod.requests.get(CPU, 0):
            return Status.unschedulable("Insufficient cpu")
        return Status.success()


class OnlyZone(FilterPlugin):
    """Rejects nodes outside zone a as unresolvable (like a node selector would)."""

    name = "TestOnlyZone"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if node.labels.get(ZONE, "a") != "a":
            return Status.unresolvable("node(s) didn't match Pod's node affinity/selector")
        return Status.success()


@dataclass
class Run:
    result: PostFilterResult | None
    status: Status
    handle: Framework  # the real runtime, as the plugin's Handle
    plugin: DefaultPreemption
    diagnosis: Diagnosis
    api: MemoryAPI
    events: RecordingEvents


def infos(nodes: Sequence[Any], pods: Sequence[Any] = ()) -> list[NodeInfo]:
    """node_infos over any sequences of builders/records (its list parameters are invariant)."""
    return node_infos(list(nodes), list(pods))


def low(name: str, node: str, cpu: str, priority: int = 0, **labels: str) -> PodBuilder:
    return make_pod(name).req(cpu=cpu).priority(priority).labels(**labels).node(node)


def preempt(
    pod: PodBuilder | PodInfo,
    nodes: Sequence[NodeBuilder | NodeInfo],
    existing: Sequence[PodBuilder | PodInfo] = (),
    *,
    filters: Sequence[type[FilterPlugin]] = (CpuFit,),
    pre_filters: Sequence[type[PreFilterPlugin]] = (),
    pdbs: list[Mapping[str, Any]] | None = None,
    nominated: Mapping[str, list[PodInfo]] | None = None,
    args: DefaultPreemptionArgs | None = None,
    seed: int = 0,
    codes: Mapping[str, Code] | None = None,
    api: MemoryAPI | None = None,
) -> Run:
    """Filter the pod through a real Framework (filters, then pre-filter plugins), then preempt."""
    pi = pod.info() if isinstance(pod, PodBuilder) else pod
    snap = Snapshot.of(infos(list(nodes), list(existing)))
    api = api if api is not None else MemoryAPI()
    events = RecordingEvents()
    fwk = build_framework(
        [*filters, *pre_filters, DefaultPreemption],
        args={DefaultPreemption.name: args} if args is not None else None,
        snapshot=snap,
        api=api,
        events=events,
        pdbs=pdbs or (),
        nominated=nominated,
    )
    state = CycleState()
    fwk.run_pre_filter(state, pi, snap)  # its verdict is the filters' business; Skip drops a plugin
    diagnosis = Diagnosis(len(snap), np.zeros(len(snap), dtype=np.int8))
    for i, n in enumerate(snap.nodes):
        st = fwk.run_filter_plugins_with_nominated_pods(state, pi, n)
        diagnosis.node_codes[i] = st.code
        for r in st.reasons:
            diagnosis.reasons[r] = diagnosis.reasons.get(r, 0) + 1
    for name, code in (codes or {}).items():
        diagnosis.node_codes[snap.index[name]] = code
    plugin = plugin_of(fwk, DefaultPreemption)
    plugin.rng = random.Random(seed)
    result, status = plugin.post_filter(state, pi, diagnosis)
    return Run(result, status, fwk, plugin, diagnosis, api, events)


def deleted(run: Run) -> list[str]:
    return [key for op, key, _ in run.api.calls if op == "delete"]


# ---------------------------------------------------------------- args


def test_args_defaults_and_candidate_counts() -> None:
    a = DefaultPreemptionArgs.default()
    assert (a.min_candidate_nodes_percentage, a.min_candidate_nodes_absolute) == (10, 100)
    assert [a.num_candidates(n) for n in (5, 50, 1000, 2000, 5000)] == [5, 50, 100, 200, 500]
    assert DefaultPreemptionArgs(0, 3).num_candidates(10) == 3
    assert DefaultPreemptionArgs(50, 0).num_candidates(10) == 5
    assert DefaultPreemptionArgs.decode(Fields(a.encode(), "a", ErrorList())) == a


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            {"minCandidateNodesPercentage": -1},
            ["args.minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]"],
        ),
        (
            {"minCandidateNodesPercentage": 101},
            ["args.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"],
        ),
        (
            {"minCandidateNodesAbsolute": -5},
            ["args.minCandidateNodesAbsolute: Invalid value: -5: not in valid range [0, inf)"],
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            [
                "args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                "args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
            ],
        ),
        ({"minCandidates": 1}, ["args.minCandidates: Unknown field: not a field of this object (typo?)"]),
    ],
)
def test_args_errors_name_the_field(raw: dict[str, Any], want: list[str]) -> None:
    errs = ErrorList()
    DefaultPreemptionArgs.decode(Fields(raw, "args", errs))
    assert [str(e) for e in errs] == want


# ---------------------------------------------------------------- eligibility


def test_preemption_policy_never() -> None:
    run = preempt(
        make_pod("p").req(cpu="2").priority(10).preemption_policy("Never"),
        [make_node("n1")],
        [low("a", "n1", "4")],
    )
    assert run.result is None
    assert run.status == Status.unschedulable("not eligible due to preemptionPolicy=Never.")
    assert run.api.calls == []


PREEMPTED = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]


def terminating(conditions: list[dict[str, str]] | None = None) -> PodBuilder:
    """A lower-priority pod on n1 that is being deleted, with these status conditions."""
    pod = low("a", "n1", "4").set("metadata.deletionTimestamp", "2024-01-01T00:00:00Z")
    return pod if conditions is None else pod.set("status.conditions", conditions)


def test_terminating_victim_on_the_nominated_node_blocks_new_preemption() -> None:
    dying = terminating(PREEMPTED)  # a victim of an earlier preemption
    pod = make_pod("p").req(cpu="2").priority(10).nominated("n1")
    run = preempt(pod, [make_node("n1"), make_node("n2")], [dying, low("b", "n2", "4")])
    assert run.status == Status.unschedulable("not eligible due to a terminating pod on the nominated node.")
    # The nominated node turned unresolvable for the pod: preempt again elsewhere.
    run = preempt(
        pod,
        [make_node("n1"), make_node("n2")],
        [dying, low("b", "n2", "4")],
        codes={"n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    )
    assert run.status.ok and run.result == PostFilterResult("n2")
    # A pod terminating for another reason (eviction API) does not block.
    evicted = terminating([{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}])
    run = preempt(pod, [make_node("n1")], [evicted])
    assert run.status.ok and run.result == PostFilterResult("n1")
    # Nor does one without any DisruptionTarget condition (kube v1.31: a rollout, a plain delete),
    # nor one whose condition is not True.
    for other in (terminating(), terminating([{**PREEMPTED[0], "status": "False"}])):
        run = preempt(pod, [make_node("n1")], [other])
        assert run.status.ok and run.result == PostFilterResult("n1")


# ---------------------------------------------------------------- victims and candidates


def test_basic_preemption_picks_the_node_with_the_cheapest_victims() -> None:
    existing = [
        low("a", "n1", "2", 1),
        low("b", "n1", "2", 1),
        low("c", "n2", "3", 2),
        low("d", "n2", "1", 100),
    ]
    pod = make_pod("p").req(cpu="2").priority(10).info()
    run = preempt(pod, [make_node("n1"), make_node("n2")], existing)
    # n1: one of a/b (priority 1) must go; n2: c (priority 2).  Lowest top victim priority wins.
    assert run.status.ok and run.result == PostFilterResult("n1")
    assert deleted(run) == ["default/b"]
    assert run.events.events == [
        ("default/b", "Normal", "Preempted", "Preempting", f"Preempted by pod {pod.uid} on node n1")
    ]


def test_reprieve_highest_priority_first() -> None:
    existing = [
        low("a", "n1", "1", 1),
        low("b", "n1", "1", 2),
        low("c", "n1", "1", 3),
        low("d", "n1", "1", 20),
    ]
    run = preempt(make_pod("p").req(cpu="2").priority(5), [make_node("n1")], existing)
    # Without a, b, c: 3 cpu free.  c comes back (2 free), b does not fit, a does not fit.
    assert run.result == PostFilterResult("n1")
    assert deleted(run) == ["default/b", "default/a"]


def test_equal_priority_victims_reprieve_earliest_started_first() -> None:
    existing = [
        low("young", "n1", "2", 1).set("status.startTime", "2024-05-01T00:00:00Z"),
        low("old", "n1", "2", 1).set("status.startTime", "2024-01-01T00:00:00Z"),
    ]
    run = preempt(make_pod("p").req(cpu="2").priority(5), [make_node("n1")], existing)
    assert deleted(run) == ["default/young"]


def _pdb(app: str, allowed: int, disrupted: Sequence[str] = (), ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"pdb-{app}", "namespace": ns},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {d: "2024-01-01T00:00:00Z" for d in disrupted},
        },
    }


def test_candidates_without_pdb_violations_win() -> None:
    existing = [low("g", "n1", "4", 1, app="guarded"), low("f", "n2", "4", 1, app="free")]
    pod = make_pod("p").req(cpu="2").priority(10)
    run = preempt(pod, [make_node("n1"), make_node("n2")], existing, pdbs=[_pdb("guarded", 0)])
    assert run.result == PostFilterResult("n2") and deleted(run) == ["default/f"]
    # With only the guarded node, the budget is violated rather than nothing happening.
    run = preempt(pod, [make_node("n1")], existing[:1], pdbs=[_pdb("guarded", 0)])
    assert run.result == PostFilterResult("n1") and deleted(run) == ["default/g"]


def test_pdb_protected_pods_are_reprieved_first() -> None:
    existing = [low("g", "n1", "2", 1, app="guarded"), low("f", "n1", "2", 2, app="free")]
    pod = make_pod("p").req(cpu="2").priority(10)
    # By priority alone f (2) would be kept and g evicted.
    assert deleted(preempt(pod, [make_node("n1")], existing)) == ["default/g"]
    # g would break its budget: it is tried first and kept; f goes.
    assert deleted(preempt(pod, [make_node("n1")], existing, pdbs=[_pdb("guarded", 0)])) == ["default/f"]
    # Budgets of other namespaces, or already counting g as disrupted, do not protect it.
    assert deleted(preempt(pod, [make_node("n1")], existing, pdbs=[_pdb("guarded", 0, ns="other")])) == [
        "default/g"
    ]
    assert deleted(preempt(pod, [make_node("n1")], existing, pdbs=[_pdb("guarded", 0, disrupted=["g"])])) == [
        "default/g"
    ]


def test_select_victims_counts_violations() -> None:
    existing = [low("g1", "n1", "2", 1, app="guarded"), low("g2", "n1", "2", 1, app="guarded")]
    snap = Snapshot.of(infos([make_node("n1")], existing))
    fwk = build_framework([CpuFit], snapshot=snap)
    pod = make_pod("p").req(cpu="4").priority(5).info()
    victims, st = select_victims_on_node(
        fwk, CycleState(), pod, snap.nodes[0].clone(), parse_pdbs([_pdb("guarded", 1)])
    )
    assert st.ok and victims is not None
    # One disruption allowed: evicting both breaks the budget once.
    assert sorted(p.name for p in victims.pods) == ["g1", "g2"] and victims.num_pdb_violations == 1
    assert len(snap.nodes[0].pods) == 2  # the snapshot's node is untouched


def _cand(
    node: str, prios: Sequence[int], violations: int = 0, starts: Sequence[str] | None = None
) -> Candidate:
    pods = []
    for i, p in enumerate(prios):
        b = make_pod(f"{node}-v{i}").priority(p)
        if starts is not None:
            b.set("status.startTime", starts[i])
        pods.append(b.info())
    return Candidate(node, Victims(pods, violations))


@pytest.mark.parametrize(
    ("cands", "want"),
    [
        ([_cand("a", [1], 1), _cand("b", [5], 0)], "b"),  # fewest PDB violations
        ([_cand("a", [5, 1]), _cand("b", [3, 3, 3])], "b"),  # lowest top victim priority
        ([_cand("a", [3, 3]), _cand("b", [3, 1])], "b"),  # smallest priority sum
        (
            [_cand("a", [3, 3]), _cand("b", [3, 1, 1])],
            "a",
        ),  # each victim shifted by 2^31: more victims cost more
        ([_cand("a", [-5, -5]), _cand("b", [-5])], "b"),  # negatives do not make more victims cheaper
        ([_cand("a", [3, 1]), _cand("b", [3])], "b"),  # fewer victims (decided by the shifted sum already)
        (
            [
                _cand("a", [3, 1], starts=["2024-01-01T00:00:00Z", "2024-09-01T00:00:00Z"]),
                _cand("b", [3, 1], starts=["2024-03-01T00:00:00Z", "2023-01-01T00:00:00Z"]),
            ],
            "b",  # latest start among the top-priority victims
        ),
        ([_cand("a", [2]), _cand("b", [2])], "a"),  # then the first
    ],
)
def test_pick_one_node_criteria(cands: list[Candidate], want: str) -> None:
    best = pick_one(cands)
    assert best is not None and best.node == want


# ---------------------------------------------------------------- no candidate


def test_no_candidate_message_lists_every_node() -> None:
    nodes = [make_node("n1"), make_node("n2").zone("b"), make_node("n3")]
    existing = [low("hi", "n1", "4", 50), low("x", "n2", "4", 0), low("y", "n3", "4", 0)]
    pod = make_pod("p").req(cpu="5").priority(10)
    run = preempt(pod, nodes, existing, filters=(OnlyZone, CpuFit))
    assert run.status.code == Code.UNSCHEDULABLE
    assert run.result == PostFilterResult("")
    assert run.status.message() == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


def test_nothing_helpful_clears_a_stale_nomination() -> None:
    pod = make_pod("p").req(cpu="2").priority(10).nominated("n2")
    nodes = [make_node("n1").zone("b"), make_node("n2").zone("b")]
    run = preempt(pod, nodes, [low("a", "n1", "4")], filters=(OnlyZone, CpuFit))
    assert run.status.message() == "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    assert run.api.calls == [("nominate", "default/p", "")]


# ---------------------------------------------------------------- side effects


def test_waiting_victims_are_rejected_not_deleted() -> None:
    victim = low("a", "n1", "4").info()
    snap_nodes = [make_node("n1")]
    pod = make_pod("p").req(cpu="2").priority(10)
    run = preempt(pod, snap_nodes, [victim])  # baseline: deleted
    assert deleted(run) == ["default/a"]
    # Re-run with the victim waiting in Permit.
    snap = Snapshot.of(infos(snap_nodes, [victim]))
    api, events, clock = MemoryAPI(), RecordingEvents(), FakeClock()
    waiting_pods = WaitingPods()
    waiting = WaitingPodImpl(victim, "n1", {"Gate": 60.0}, clock)  # parked at Permit by a gate plugin
    waiting_pods.add(waiting)
    services = fake_services(api=api, events=events, clock=clock)
    services.waiting_pods = waiting_pods
    fwk = build_framework([CpuFit, DefaultPreemption], services=services, snapshot=snap)
    pl = plugin_of(fwk, DefaultPreemption)
    diag = Diagnosis(1, np.array([Code.UNSCHEDULABLE], dtype=np.int8))
    result, st = pl.post_filter(CycleState(), pod.info(), diag)
    assert st.ok and result == PostFilterResult("n1")
    waiting.allow("Gate")  # too late if preemption rejected it; else the pod would go ahead
    outcome = waiting.wait()
    assert [(outcome.plugin, m) for m in outcome.reasons] == [("DefaultPreemption", "preempted")]
    assert api.calls == []
    assert [e[2] for e in events.events] == ["Preempted"]


def test_lower_priority_nominations_on_the_node_are_cleared() -> None:
    lower = make_pod("lower").priority(1).nominated("n1").info()
    higher = make_pod("higher").priority(50).nominated("n1").info()
    run = preempt(
        make_pod("p").req(cpu="2").priority(10),
        [make_node("n1")],
        [low("a", "n1", "4")],
        nominated={"n1": [lower, higher]},
    )
    assert run.api.calls == [("delete", "default/a", ""), ("nominate", "default/lower", "")]


class ConditionAPI(MemoryAPI):
    def update_pod_condition(self, pod: PodInfo, condition: Mapping[str, Any]) -> None:
        self.calls.append(("condition", pod.key, f"{condition['type']}/{condition['reason']}"))


def test_victims_are_marked_disruption_target_when_the_api_can() -> None:
    run = preempt(
        make_pod("p").req(cpu="2").priority(10), [make_node("n1")], [low("a", "n1", "4")], api=ConditionAPI()
    )
    assert run.api.calls == [
        ("condition", "default/a", "DisruptionTarget/PreemptionByScheduler"),
        ("delete", "default/a", ""),
    ]


class FailingAPI(MemoryAPI):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        raise self.error


def test_delete_failures() -> None:
    pod = make_pod("p").req(cpu="2").priority(10)
    run = preempt(pod, [make_node("n1")], [low("a", "n1", "4")], api=FailingAPI(RuntimeError("boom")))
    assert run.status.code == Code.ERROR and run.result is None
    assert run.events.events == []
    # Already gone: fine.
    run = preempt(pod, [make_node("n1")], [low("a", "n1", "4")], api=FailingAPI(NotFound(404, "NotFound")))
    assert run.status.ok and run.result == PostFilterResult("n1")


# ---------------------------------------------------------------- candidate budget


def test_dry_run_stops_after_enough_candidates_from_a_random_offset() -> None:
    nodes = [make_node(f"n{i}") for i in range(10)]
    existing = [low(f"v{i}", f"n{i}", "4") for i in range(10)]
    pod = make_pod("p").req(cpu="2").priority(10)
    for seed in range(5):
        snap = Snapshot.of(infos(nodes, existing))
        fwk = build_framework(
            [CpuFit, DefaultPreemption],
            args={DefaultPreemption.name: DefaultPreemptionArgs(0, 2)},
            snapshot=snap,
        )
        fit = plugin_of(fwk, CpuFit)
        pl = plugin_of(fwk, DefaultPreemption)
        pl.rng = random.Random(seed)
        offset = random.Random(seed).randrange(10)
        diag = Diagnosis(10, np.full(10, Code.UNSCHEDULABLE, dtype=np.int8))
        fit.calls = []
        result, st = pl.post_filter(CycleState(), pod.info(), diag)
        assert st.ok and result is not None
        # Two nodes dry-run (one "fits without victims" check + one reprieve check each).
        tried = list(dict.fromkeys(fit.calls))
        assert tried == [f"n{(offset + i) % 10}" for i in range(2)]
        assert result.nominated_node_name == tried[0]


# ---------------------------------------------------------------- with other plugins' PreFilter state


def test_preempting_an_anti_affinity_conflict() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": HOST}
            ]
        }
    }
    existing = [low("cheap", "n1", "1", 1, app="noisy"), low("vip", "n2", "1", 100, app="noisy")]
    pod = make_pod("p").req(cpu="1").priority(10).affinity(anti)
    run = preempt(pod, [make_node("n1"), make_node("n2")], existing, pre_filters=(InterPodAffinity,))
    assert list(run.diagnosis.node_codes) == [Code.UNSCHEDULABLE, Code.UNSCHEDULABLE]
    assert run.result == PostFilterResult("n1") and deleted(run) == ["default/cheap"]


def test_preempting_for_topology_spread() -> None:
    nodes = [make_node("a1").zone("a"), make_node("b1").zone("b")]
    existing = [
        low("w1", "a1", "1", 0, app="web"),
        low("w2", "a1", "1", 0, app="web"),
        low("big", "b1", "4", 100, app="db"),
    ]
    pod = make_pod("p").labels(app="web").req(cpu="1").priority(10).spread(1, ZONE, selector={"app": "web"})
    run = preempt(pod, nodes, existing, pre_filters=(PodTopologySpread,))
    # a: 2 web pods vs b: 0 -> 2+1-0 > 1.  Removing both is needed: one left still gives 1+1-0 = 2.
    assert run.result == PostFilterResult("a1")
    assert sorted(deleted(run)) == ["default/w1", "default/w2"]


# ---------------------------------------------------------------- through the runtime


def test_runtime_nominates_and_reports() -> None:
    existing = [low("a", "n1", "4", 1), low("b", "n2", "4", 100)]
    with pytest.raises(FitError) as e:
        schedule_pod(
            make_pod("p").req(cpu="2").priority(10),
            [make_node("n1"), make_node("n2")],
            plugins=[CpuFit, DefaultPreemption],
            existing=existing,
        )
    assert e.value.nominated_node_name == "n1"
    with pytest.raises(FitError) as e:
        schedule_pod(
            make_pod("p").req(cpu="2").priority(1),
            [make_node("n1"), make_node("n2")],
            plugins=[CpuFit, DefaultPreemption],
            existing=existing,
        )
    assert e.value.nominated_node_name == ""
    # kube prints the inner sentence's period and then its own: "..pod.."
    assert str(e.value) == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod.."
    )


def test_readme_example_loads() -> None:
    import pathlib
    import re

    from netsched.config.load import load_config
    from netsched.framework.registry import Registry
    from netsched.testing.framework import FifoSort, NoopBinder

    class PrioritySort(FifoSort):
        name = "PrioritySort"

    class DefaultBinder(NoopBinder):
        name = "DefaultBinder"

    readme = pathlib.Path(__file__).parents[2] / "plugins" / "default_preemption" / "README.md"
    (example,) = re.findall(r"```yaml\n(.*?)```", readme.read_text(), re.S)
    cfg = load_config(example, Registry([DefaultPreemption, PrioritySort, DefaultBinder]))
    assert isinstance(cfg.profiles[0].plugin_config["DefaultPreemption"], DefaultPreemptionArgs)
