"""PodTopologySpread against kube's own cases.

Ported from kubernetes/kubernetes
pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go
(TestSingleConstraint, TestMultipleConstraints: PreFilter then Filter per
node, status codes as kube asserts them), scoring_test.go
(TestPodTopologySpreadScore, with kube's candidate / failed node split) and
test/integration/scheduler/filters (TestPodTopologySpreadFilter).  Not ported:
TestPreFilterState / TestPreScoreStateEmptyNodes (they compare kube's internal
state structs; the same inputs are covered through Filter and Score results)
and the system-defaulting cases built on Services (netsched watches no
Services: see plugins/pod_topology_spread/constraints.py).  Like kube's unit test, only this
plugin runs (NodeAffinity does not filter), so nodes outside the pod's node
affinity can still pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import UNRES, UNSCHED, knode, kpod, run_filter

from netsched.plugins.pod_topology_spread import PodTopologySpread

OK = None


def exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def spread(skew: int, key: str, selector: dict[str, Any], when: str = "DoNotSchedule") -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector}


def nodes4() -> list[tuple[str, dict[str, str]]]:
    return [
        (n, {"zone": z, "node": n})
        for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))
    ]


def foo_pods(*names_nodes: tuple[str, str], **kw: Any) -> list[dict[str, Any]]:
    return [{"name": n, "node": node, "labels": {"foo": ""}, **kw} for n, node in names_nodes]


SPREAD_2103 = foo_pods(
    ("p-a1", "node-a"),
    ("p-a2", "node-a"),
    ("p-b1", "node-b"),
    ("p-y1", "node-y"),
    ("p-y2", "node-y"),
    ("p-y3", "node-y"),
)

# (name, pod labels, constraints, extra pod spec, nodes, existing pods, want codes by node)
SINGLE: list[
    tuple[
        str,
        dict[str, str],
        list[dict[str, Any]],
        dict[str, Any],
        list[Any],
        list[dict[str, Any]],
        dict[str, Any],
    ]
] = [
    (
        "no existing pods",
        {"foo": ""},
        [spread(1, "zone", exists("foo"))],
        {},
        nodes4(),
        [],
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], OK),
    ),
    (
        "no existing pods, incoming pod doesn't match itself",
        {"foo": ""},
        [spread(1, "zone", exists("bar"))],
        {},
        nodes4(),
        [],
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], OK),
    ),
    (
        "existing pods in a different namespace do not count",
        {"foo": ""},
        [spread(1, "zone", exists("foo"))],
        {},
        nodes4(),
        [
            {"name": "p-a1", "namespace": "ns1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-b1", "namespace": "ns2", "node": "node-a", "labels": {"foo": ""}},
            *foo_pods(("p-x1", "node-x"), ("p-y1", "node-y")),
        ],
        {"node-a": OK, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        {"foo": ""},
        [spread(1, "zone", exists("foo"))],
        {},
        nodes4(),
        SPREAD_2103,
        dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], OK),
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        {"foo": ""},
        [spread(1, "zone", exists("foo"))],
        {},
        [
            ("node-a", {"zone": "zone1", "node": "node-a"}),
            ("node-b", {"zon": "zone1", "node": "node-b"}),
            *nodes4()[2:],
        ],
        foo_pods(("p-a1", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y")),
        {"node-a": OK, "node-b": UNRES, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        {"foo": ""},
        [spread(1, "rack", exists("foo"))],
        {},
        [nodes4()[0], nodes4()[2]],
        [],
        {"node-a": UNRES, "node-x": UNRES},
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        {"foo": ""},
        [spread(1, "node", exists("foo"))],
        {},
        nodes4(),
        SPREAD_2103,
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        {"foo": ""},
        [spread(2, "node", exists("foo"))],
        {},
        nodes4(),
        SPREAD_2103,
        {"node-a": UNSCHED, "node-b": OK, "node-x": OK, "node-y": UNSCHED},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        {"bar": ""},
        [spread(1, "node", exists("foo"))],
        {},
        nodes4(),
        SPREAD_2103,
        {"node-a": UNSCHED, "node-b": OK, "node-x": OK, "node-y": UNSCHED},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        {"foo": ""},
        [spread(1, "node", exists("foo"))],
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "node", "operator": "In", "values": ["node-a", "node-y"]}
                                ]
                            }
                        ]
                    }
                }
            }
        },
        nodes4(),
        SPREAD_2103,
        {
            "node-a": OK,
            "node-b": OK,
            "node-x": OK,
            "node-y": UNSCHED,
        },  # b and x: kube's "in real case, it's false"
    ),
    (
        "terminating Pods should be excluded",
        {"foo": ""},
        [spread(1, "node", exists("foo"))],
        {},
        [("node-a", {"node": "node-a"}), ("node-b", {"node": "node-b"})],
        [
            {"name": "p-a", "node": "node-a", "labels": {"foo": ""}, "terminating": True},
            *foo_pods(("p-b", "node-b")),
        ],
        {"node-a": OK, "node-b": UNSCHED},
    ),
    (
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        {"foo": ""},
        [spread(1, "zone", exists("foo")), spread(1, "node", exists("foo"))],
        {},
        nodes4(),
        SPREAD_2103,
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
    ),
    (
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        {"foo": ""},
        [spread(1, "zone", exists("foo")), spread(1, "node", exists("foo"))],
        {},
        nodes4(),
        [*SPREAD_2103, *foo_pods(("p-y4", "node-y"))],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        {"foo": "", "bar": ""},
        [spread(1, "zone", exists("foo")), spread(1, "node", exists("bar"))],
        {},
        nodes4(),
        [
            {"name": "p-a1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-y1", "node": "node-y", "labels": {"bar": ""}},
        ],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        {"foo": "", "bar": ""},
        [spread(1, "zone", exists("foo")), spread(1, "node", exists("bar"))],
        {},
        nodes4(),
        [
            {"name": "p-a1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-x1", "node": "node-x", "labels": {"bar": ""}},
            {"name": "p-y1", "node": "node-y", "labels": {"bar": ""}},
        ],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        {"foo": "", "bar": ""},
        [spread(1, "zone", exists("foo")), spread(1, "node", exists("bar"))],
        {},
        nodes4(),
        [
            {"name": "p-a1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-a2", "node": "node-a", "labels": {"foo": "", "bar": ""}},
            {"name": "p-y1", "node": "node-y", "labels": {"foo": ""}},
            {"name": "p-y2", "node": "node-y", "labels": {"foo": "", "bar": ""}},
            {"name": "p-y3", "node": "node-y", "labels": {"foo": ""}},
        ],
        {"node-a": UNSCHED, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        {"bar": ""},
        [spread(1, "zone", exists("foo")), spread(1, "node", exists("bar"))],
        {},
        nodes4(),
        [
            {"name": "p-a1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-x1", "node": "node-x", "labels": {"bar": ""}},
            {"name": "p-y1", "node": "node-y", "labels": {"bar": ""}},
        ],
        {"node-a": OK, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        {"foo": ""},
        [spread(1, "zone", exists("foo")), spread(1, "node", exists("foo"))],
        {},
        [*nodes4()[:2], ("node-x", {"zone": "zone2"}), nodes4()[3]],
        foo_pods(("p-a1", "node-a"), ("p-y3", "node-y")),
        {"node-a": UNSCHED, "node-b": OK, "node-x": UNRES, "node-y": UNSCHED},
    ),
]


@pytest.mark.parametrize(
    ("labels", "constraints", "spec", "nodes", "existing", "want"),
    [c[1:] for c in SINGLE],
    ids=[c[0] for c in SINGLE],
)
def test_pod_topology_spread_filter(
    labels: Any, constraints: Any, spec: Any, nodes: Any, existing: Any, want: dict[str, Any]
) -> None:
    infos = [knode(n, labels=ls) for n, ls in nodes]
    pods = [kpod(**p) for p in existing]
    pod = kpod(name="p", labels=labels, topologySpreadConstraints=constraints, **spec)
    got = run_filter(PodTopologySpread, pod, infos, pods)
    assert {n: None if v is None else v[0] for n, v in got.items()} == want


# ---------------------------------------------------------------- scoring (scoring_test.go, TestPodTopologySpreadScore)
# Expected scores are those of kube's newest scoring_test.go (topology weight
# log(domains + 2), maxSkew - 1 added, then normalised); older versions of that
# file carry different numbers for the same cases.

HOST = "kubernetes.io/hostname"


def score_candidates(pod: Any, nodes: list[Any], failed: list[Any], existing: list[Any]) -> dict[str, int]:
    """kube's setup: the snapshot holds nodes + failedNodes; only `nodes` are scored."""
    import numpy as np
    from kube_cases import snapshot

    from netsched.framework.cycle_state import CycleState
    from netsched.testing.agreement import score_outcomes
    from netsched.testing.framework import build_plugin

    snap = snapshot([*nodes, *failed], existing)
    plugin = build_plugin(PodTopologySpread, snapshot=snap)
    idx = np.array([snap.index[n.name] for n in nodes], dtype=np.int64)
    state = CycleState()
    st = plugin.pre_score(state, pod, snap, idx)
    assert st.ok, st
    raw = np.array(score_outcomes(plugin, pod, snap, idx, state=state), dtype=np.int64)
    plugin.normalize_scores(state, pod, raw)
    return {n.name: int(s) for n, s in zip(nodes, raw.tolist(), strict=True)}


