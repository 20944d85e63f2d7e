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

from kube_cases import kpod, knode
from netsched.framework.search import FitError
from netsched.testing.framework import build_framework, schedule_pod
from netsched.testing.handle import RecordingAPI
from plugins.default_preemption import DefaultPreemption
from plugins.node_resources_fit import NodeResourcesFit
from plugins.pod_topology_spread import PodTopologySpread

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
    api = RecordingAPI()
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
