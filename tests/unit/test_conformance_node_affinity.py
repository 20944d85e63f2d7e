"""NodeAffinity against kube's own cases.

Ported from kubernetes/kubernetes
pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go
(TestNodeAffinity: PreFilter status and result, then Filter on one node;
TestNodeAffinityPriority: normalised scores).  Every case runs both our
per-node and batch forms.
"""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import UNRES, decode_args, knode, kpod, run_score, snapshot

from netsched.framework.cycle_state import CycleState
from netsched.plugins.node_affinity import NodeAffinity
from netsched.plugins.node_affinity.plugin import ERR_REASON_CONFLICT, ERR_REASON_ENFORCED, ERR_REASON_POD
from netsched.testing.agreement import filter_statuses
from netsched.testing.framework import build_plugin

POD = (UNRES, (ERR_REASON_POD,))
SKIP = "skip"


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)} if values else {"key": key, "operator": op}


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def added_required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"addedAffinity": required(*terms)["nodeAffinity"]}


# (name, pod spec, node labels, node name, args, want PreFilter: None ok / SKIP / (code, reasons),
#  want PreFilter result names (None = all), want Filter, run PreFilter)
CASES: list[tuple[str, dict[str, Any], dict[str, str], str, dict[str, Any] | None, Any, Any, Any, bool]] = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "", None, None, None, POD, True),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", None, None, None, None, True),
    (
        "node labels are superset",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are subset",
        {"nodeSelector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        POD,
        True,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        {"affinity": required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        {"affinity": required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})},
        {"kernel-version": "0206"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        {"affinity": required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})},
        {"mem-type": "DDR3"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        {"affinity": required({"matchExpressions": [expr("GPU", "Exists")]})},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        {"affinity": required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        POD,
        True,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
        {"affinity": required({"matchExpressions": []})},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        POD,
        True,
    ),
    ("Pod with no Affinity will schedule onto a node", {}, {"foo": "bar"}, "", None, SKIP, None, None, True),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        {"affinity": {"nodeAffinity": {}}},
        {"foo": "bar"},
        "",
        None,
        SKIP,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        {
            "affinity": required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}
            )
        },
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        {
            "affinity": required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}
            )
        },
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        POD,
        True,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
        {
            "affinity": required(
                {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
            )
        },
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector both are satisfied, will schedule onto the node",
        {"nodeSelector": {"foo": "bar"}, "affinity": required({"matchExpressions": [expr("foo", "Exists")]})},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied, won't schedule onto the node",
        {"nodeSelector": {"foo": "bar"}, "affinity": required({"matchExpressions": [expr("foo", "Exists")]})},
        {"foo": "barrrrrr"},
        "",
        None,
        None,
        None,
        POD,
        True,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        {"affinity": required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]})},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        POD,
        True,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        {"affinity": required({"matchFields": [name_in("node1")]})},
        {},
        "node1",
        None,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        {"affinity": required({"matchFields": [name_in("node1")]})},
        {},
        "node2",
        None,
        None,
        {"node1"},
        POD,
        True,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        {
            "affinity": required(
                {"matchFields": [name_in("node1"), name_in("node2")]},
                {"matchExpressions": [expr("foo", "In", "bar")]},
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        {
            "affinity": required(
                {"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        None,
        {"node1"},
        POD,
        True,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        {
            "affinity": required(
                {"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}
            )
        },
        {"foo": "bar"},
        "node1",
        None,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        {
            "affinity": required(
                {"matchFields": [name_in("node1")]},
                {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]},
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        None,
        None,
        POD,
        True,
    ),
    (
        "Pod with two terms of node.Name affinity",
        {"affinity": required({"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node2")]})},
        {},
        "node2",
        None,
        None,
        {"node1", "node2"},
        None,
        True,
    ),
    (
        "Pod with two conflicting mach field requirements",
        {"affinity": required({"matchFields": [name_in("node1"), name_in("node2")]})},
        {"foo": "bar"},
        "node2",
        None,
        (UNRES, (ERR_REASON_CONFLICT,)),
        None,
        POD,
        True,
    ),
    (
        "Matches added affinity and Pod's node affinity",
        {"affinity": required({"matchExpressions": [expr("zone", "In", "foo")]})},
        {"zone": "foo"},
        "node2",
        added_required({"matchFields": [name_in("node2")]}),
        None,
        None,
        None,
        True,
    ),
    (
        "Matches added affinity but not Pod's node affinity",
        {"affinity": required({"matchExpressions": [expr("zone", "In", "bar")]})},
        {"zone": "foo"},
        "node2",
        added_required({"matchFields": [name_in("node2")]}),
        None,
        None,
        POD,
        True,
    ),
    (
        "Doesn't match added affinity",
        {},
        {"zone": "foo"},
        "node2",
        added_required({"matchExpressions": [expr("zone", "In", "bar")]}),
        None,
        None,
        (UNRES, (ERR_REASON_ENFORCED,)),
        True,
    ),
    (
        "Matches node selector correctly even if PreFilter is not called",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
    (
        "Matches node affinity correctly even if PreFilter is not called",
        {
            "affinity": required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}
            )
        },
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("spec", "labels", "node_name", "args", "want_pre", "want_names", "want", "run_pre"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_node_affinity_filter(
    spec: Any,
    labels: Any,
    node_name: str,
    args: Any,
    want_pre: Any,
    want_names: Any,
    want: Any,
    run_pre: bool,
) -> None:
    node = knode(node_name or "unnamed", labels=labels)
    snap = snapshot([node])
    plugin = build_plugin(NodeAffinity, decode_args(NodeAffinity, args), snapshot=snap)
    pod = kpod(**spec)
    state = CycleState()
    if run_pre:
        result, st = plugin.pre_filter(state, pod, snap)
        got_pre = SKIP if st.is_skip else (None if st.ok else (st.code, tuple(st.reasons)))
        assert got_pre == want_pre
        assert (None if result is None else result.node_names) == want_names
    st = filter_statuses(plugin, pod, snap, state=state)[0]
    assert (None if st.ok else (st.code, tuple(st.reasons))) == want


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = [{"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}}]
AFFINITY2 = [
    {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}},
    {"weight": 4, "preference": {"matchExpressions": [expr("key", "In", "value")]}},
    {
        "weight": 5,
        "preference": {
            "matchExpressions": [
                expr("foo", "In", "bar"),
                expr("key", "In", "value"),
                expr("az", "In", "az1"),
            ]
        },
    },
]


def preferred(terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


PRIORITY = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        None,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        None,
        [0, 0, 0],
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
        AFFINITY1,
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        None,
        [0, 0, 0],
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        None,
        [100, 0, 0],
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different priorities",
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        None,
        [18, 100, 36],
    ),
    (
        "added affinity",
        None,
        [("node1", LABEL1), ("node2", LABEL2)],
        {"addedAffinity": preferred(AFFINITY1)["nodeAffinity"]},
        [100, 0],
    ),
    (
        "added affinity and pod has default affinity",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        {
            "addedAffinity": preferred(
                [{"weight": 3, "preference": {"matchExpressions": [expr("key", "In", "value")]}}]
            )["nodeAffinity"]
        },
        [40, 60, 100],
    ),
]


@pytest.mark.parametrize(
    ("terms", "nodes", "args", "want"), [c[1:] for c in PRIORITY], ids=[c[0] for c in PRIORITY]
)
def test_node_affinity_priority(terms: Any, nodes: Any, args: Any, want: list[int]) -> None:
    infos = [knode(n, labels=ls) for n, ls in nodes]
    pod = kpod(**({"affinity": preferred(terms)} if terms else {}))
    assert list(run_score(NodeAffinity, pod, infos, args=args).values()) == want


def test_priority_without_pre_score() -> None:
    """kube: "calculate the priorities correctly even if PreScore is not called"."""
    snap = snapshot(
        [knode("node1", labels=LABEL1), knode("node5", labels=LABEL5), knode("node2", labels=LABEL2)]
    )
    plugin = build_plugin(NodeAffinity, snapshot=snap)
    pod = kpod(affinity=preferred(AFFINITY2))
    import numpy as np

    raw = np.array([plugin.score(CycleState(), pod, n) for n in snap.nodes], dtype=np.int64)
    plugin.normalize_scores(CycleState(), pod, raw)
    assert raw.tolist() == [18, 100, 36]