def hosts(*names: str) -> list[tuple[str, dict[str, str]]]:
    return [(n, {HOST: n}) for n in names]


def zoned(*pairs: tuple[str, str]) -> list[tuple[str, dict[str, str]]]:
    return [(n, {"zone": z, HOST: n}) for n, z in pairs]


def counts(**per_node: int) -> list[dict[str, Any]]:
    out = []
    for node, k in per_node.items():
        short = node.replace("_", "-").split("-")[1]
        out += [
            {"name": f"p-{short}{i + 1}", "node": node.replace("_", "-"), "labels": {"foo": ""}}
            for i in range(k)
        ]
    return out


SOFT = "ScheduleAnyway"
SCORE_CASES: list[
    tuple[
        str, dict[str, str], list[dict[str, Any]], list[Any], list[Any], list[dict[str, Any]], dict[str, int]
    ]
] = [
    (
        "one constraint on node, no existing pods",
        {"foo": ""},
        [spread(1, HOST, exists("foo"), SOFT)],
        hosts("node-a", "node-b"),
        [],
        [],
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, only one node is candidate",
        {"foo": ""},
        [spread(1, HOST, exists("foo"), SOFT)],
        hosts("node-a"),
        hosts("node-b"),
        counts(node_a=2, node_b=1),
        {"node-a": 100},
    ),
    (
        "one constraint on node, all nodes have the same number of matching pods",
        {"foo": ""},
        [spread(1, HOST, exists("foo"), SOFT)],
        hosts("node-a", "node-b"),
        [],
        counts(node_a=1, node_b=1),
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        {"foo": ""},
        [spread(1, HOST, exists("foo"), SOFT)],
        hosts("node-a", "node-b", "node-c", "node-d"),
        [],
        counts(node_a=2, node_b=1, node_d=3),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        {"foo": ""},
        [spread(2, HOST, exists("foo"), SOFT)],
        hosts("node-a", "node-b", "node-c", "node-d"),
        [],
        counts(node_a=2, node_b=1, node_d=3),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        {"foo": ""},
        [spread(3, HOST, exists("foo"), SOFT)],
        hosts("node-a", "node-b", "node-c", "node-d"),
        [],
        counts(node_a=4, node_b=3, node_c=2, node_d=1),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        {"foo": ""},
        [spread(1, HOST, exists("foo"), SOFT)],
        hosts("node-a", "node-b", "node-x"),
        hosts("node-y"),
        counts(node_a=4, node_b=2, node_x=1, node_y=3),
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        {"foo": ""},
        [spread(1, HOST, exists("foo"), SOFT)],
        [*hosts("node-a"), ("node-b", {"n": "node-b"}), *hosts("node-x")],
        hosts("node-y"),
        counts(node_a=4, node_b=2, node_x=1, node_y=3),
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        {"foo": ""},
        [spread(1, "zone", exists("foo"), SOFT)],
        zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")),
        zoned(("node-y", "zone2")),
        counts(node_a=4, node_b=2, node_x=1, node_y=3),
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    (
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        {"foo": ""},
        [spread(1, "zone", exists("foo"), SOFT), spread(1, HOST, exists("foo"), SOFT)],
        zoned(("node-a", "zone1"), ("node-x", "zone2")),
        zoned(("node-b", "zone1"), ("node-y", "zone2")),
        counts(node_a=2, node_b=1, node_x=2, node_y=4),
        {"node-a": 100, "node-x": 63},
    ),
    (
        "two Constraints on zone and node, with different labelSelectors",
        {"foo": "", "bar": ""},
        [spread(1, "zone", exists("foo"), SOFT), spread(1, HOST, exists("bar"), SOFT)],
        zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")),
        [],
        [
            {"name": "p-a1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-b1", "node": "node-b", "labels": {"foo": "", "bar": ""}},
            {"name": "p-y1", "node": "node-y", "labels": {"foo": ""}},
            {"name": "p-y2", "node": "node-y", "labels": {"bar": ""}},
        ],
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    (
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        {"foo": "", "bar": ""},
        [spread(1, "zone", exists("foo"), SOFT), spread(1, HOST, exists("bar"), SOFT)],
        zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")),
        [],
        [
            {"name": "p-b1", "node": "node-b", "labels": {"bar": ""}},
            {"name": "p-x1", "node": "node-x", "labels": {"foo": ""}},
            {"name": "p-y1", "node": "node-y", "labels": {"foo": "", "bar": ""}},
        ],
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    (
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        {"foo": "", "bar": ""},
        [spread(1, "zone", exists("foo"), SOFT), spread(1, HOST, exists("bar"), SOFT)],
        zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")),
        zoned(("node-y", "zone2")),
        [
            {"name": "p-a1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-b1", "node": "node-b", "labels": {"foo": "", "bar": ""}},
            {"name": "p-y1", "node": "node-y", "labels": {"foo": ""}},
            {"name": "p-y2", "node": "node-y", "labels": {"bar": ""}},
        ],
        {"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    (
        "existing pods in a different namespace do not count",
        {"foo": ""},
        [spread(1, HOST, exists("foo"), SOFT)],
        hosts("node-a", "node-b"),
        [],
        [
            {"name": "p-a1", "namespace": "ns1", "node": "node-a", "labels": {"foo": ""}},
            {"name": "p-a2", "node": "node-a", "labels": {"foo": ""}},
            *counts(node_b=2),
        ],
        {"node-a": 100, "node-b": 33},
    ),
]


@pytest.mark.parametrize(
    ("labels", "constraints", "nodes", "failed", "existing", "want"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_pod_topology_spread_score(
    labels: Any, constraints: Any, nodes: Any, failed: Any, existing: Any, want: dict[str, int]
) -> None:
    pod = kpod(name="p", labels=labels, topologySpreadConstraints=constraints)
    got = score_candidates(
        pod,
        # kube's nodes carry only the labels the case gives (no implicit hostname label)
        [knode(n, labels=ls, hostname_label=False) for n, ls in nodes],
        [knode(n, labels=ls, hostname_label=False) for n, ls in failed],
        [kpod(**p) for p in existing],
    )
    assert got == want


# ---------------------------------------------------------------- kube's filter integration table
# test/integration/scheduler/filters (TestPodTopologySpreadFilter): the feasible nodes once
# NodeAffinity, TaintToleration and PodTopologySpread have all filtered (here: the nodes every
# one of those plugins passes).  minDomains, nodeAffinityPolicy and nodeTaintsPolicy cases.


def feasible(
    pod: Any, nodes: list[tuple[str, dict[str, str], list[dict[str, str]]]], existing: list[tuple[str, str]]
) -> set[str]:
    from netsched.plugins.node_affinity import NodeAffinity
    from netsched.plugins.taint_toleration import TaintToleration

    def infos() -> list[Any]:
        return [
            knode(n, labels=ls, hostname_label=False, **({"taints": ts} if ts else {})) for n, ls, ts in nodes
        ]

    def pods() -> list[Any]:
        return [kpod(name=name, node=node, labels={"foo": ""}) for name, node in existing]

    ok = {n for n, _, _ in nodes}
    for plugin in (NodeAffinity, TaintToleration, PodTopologySpread):
        got = run_filter(plugin, pod, infos(), pods())
        ok &= {n for n, v in got.items() if v is None}
    return ok


def default_nodes() -> list[tuple[str, dict[str, str], list[dict[str, str]]]]:
    return [(f"node-{i}", {"node": f"node-{i}", "zone": f"zone-{i // 2}"}, []) for i in range(4)]


def policy_nodes(taint_node3: bool = False) -> list[tuple[str, dict[str, str], list[dict[str, str]]]]:
    taints = [{"key": "foo", "value": "", "effect": "NoSchedule"}] if taint_node3 else []
    return [
        ("node-1", {"node": "node-1", "zone": "zone-1", "foo": ""}, []),
        ("node-2", {"node": "node-2", "zone": "zone-1", "foo": ""}, []),
        ("node-3", {"node": "node-3", "zone": "zone-2"}, taints),
        ("node-4", {"node": "node-4", "zone": "zone-2", "foo": ""}, []),
    ]


NOT_NODE0 = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-0"]}]}
            ]
        }
    }
}


def with_min(c: dict[str, Any], n: int) -> dict[str, Any]:
    return {**c, "minDomains": n}


INTEGRATION: list[tuple[str, dict[str, Any], Any, list[tuple[str, str]], set[str]]] = [
    (
        "place pod on a 1/1/0/1 cluster with MaxSkew=1, node-2 is the only fit",
        {"topologySpreadConstraints": [spread(1, "node", exists("foo"))]},
        default_nodes(),
        [("p0", "node-0"), ("p1", "node-1"), ("p3", "node-3")],
        {"node-2"},
    ),
    (
        "place pod on a 2/0/0/1 cluster with MaxSkew=2, node-{1,2,3} are good fits",
        {"topologySpreadConstraints": [spread(2, "node", exists("foo"))]},
        default_nodes(),
        [("p0a", "node-0"), ("p0b", "node-0"), ("p3", "node-3")],
        {"node-1", "node-2", "node-3"},
    ),
    (
        "pod is required to be placed on zone0, so only node-1 fits",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone-0"]}]}
                        ]
                    }
                }
            },
            "topologySpreadConstraints": [spread(1, "node", exists("foo"))],
        },
        default_nodes(),
        [("p0", "node-0"), ("p3", "node-3")],
        {"node-1"},
    ),
    (
        "two constraints: pod can only be placed to zone-1/node-2",
        {"topologySpreadConstraints": [spread(1, "zone", exists("foo")), spread(1, "node", exists("foo"))]},
        default_nodes(),
        [("p0", "node-0"), ("p1", "node-1"), ("p3a", "node-3"), ("p3b", "node-3")],
        {"node-2"},
    ),
    (
        "pod cannot be placed onto any node",
        {
            "affinity": NOT_NODE0,
            "topologySpreadConstraints": [spread(1, "zone", exists("foo")), spread(1, "node", exists("foo"))],
        },
        default_nodes(),
        [("p1a", "node-1"), ("p1b", "node-1"), ("p2a", "node-2"), ("p2b", "node-2"), ("p3", "node-3")],
        set(),
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
        {"affinity": NOT_NODE0, "topologySpreadConstraints": [with_min(spread(2, "node", exists("foo")), 4)]},
        default_nodes(),
        [("p1a", "node-1"), ("p1b", "node-1"), ("p2a", "node-2"), ("p2b", "node-2"), ("p3", "node-3")],
        {"node-3"},
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
        {"affinity": NOT_NODE0, "topologySpreadConstraints": [with_min(spread(2, "node", exists("foo")), 2)]},
        default_nodes(),
        [("p1a", "node-1"), ("p1b", "node-1"), ("p2a", "node-2"), ("p2b", "node-2"), ("p3", "node-3")],
        {"node-1", "node-2", "node-3"},
    ),
    (
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
        {"topologySpreadConstraints": [with_min(spread(2, "zone", exists("foo")), 3)]},
        default_nodes(),
        [("p1a", "node-0"), ("p2a", "node-1"), ("p3a", "node-2")],
        {"node-2", "node-3"},
    ),
    (
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the all nodes fit",
        {"topologySpreadConstraints": [with_min(spread(2, "zone", exists("foo")), 1)]},
        default_nodes(),
        [("p1a", "node-1"), ("p2a", "node-2"), ("p3a", "node-3")],
        {"node-0", "node-1", "node-2", "node-3"},
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors, pods spread across zone as 2/1",
        {"nodeSelector": {"foo": ""}, "topologySpreadConstraints": [spread(1, "zone", exists("foo"))]},
        policy_nodes(),
        [("p1a", "node-1"), ("p2a", "node-2"), ("p3a", "node-3"), ("p4a", "node-4")],
        {"node-4"},
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity, pods spread across zone as 1/~2~",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}
                        ]
                    }
                }
            },
            "topologySpreadConstraints": [
                {**spread(1, "zone", exists("foo")), "nodeAffinityPolicy": "Ignore"}
            ],
        },
        policy_nodes(),
        [("p1a", "node-1"), ("p3a", "node-3"), ("p4a", "node-4")],
        {"node-1", "node-2"},
    ),
    (
        "NodeTaintsPolicy honored, pods spread across zone as 2/1",
        {"topologySpreadConstraints": [{**spread(1, "zone", exists("foo")), "nodeTaintsPolicy": "Honor"}]},
        policy_nodes(taint_node3=True),
        [("p1a", "node-1"), ("p2a", "node-2"), ("p3a", "node-3"), ("p4a", "node-4")],
        {"node-4"},
    ),
    (
        "NodeTaintsPolicy ignored, pods spread across zone as 2/2",
        {"topologySpreadConstraints": [spread(1, "zone", exists("foo"))]},
        policy_nodes(taint_node3=True),
        [("p1a", "node-1"), ("p2a", "node-2"), ("p3a", "node-3"), ("p4a", "node-4")],
        {"node-1", "node-2", "node-4"},
    ),
]


@pytest.mark.parametrize(
    ("spec", "nodes", "existing", "want"), [c[1:] for c in INTEGRATION], ids=[c[0] for c in INTEGRATION]
)
def test_filter_integration_cases(spec: Any, nodes: Any, existing: Any, want: set[str]) -> None:
    pod = kpod(name="p", labels={"foo": ""}, **spec)
    assert feasible(pod, nodes, existing) == want
