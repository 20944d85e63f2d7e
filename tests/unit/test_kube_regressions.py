"""Regression tests for three places netsched disagreed with kube (issue 13).

1. A request set explicitly to 0 is scored as 0; kube's 100m cpu / 200Mi memory
   defaults fill only requests that are absent (NonMissingContainerRequests).
2. A required node-affinity term whose value is not a valid label value (or a
   non-integer Gt/Lt value) matches no node; other terms still can.
3. A node without status.allocatable has room for 0 pods, not 110.
"""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import UNRES, UNSCHED, run_filter, run_score

from netsched.framework.parse import parse_node
from netsched.framework.types import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from netsched.plugins.node_affinity import NodeAffinity
from netsched.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from netsched.testing.builders import make_node, make_pod
from netsched.testing.framework import schedule_pod

RTCR = {
    "scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        },
    }
}
MOST = {"scoringStrategy": {"type": "MostAllocated"}}

# ---------------------------------------------------------------- 1. explicit zero requests


def test_explicit_zero_requests_are_not_defaulted() -> None:
    zero = make_pod("z").req(cpu="0", memory="0").info()
    assert (zero.nonzero_cpu, zero.nonzero_memory) == (0, 0)
    absent = make_pod("a").info()
    assert (absent.nonzero_cpu, absent.nonzero_memory) == (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST)
    only_cpu = make_pod("c").req(cpu="0").info()  # memory absent: defaulted; cpu explicit: 0
    assert (only_cpu.nonzero_cpu, only_cpu.nonzero_memory) == (0, DEFAULT_MEMORY_REQUEST)
    # Per container: the explicit 0 of one container does not hide the default of another.
    two = make_pod("t").req(cpu="0", memory="0").container().info()
    assert (two.nonzero_cpu, two.nonzero_memory) == (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST)


@pytest.mark.parametrize(
    ("args", "zero_score", "defaulted_score"),
    [
        # 4 cpu / 8Gi node.  Defaults: cpu (4000-100)*100/4000 = 97, memory (8192-200)*100/8192 = 97.
        (None, 100, 97),
        # MostAllocated: 100*100/4000 = 2, 200Mi*100/8Gi = 2.
        (MOST, 0, 2),
        # RequestedToCapacityRatio with shape 0->0, 100->10: utilisation 2 scores 2.
        (RTCR, 0, 2),
    ],
    ids=["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"],
)
def test_fit_scores_explicit_zero_as_zero(args: Any, zero_score: int, defaulted_score: int) -> None:
    nodes = [make_node("n1").capacity(cpu="4", memory="8Gi")]
    zero = make_pod("z").req(cpu="0", memory="0")
    assert run_score(NodeResourcesFit, zero, nodes, args=args) == {"n1": zero_score}
    assert run_score(NodeResourcesFit, make_pod("a"), nodes, args=args) == {"n1": defaulted_score}


@pytest.mark.parametrize("args", [None, MOST, RTCR], ids=["Least", "Most", "RTCR"])
def test_fit_existing_pods_with_explicit_zero_count_zero(args: Any) -> None:
    # Ten pods with explicit zero requests leave the node as empty as no pods at all.
    nodes = [
        make_node("busy").capacity(cpu="4", memory="8Gi"),
        make_node("empty").capacity(cpu="4", memory="8Gi"),
    ]
    existing = [make_pod(f"e{i}").req(cpu="0", memory="0").node("busy") for i in range(10)]
    got = run_score(NodeResourcesFit, make_pod("p").req(cpu="1", memory="1Gi"), nodes, existing, args=args)
    assert got["busy"] == got["empty"]


def test_balanced_allocation_explicit_zero_cpu_is_zero() -> None:
    # cpu 0 / 4, memory 4Gi / 8Gi: fractions 0 and 0.5, std 0.25 -> 75 (a 100m default would give 76).
    nodes = [make_node("n1").capacity(cpu="4", memory="8Gi")]
    pod = make_pod("p").req(cpu="0", memory="4Gi")
    assert run_score(NodeResourcesBalancedAllocation, pod, nodes, normalize=False) == {"n1": 75}


