"""DefaultPreemption against kube's own cases.

Ported from kubernetes/kubernetes
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go:
the node-picking table (TestSelectBestCandidate / TestPickOneNodeForPreemption,
named TestPickStrategy in some versions) and dry-run cases with topology spread
and PodDisruptionBudgets.  Each case runs the pod through the real runtime
(NodeResourcesFit filters, DefaultPreemption at PostFilter) and asserts the
nominated node (any of kube's accepted ones) and the victims.

kube's constants: priorities neg -100, low 0, mid 100, high 1000, very high 10000;
small/medium/large/very large requests 100m/200m/300m/500m cpu and 100/200/300/500
bytes of memory; nodes hold the very large amount and 100 pods; start times
epochTime..epochTime6 (seconds 0..6 here: API timestamps have second resolution).
"""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import knode, kpod

from netsched.framework.search import FitError
from netsched.plugins.default_preemption import DefaultPreemption
from netsched.plugins.noderesources import NodeResourcesFit
from netsched.plugins.pod_topology_spread import PodTopologySpread
from netsched.testing.framework import build_framework, schedule_pod
from netsched.testing.handle import MemoryAPI

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
NODE_CAP = {"cpu": "500m", "memory": "500", "pods": "100"}


def t(i: int) -> str:
    return f"1970-01-01T00:00:0{i}Z"


def p(name: str, node: str, priority: int, req: dict[str, str], start: int = 0, **kw: Any) -> dict[str, Any]:
    return {"name": name, "node": node, "priority": priority, "req": req, "start": start, **kw}


def run(
    pod_priority: int,
    pod_req: dict[str, str],
    existing: list[dict[str, Any]],
    nodes: list[Any],
    *,
    plugins: tuple[Any, ...] = (NodeResourcesFit,),
    pdbs: list[dict[str, Any]] | None = None,
    pod_kw: dict[str, Any] | None = None,
) -> tuple[str, list[str], bool]:
    """(node the pod goes to or is nominated for, deleted victims, whether preemption ran)."""
    api = MemoryAPI()
    fwk = build_framework([*plugins, DefaultPreemption], api=api, pdbs=pdbs or ())
    pods = [
        kpod(
            e["req"],
            name=e["name"],
            node=e["node"],
            priority=e["priority"],
            start_time=t(e["start"]),
            labels=e.get("labels"),
            **e.get("spec", {}),
        )
        for e in existing
    ]
    pod = kpod(pod_req, name="p", priority=pod_priority, **(pod_kw or {}))
    try:
        out = schedule_pod(pod, nodes, framework=fwk, existing=pods)
        return out.node, [], False
    except FitError as e:
        deleted = sorted(key.split("/", 1)[1] for op, key, _ in api.calls if op == "delete")
        return e.nominated_node_name, deleted, True


def cluster(n: int) -> list[Any]:
    return [knode(f"node{i + 1}", NODE_CAP) for i in range(n)]


PICK: list[tuple[str, int, dict[str, str], int, list[dict[str, Any]], set[str]]] = [
    ("No node needs preemption", HIGH, LARGE, 1, [p("p1.1", "node1", MID, SMALL)], {"node1"}),
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        HIGH,
        LARGE,
        2,
        [p("p1.1", "node1", MID, LARGE), p("p2.1", "node2", MID, LARGE)],
        {"node1", "node2"},
    ),
    (
        "a pod that fits on a node with no preemption",
        HIGH,
        LARGE,
        3,
        [p("p1.1", "node1", MID, LARGE), p("p2.1", "node2", MID, LARGE)],
        {"node3"},
    ),
    (
        "node with min highest priority pod is picked",
        HIGH,
        VERY_LARGE,
        3,
        [
            p("p1.1", "node1", MID, MEDIUM),
            p("p1.2", "node1", MID, LARGE),
            p("p2.1", "node2", MID, MEDIUM),
            p("p2.2", "node2", LOW, MEDIUM),
            p("p3.1", "node3", LOW, MEDIUM),
            p("p3.2", "node3", LOW, MEDIUM),
        ],
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        HIGH,
        VERY_LARGE,
        3,
        [
            p("p1.1", "node1", MID, MEDIUM),
            p("p1.2", "node1", MID, LARGE),
            p("p2.1", "node2", MID, LARGE),
            p("p2.2", "node2", LOW, MEDIUM),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", MID, MEDIUM),
        ],
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        HIGH,
        VERY_LARGE,
        3,
        [
            p("p1.1", "node1", MID, SMALL),
            p("p1.2", "node1", NEG, SMALL),
            p("p1.3", "node1", MID, SMALL),
            p("p1.4", "node1", NEG, SMALL),
            p("p2.1", "node2", MID, LARGE),
            p("p2.2", "node2", NEG, MEDIUM),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", NEG, SMALL),
            p("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        HIGH,
        VERY_LARGE,
        3,
        [
            p("p1.1", "node1", MID, SMALL),
            p("p1.2", "node1", NEG, SMALL),
            p("p1.3", "node1", NEG, SMALL),
            p("p2.1", "node2", MID, LARGE),
            p("p2.2", "node2", NEG, MEDIUM),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", NEG, SMALL),
            p("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        VERY_HIGH,
        VERY_LARGE,
        4,
        [
            p("p1.1", "node1", MID, SMALL),
            p("p1.2", "node1", LOW, SMALL),
            p("p1.3", "node1", LOW, SMALL),
            p("p2.1", "node2", HIGH, LARGE),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", LOW, SMALL),
            p("p3.3", "node3", LOW, SMALL),
            p("p3.4", "node3", LOW, MEDIUM),
            p("p4.1", "node4", MID, MEDIUM),
            p("p4.2", "node4", MID, SMALL),
            p("p4.3", "node4", MID, SMALL),
            p("p4.4", "node4", NEG, SMALL),
        ],
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        HIGH,
        VERY_LARGE,
        3,
        [
            p("p1.1", "node1", MID, MEDIUM, 2),
            p("p1.2", "node1", MID, MEDIUM, 2),
            p("p2.1", "node2", MID, MEDIUM, 3),
            p("p2.2", "node2", MID, MEDIUM, 3),
            p("p3.1", "node3", MID, MEDIUM, 1),
            p("p3.2", "node3", MID, MEDIUM, 1),
        ],
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        HIGH,
        VERY_LARGE,
        3,
        [
            p("p1.1", "node1", MID, MEDIUM, 4),
            p("p1.2", "node1", MID, MEDIUM, 2),
            p("p2.1", "node2", MID, MEDIUM, 5),
            p("p2.2", "node2", MID, MEDIUM, 1),
            p("p3.1", "node3", MID, MEDIUM, 3),
            p("p3.2", "node3", MID, MEDIUM, 6),
        ],
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        HIGH,
        VERY_LARGE,
        3,
        [
            p("p1.1", "node1", LOW, MEDIUM, 4),
            p("p1.2", "node1", MID, MEDIUM, 2),
            p("p2.1", "node2", MID, MEDIUM, 6),
            p("p2.2", "node2", LOW, MEDIUM, 1),
            p("p3.1", "node3", LOW, MEDIUM, 3),
            p("p3.2", "node3", MID, MEDIUM, 5),
        ],
        {"node2"},
    ),
]


@pytest.mark.parametrize(
    ("priority", "req", "n", "existing", "want"), [c[1:] for c in PICK], ids=[c[0] for c in PICK]
)
def test_pick_one_node_for_preemption(
    priority: int, req: dict[str, str], n: int, existing: Any, want: set[str]
) -> None:
    node, _, _ = run(priority, req, existing, cluster(n))
    assert node in want


def test_victims_are_the_lower_priority_pods_on_the_chosen_node() -> None:
    node, victims, preempted = run(
        HIGH,
        VERY_LARGE,
        [
            p("p1.1", "node1", MID, MEDIUM),
            p("p1.2", "node1", MID, LARGE),
            p("p3.1", "node3", LOW, MEDIUM),
            p("p3.2", "node3", LOW, MEDIUM),
        ],
        cluster(3)[:1] + [knode("node3", NODE_CAP)],
    )
    assert (node, victims, preempted) == ("node3", ["p3.1", "p3.2"], True)


def test_preemption_to_resolve_pod_topology_spread_filter_failure() -> None:
    """kube (dry run): nodes node-a/zone1, node-b/zone1, node-x/zone2; the candidates are node-a
    (victim pod-a2) and node-b (victim pod-b1); pod-a1 (mid) survives, node-x's high pods too."""
    nodes = [
        knode(n, NODE_CAP, labels={"hostname": n, "zone": z}, hostname_label=False)
        for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"))
    ]
    foo = {"foo": ""}
    existing = [
        p("pod-a1", "node-a", MID, {}, labels=foo),
        p("pod-a2", "node-a", LOW, {}, labels=foo),
        p("pod-b1", "node-b", LOW, {}, labels=foo),
        p("pod-x1", "node-x", HIGH, {}, labels=foo),
        p("pod-x2", "node-x", HIGH, {}, labels=foo),
    ]
    selector = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        },
        {
            "maxSkew": 1,
            "topologyKey": "hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        },
    ]
    node, victims, preempted = run(
        HIGH,
        {},
        existing,
        nodes,
        plugins=(NodeResourcesFit, PodTopologySpread),
        pod_kw={"labels": foo, "topologySpreadConstraints": spread},
    )
    assert preempted
    assert (node, victims) in [("node-a", ["pod-a2"]), ("node-b", ["pod-b1"])]


def test_preemption_with_violation_of_same_pdb() -> None:
    """kube (dry run): both pods of one PDB (1 disruption allowed) must go: one violation, still a candidate."""
    existing = [
        p("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
        p("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
    ]
    pdb = {
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "foo"}}},
        "status": {"disruptionsAllowed": 1},
    }
    node, victims, preempted = run(HIGH, VERY_LARGE, existing, cluster(1), pdbs=[pdb])
    assert (node, victims, preempted) == ("node1", ["p1.1", "p1.2"], True)


def test_get_unschedulable_when_every_node_holds_only_higher_priority_pods() -> None:
    """kube: "get Unschedulable in the preemption phase when the filter plugins filtering the nodes"
    uses a fake filter; the same end (no candidate) comes from pods the preemptor may not evict."""
    existing = [p("p1", "node1", HIGH, LARGE), p("p2", "node2", HIGH, LARGE)]
    node, victims, preempted = run(MID, LARGE, existing, cluster(2))
    assert (node, victims, preempted) == ("", [], True)


# ---------------------------------------------------------------- TestPostFilter (statuses given, as kube does)

ONE_POD = {"pods": "1"}
NODE_RES = {"pods": "32", "cpu": "200m", "memory": "400"}  # kube's MakeNode().Capacity() adds 32 pods


def post_filter(
    pod: Any,
    existing: list[Any],
    nodes: list[Any],
    statuses: dict[str, Any],
    pdbs: list[dict[str, Any]] | None = None,
) -> tuple[str | None, Any]:
    """PostFilter with kube's filteredNodesStatuses: nodes not listed are UnschedulableAndUnresolvable."""
    import numpy as np
    from kube_cases import snapshot

    from netsched.framework import Diagnosis
    from netsched.framework.cycle_state import CycleState
    from netsched.framework.status import Code
    from netsched.testing.framework import plugin_of

    snap = snapshot(nodes, existing)
    fwk = build_framework(
        [NodeResourcesFit, DefaultPreemption], snapshot=snap, api=MemoryAPI(), pdbs=pdbs or ()
    )
    state = CycleState()
    fwk.run_pre_filter(state, pod, snap)
    codes = np.full(len(snap), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, dtype=np.int8)
    for name, code in statuses.items():
        codes[snap.index[name]] = code
    result, status = plugin_of(fwk, DefaultPreemption).post_filter(state, pod, Diagnosis(len(snap), codes))
    return (None if result is None else result.nominated_node_name), status


def unsched() -> Any:
    from netsched.framework.status import Code

    return Code.UNSCHEDULABLE


def unres() -> Any:
    from netsched.framework.status import Code

    return Code.UNSCHEDULABLE_AND_UNRESOLVABLE


POST_FILTER: list[
    tuple[
        str, dict[str, Any], list[dict[str, Any]], list[tuple[str, dict[str, str]]], dict[str, str], str, str
    ]
] = [
    (
        "pod with higher priority can be made schedulable",
        {"priority": HIGH},
        [{"name": "p1", "node": "node1"}],
        [("node1", ONE_POD)],
        {"node1": "U"},
        "node1",
        "",
    ),
    (
        "pod with tied priority is still unschedulable",
        {},
        [{"name": "p1", "node": "node1"}],
        [("node1", ONE_POD)],
        {"node1": "U"},
        "",
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    (
        "preemption should respect filteredNodesStatuses",
        {"priority": HIGH},
        [{"name": "p1", "node": "node1"}],
        [("node1", ONE_POD)],
        {"node1": "R"},
        "",
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    (
        "preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
        {"priority": HIGH},
        [{"name": "p1", "node": "node1"}],
        [("node1", ONE_POD)],
        {},
        "",
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    (
        "pod can be made schedulable on one node",
        {"priority": MID},
        [{"name": "p1", "node": "node1", "priority": HIGH}, {"name": "p2", "node": "node2", "priority": LOW}],
        [("node1", ONE_POD), ("node2", ONE_POD)],
        {"node1": "U", "node2": "U"},
        "node2",
        "",
    ),
    (
        "no candidate nodes found, no enough resource after removing low priority pods",
        {"priority": HIGH, "req": LARGE},
        [{"name": "p1", "node": "node1"}, {"name": "p2", "node": "node2"}],
        [("node1", NODE_RES), ("node2", NODE_RES)],
        {"node1": "U", "node2": "U"},
        "",
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
    ),
    (
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
        {"priority": HIGH, "req": LARGE},
        [
            {"name": "p1", "node": "node1", "priority": HIGH},
            {"name": "p2", "node": "node2"},
            {"name": "p3", "node": "node3", "priority": HIGH},
        ],
        [("node1", ONE_POD), ("node2", NODE_RES), ("node3", ONE_POD)],
        {"node1": "U", "node2": "U", "node3": "U"},
        "",
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
    ),
    (
        "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU resource",
        {"priority": HIGH, "req": LARGE},
        [{"name": "p1", "node": "node1"}, {"name": "p2", "node": "node2"}],
        [("node1", NODE_RES), ("node2", NODE_RES), ("node3", NODE_RES), ("node4", NODE_RES)],
        {"node1": "U", "node2": "U", "node4": "R"},
        "",
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "nodes", "statuses", "want_node", "want_msg"),
    [c[1:] for c in POST_FILTER],
    ids=[c[0] for c in POST_FILTER],
)
def test_post_filter(
    pod: Any, existing: Any, nodes: Any, statuses: Any, want_node: str, want_msg: str
) -> None:
    infos = [knode(n, cap) for n, cap in nodes]
    pods = [kpod(name=e["name"], node=e["node"], priority=e.get("priority", 0)) for e in existing]
    incoming = kpod(*([pod["req"]] if "req" in pod else []), name="p", priority=pod.get("priority", 0))
    code = {"U": unsched(), "R": unres()}
    node, status = post_filter(incoming, pods, infos, {n: code[c] for n, c in statuses.items()})
    assert node == want_node
    if want_msg:
        # kube's plugin prefixes "preemption: "; netsched's runtime adds it when it composes the
        # FitError message (the text users see is the same), so the plugin's reason is the rest.
        assert not status.ok and " ".join(status.reasons) == want_msg.removeprefix("preemption: ")
    else:
        assert status.ok


def test_post_filter_min_highest_priority_node_with_pdbs() -> None:
    """kube: "pod can be made schedulable on minHighestPriority node" (PDB violations tie, then
    the node whose most important victim has the lowest priority wins)."""
    violating = {"pdb": "violating"}
    fine = {"pdb": "fine"}
    pods = [
        kpod(name="p1", node="node1", priority=HIGH, labels=fine),
        kpod(name="p2", node="node1", priority=LOW, labels=violating),
        kpod(name="p3", node="node2", priority=MID, labels=violating),
    ]
    pdbs = [
        {
            "metadata": {"name": "violating-pdb", "namespace": "default"},
            "spec": {"selector": {"matchLabels": violating}, "minAvailable": "100%"},
            "status": {"disruptionsAllowed": 0},
        },
        {
            "metadata": {"name": "non-violating-pdb", "namespace": "default"},
            "spec": {"selector": {"matchLabels": fine}, "minAvailable": 0},
            "status": {"disruptionsAllowed": 2147483647},
        },
    ]
    node, status = post_filter(
        kpod(name="p", priority=VERY_HIGH),
        pods,
        [knode("node1", ONE_POD), knode("node2", ONE_POD)],
        {"node1": unsched(), "node2": unsched()},
        pdbs,
    )
    assert (node, status.ok) == ("node2", True)


# kube's cases this port does not run, and why (listed, not skipped tests).
# netsched has no scheduler extenders and no RemovePod-failing test PreFilter plugin
NOT_APPLICABLE = (
    "preemption result filtered out by extenders",
    "only one node but failed with TestPlugin",
    "one failed with TestPlugin and the other pass",
)


# ---------------------------------------------------------------- TestPodEligibleToPreemptOthers

PREEMPTION_CONDITION = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]


def eligible(pod: Any, existing: list[Any], nodes: list[str], nominated_code: Any = None) -> bool:
    import numpy as np
    from kube_cases import snapshot

    from netsched.framework import Diagnosis
    from netsched.framework.status import Code
    from netsched.testing.framework import build_plugin

    snap = snapshot([knode(n) for n in nodes], existing)
    plugin = build_plugin(DefaultPreemption, snapshot=snap)
    codes = np.full(
        len(snap), Code.UNSCHEDULABLE if nominated_code is None else nominated_code, dtype=np.int8
    )
    ok, _ = plugin.eligible(pod, snap, Diagnosis(len(snap), codes))
    return ok


def victim(terminating: bool = True, preempted: bool = False) -> Any:
    pod = kpod(name="p1", node="node1", priority=LOW, terminating=terminating)
    if preempted:
        pod.raw.setdefault("status", {})["conditions"] = PREEMPTION_CONDITION
    return pod


def test_pod_with_nominated_node_whose_status_is_unresolvable_is_eligible() -> None:
    pod = kpod(name="p", priority=HIGH)
    pod.nominated_node_name = "node1"
    assert eligible(pod, [victim()], ["node1"], unres())


def test_pod_without_nominated_node_is_eligible() -> None:
    assert eligible(kpod(name="p", priority=HIGH), [], [])


def test_pod_with_preempt_never_policy_is_not_eligible() -> None:
    assert not eligible(kpod(name="p", priority=HIGH, preemptionPolicy="Never"), [], [])


def test_preemption_victim_terminating_with_the_disruption_target_condition() -> None:
    pod = kpod(name="p", priority=HIGH)
    pod.nominated_node_name = "node1"
    assert not eligible(pod, [victim(preempted=True)], ["node1"])


def test_non_victim_pods_terminating() -> None:
    """kube's "non-victim Pods terminating" (named "..., feature PodDisruptionConditions is enabled"
    before the gate went GA in v1.31): a terminating lower-priority pod WITHOUT the DisruptionTarget
    condition is not a preemption in progress, so the pod is eligible to preempt again."""
    pod = kpod(name="p", priority=HIGH)
    pod.nominated_node_name = "node1"
    assert eligible(pod, [victim()], ["node1"])


# ---------------------------------------------------------------- TestPreempt (no extenders)


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        ("PreemptLowerPriority", ("node1", ["p1.1", "p1.2"], True)),
        (None, ("node1", ["p1.1", "p1.2"], True)),  # "PreemptionPolicy is nil"
        ("Never", ("", [], True)),  # "no preempting in pod"
    ],
    ids=["basic preemption logic", "PreemptionPolicy is nil", "no preempting in pod"],
)
def test_preempt(policy: str | None, want: tuple[str, list[str], bool]) -> None:
    existing = [
        p("p1.1", "node1", LOW, SMALL),
        p("p1.2", "node1", LOW, SMALL),
        p("p2.1", "node2", HIGH, LARGE),
        p("p3.1", "node3", MID, MEDIUM),
    ]
    nodes = [knode(f"node{i}", {**VERY_LARGE, "pods": "32"}) for i in (1, 2, 3)]
    assert (
        run(HIGH, VERY_LARGE, existing, nodes, pod_kw={"preemptionPolicy": policy} if policy else None)
        == want
    )


def test_preempt_for_topology_spread_constraints() -> None:
    nodes = [
        knode(n, {**VERY_LARGE, "pods": "32"}, labels={"hostname": n, "zone": z}, hostname_label=False)
        for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"))
    ]
    foo = {"foo": ""}
    existing = [
        p("p-a1", "node-a", HIGH, {}, labels=foo),
        p("p-a2", "node-a", HIGH, {}, labels=foo),
        p("p-b1", "node-b", LOW, {}, labels=foo),
        p("p-x1", "node-x", HIGH, {}, labels=foo),
        p("p-x2", "node-x", HIGH, {}, labels=foo),
    ]
    selector = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
    spread = [
        {"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
        for k in ("zone", "hostname")
    ]
    got = run(
        HIGH,
        {},
        existing,
        nodes,
        plugins=(NodeResourcesFit, PodTopologySpread),
        pod_kw={"labels": foo, "topologySpreadConstraints": spread},
    )
    assert got == ("node-b", ["p-b1"], True)