def test_balanced_allocation_skips_explicit_zero_pods_as_best_effort() -> None:
    nodes = [make_node("n1").capacity(cpu="4", memory="8Gi")]
    pod = make_pod("p").req(cpu="0", memory="0")
    assert run_score(NodeResourcesBalancedAllocation, pod, nodes) == {"n1": 0}


# ---------------------------------------------------------------- 2. invalid label values


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


POD_REASON = (UNRES, ("node(s) didn't match Pod's node affinity/selector",))
NODES = [make_node("a").label("zone", "z1"), make_node("b").label("zone", "z2"), make_node("c")]


@pytest.mark.parametrize(
    ("terms", "fits"),
    [
        # "not valid!" is no label value: kube's labels.NewRequirement refuses it, the term matches nothing.
        ([{"matchExpressions": [_expr("zone", "NotIn", "not valid!")]}], set()),
        ([{"matchExpressions": [_expr("zone", "In", "z1", "-bad")]}], set()),
        ([{"matchExpressions": [_expr("zone", "In", "x" * 64)]}], set()),  # longer than 63
        # Gt/Lt need an integer; a word voids the term (the pod is not rejected as malformed).
        ([{"matchExpressions": [_expr("cores", "Gt", "four")]}], set()),
        # Only the invalid term is void: the other term of the OR still matches.
        (
            [
                {"matchExpressions": [_expr("zone", "NotIn", "not valid!")]},
                {"matchExpressions": [_expr("zone", "In", "z2")]},
            ],
            {"b"},
        ),
        # A valid NotIn still matches nodes without the label, and an empty value is valid.
        ([{"matchExpressions": [_expr("zone", "NotIn", "z1", "")]}], {"b", "c"}),
        # kube's field selector takes exactly one value per metadata.name requirement.
        ([{"matchFields": [_expr("metadata.name", "NotIn", "a", "b")]}], set()),
    ],
)
def test_invalid_values_void_the_term(terms: list[dict[str, Any]], fits: set[str]) -> None:
    got = run_filter(NodeAffinity, make_pod("p").affinity(_required(*terms)), NODES)
    assert {n for n, v in got.items() if v is None} == fits
    assert all(v == POD_REASON for v in got.values() if v is not None)


def test_invalid_preferred_term_scores_nothing() -> None:
    pref = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": {"matchExpressions": [_expr("zone", "NotIn", "not valid!")]}},
                {"weight": 2, "preference": {"matchExpressions": [_expr("zone", "In", "z1")]}},
            ]
        }
    }
    assert run_score(NodeAffinity, make_pod("p").affinity(pref), NODES, normalize=False) == {
        "a": 2,
        "b": 0,
        "c": 0,
    }


# ---------------------------------------------------------------- 3. node without allocatable


def _node_without_status(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": {}}


def test_node_without_allocatable_has_room_for_no_pods() -> None:
    assert parse_node(_node_without_status("new")).allocatable["pods"] == 0
    new = parse_node(_node_without_status("new"))
    got = run_filter(NodeResourcesFit, make_pod("besteffort"), [new])
    assert got == {"new": (UNSCHED, ("Too many pods",))}  # kube: pods never Unresolvable


def test_capacity_stands_in_for_missing_allocatable() -> None:
    # API defaulting copies capacity into a missing allocatable; parsing does the same.
    raw = _node_without_status("n")
    raw["status"]["capacity"] = {"cpu": "2", "memory": "1Gi", "pods": "3"}
    assert parse_node(raw).allocatable["pods"] == 3


def test_best_effort_pod_is_not_placed_on_a_node_without_status() -> None:
    new = parse_node(_node_without_status("new"))
    ready = make_node("ready").capacity(cpu="1", memory="1Gi")
    out = schedule_pod(make_pod("besteffort"), [new, ready], plugins=[NodeResourcesFit])
    assert out.node == "ready"


def test_pod_count_reason_is_resolvable_on_a_full_node() -> None:
    full = make_node("full").capacity(pods="1")
    got = run_filter(NodeResourcesFit, make_pod("p"), [full], [make_pod("e").node("full")])
    assert got == {"full": (UNSCHED, ("Too many pods",))}
