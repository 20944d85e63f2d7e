"""NodeResourcesFit against kube's own cases.

Ported from kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources:
fit_test.go (TestEnoughRequests, TestNotEnoughRequests, TestStorageRequests),
least_allocated_test.go, most_allocated_test.go and
requested_to_capacity_ratio_test.go (TestRequestedToCapacityRatioScoringStrategy,
TestResourceBinPackingSingleExtended/MultipleExtended).  Same clusters, pods
and expected results; kube's test quantities are kept as written ("4000" cpu
is 4000 cores, "10000" memory is 10000 bytes).

Version note: kube <= 1.33 reports every Fit rejection as Unschedulable; since
v1.34 (kubernetes#131345, "return UnschedulableAndUnresolvable when node capacity
is insufficient") a request larger than the node's whole allocatable is
UnschedulableAndUnresolvable.  netsched follows the newer rule;
the cases where the two differ are marked NEW (see plugins/noderesources/README.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import UNRES, UNSCHED, knode, kpod, run_filter, run_score

from netsched.framework.fields import ErrorList, Fields
from netsched.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
NEW = UNRES  # kube >= 1.34: the request exceeds the node's allocatable (kube <= 1.33: Unschedulable)


def reason(r: str) -> str:
    return f"Insufficient {r}"


def res(cpu: int = 0, mem: int = 0, eph: int = 0, **scalars: int) -> dict[str, Any]:
    """kube's framework.Resource{MilliCPU, Memory, EphemeralStorage, ScalarResources} as requests."""
    out: dict[str, Any] = {"cpu": f"{cpu}m", "memory": str(mem), "ephemeral-storage": str(eph)}
    names = {"ext_a": EXT_A, "ext_b": EXT_B, "k8s_a": K8S_A, "k8s_b": K8S_B, "huge_a": HUGE_A}
    out.update({names[k]: str(v) for k, v in scalars.items()})
    return out


# makeAllocatableResources(10, 20, 32, 5, 20, 5): cpu 10m, memory 20, pods 32, aaa 5, storage 20, hugepages 5.
ENOUGH_NODE = {"cpu": "10m", "memory": "20", "pods": "32", EXT_A: "5", "ephemeral-storage": "20", HUGE_A: "5"}

# (name, pod containers, pod init containers, overhead, existing pod's usage, args, want)
ENOUGH: list[
    tuple[
        str,
        list[dict[str, Any]],
        list[dict[str, Any]],
        dict[str, str] | None,
        dict[str, Any],
        dict[str, Any],
        Any,
    ]
] = [
    ("no resources requested always fits", [], [], None, res(10, 20), {}, None),
    (
        "too many resources fails",
        [res(1, 1)],
        [],
        None,
        res(10, 20),
        {},
        (UNSCHED, (reason("cpu"), reason("memory"))),
    ),
    (
        "too many resources fails due to init container cpu",
        [res(1, 1)],
        [res(3, 1)],
        None,
        res(8, 19),
        {},
        (UNSCHED, (reason("cpu"),)),
    ),
    (
        "too many resources fails due to highest init container cpu",
        [res(1, 1)],
        [res(3, 1), res(2, 1)],
        None,
        res(8, 19),
        {},
        (UNSCHED, (reason("cpu"),)),
    ),
    (
        "too many resources fails due to init container memory",
        [res(1, 1)],
        [res(1, 3)],
        None,
        res(9, 19),
        {},
        (UNSCHED, (reason("memory"),)),
    ),
    (
        "too many resources fails due to highest init container memory",
        [res(1, 1)],
        [res(1, 3), res(1, 2)],
        None,
        res(9, 19),
        {},
        (UNSCHED, (reason("memory"),)),
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        [res(1, 1)],
        [res(1, 1)],
        None,
        res(9, 19),
        {},
        None,
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        [res(1, 1)],
        [res(1, 1), res(1, 1)],
        None,
        res(9, 19),
        {},
        None,
    ),
    ("both resources fit", [res(1, 1)], [], None, res(5, 5), {}, None),
    ("one resource memory fits", [res(2, 1)], [], None, res(9, 5), {}, (UNSCHED, (reason("cpu"),))),
    ("one resource cpu fits", [res(1, 2)], [], None, res(5, 19), {}, (UNSCHED, (reason("memory"),))),
    ("equal edge case", [res(5, 1)], [], None, res(5, 19), {}, None),
    ("equal edge case for init container", [res(4, 1)], [res(5, 1)], None, res(5, 19), {}, None),
    ("extended resource fits", [res(ext_a=1)], [], None, res(), {}, None),
    ("extended resource fits for init container", [res()], [res(ext_a=1)], None, res(), {}, None),
    (
        "extended resource capacity enforced",
        [res(1, 1, ext_a=10)],
        [],
        None,
        res(ext_a=0),
        {},
        (NEW, (reason(EXT_A),)),
    ),
    (
        "extended resource capacity enforced for init container",
        [res()],
        [res(1, 1, ext_a=10)],
        None,
        res(ext_a=0),
        {},
        (NEW, (reason(EXT_A),)),
    ),
    (
        "extended resource allocatable enforced",
        [res(1, 1, ext_a=1)],
        [],
        None,
        res(ext_a=5),
        {},
        (UNSCHED, (reason(EXT_A),)),
    ),
    (
        "extended resource allocatable enforced for init container",
        [res()],
        [res(1, 1, ext_a=1)],
        None,
        res(ext_a=5),
        {},
        (UNSCHED, (reason(EXT_A),)),
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        [res(1, 1, ext_a=3), res(1, 1, ext_a=3)],
        [],
        None,
        res(ext_a=2),
        {},
        (NEW, (reason(EXT_A),)),
    ),
    (
        "extended resource allocatable admits multiple init containers",
        [res()],
        [res(1, 1, ext_a=3), res(1, 1, ext_a=3)],
        None,
        res(ext_a=2),
        {},
        None,
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        [res()],
        [res(1, 1, ext_a=6), res(1, 1, ext_a=3)],
        None,
        res(ext_a=2),
        {},
        (NEW, (reason(EXT_A),)),
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        [res(1, 1, ext_b=1)],
        [],
        None,
        res(),
        {},
        (NEW, (reason(EXT_B),)),
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        [res()],
        [res(1, 1, ext_b=1)],
        None,
        res(),
        {},
        (NEW, (reason(EXT_B),)),
    ),
    (
        "kubernetes.io resource capacity enforced",
        [res(1, 1, k8s_a=10)],
        [],
        None,
        res(),
        {},
        (NEW, (reason(K8S_A),)),
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        [res()],
        [res(1, 1, k8s_b=10)],
        None,
        res(),
        {},
        (NEW, (reason(K8S_B),)),
    ),
    (
        "hugepages resource capacity enforced",
        [res(1, 1, huge_a=10)],
        [],
        None,
        res(huge_a=0),
        {},
        (NEW, (reason(HUGE_A),)),
    ),
    (
        "hugepages resource capacity enforced for init container",
        [res()],
        [res(1, 1, huge_a=10)],
        None,
        res(huge_a=0),
        {},
        (NEW, (reason(HUGE_A),)),
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        [res(1, 1, huge_a=3), res(1, 1, huge_a=3)],
        [],
        None,
        res(huge_a=2),
        {},
        (NEW, (reason(HUGE_A),)),
    ),
    (
        "skip checking ignored extended resource",
        [res(1, 1, ext_b=1)],
        [],
        None,
        res(),
        {"ignoredResources": [EXT_B]},
        None,
    ),
    ("resources + pod overhead fits", [res(1, 1)], [], {"cpu": "3m", "memory": "13"}, res(5, 5), {}, None),
    (
        "requests + overhead does not fit for memory",
        [res(1, 1)],
        [],
        {"cpu": "1m", "memory": "15"},
        res(5, 5),
        {},
        (UNSCHED, (reason("memory"),)),
    ),
    (
        "skip checking ignored extended resource via resource groups",
        [res(1, 1, ext_b=1, k8s_a=1)],
        [],
        None,
        res(),
        {"ignoredResourceGroups": ["example.com"]},
        (NEW, (reason(K8S_A),)),
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        [res(1, 1, ext_a=0)],
        [],
        None,
        res(ext_a=6),
        {},
        None,
    ),
    (
        "skip checking resource request with quantity zero",
        [res(ext_a=1)],
        [],
        None,
        res(20, 30, ext_a=1),
        {},
        None,
    ),
]


@pytest.mark.parametrize(
    ("pod", "init", "overhead", "used", "args", "want"), [c[1:] for c in ENOUGH], ids=[c[0] for c in ENOUGH]
)
def test_enough_requests(pod: Any, init: Any, overhead: Any, used: Any, args: Any, want: Any) -> None:
    node = knode("n", ENOUGH_NODE)
    existing = kpod(used, node="n")
    got = run_filter(
        NodeResourcesFit, kpod(*pod, init=init, overhead=overhead), [node], [existing], args=args
    )
    assert got == {"n": want}


# TestNotEnoughRequests: allocatable (10m, 20, 1 pod), one pod already there.
NOT_ENOUGH = [
    (
        "even without specified resources, predicate fails when there's no space for additional pod",
        [],
        [],
        res(10, 20),
    ),
    (
        "even if both resources fit, predicate fails when there's no space for additional pod",
        [res(1, 1)],
        [],
        res(5, 5),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod",
        [res(5, 1)],
        [],
        res(5, 19),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
        [res(5, 1)],
        [res(5, 1)],
        res(5, 19),
    ),
]


@pytest.mark.parametrize(("pod", "init", "used"), [c[1:] for c in NOT_ENOUGH], ids=[c[0] for c in NOT_ENOUGH])
def test_not_enough_requests(pod: Any, init: Any, used: Any) -> None:
    node = knode("n", {"cpu": "10m", "memory": "20", "pods": "1"})
    got = run_filter(NodeResourcesFit, kpod(*pod, init=init), [node], [kpod(used, node="n")])
    assert got == {"n": (UNSCHED, ("Too many pods",))}  # never Unresolvable, in every kube version


STORAGE = [
    ("empty storage requested, and pod fits", [res(1, 1)], res(2, 10), None),
    (
        "storage ephemeral local storage request exceeds allocatable",
        [res(eph=25)],
        res(2, 2),
        (NEW, (reason("ephemeral-storage"),)),
    ),
    ("ephemeral local storage is sufficient", [res(eph=5)], res(2, 2, eph=10), None),
    ("pod fits", [res(eph=10)], res(2, 2), None),
]


@pytest.mark.parametrize(("pod", "used", "want"), [c[1:] for c in STORAGE], ids=[c[0] for c in STORAGE])
def test_storage_requests(pod: Any, used: Any, want: Any) -> None:
    got = run_filter(NodeResourcesFit, kpod(*pod), [knode("n", ENOUGH_NODE)], [kpod(used, node="n")])
    assert got == {"n": want}


# ---------------------------------------------------------------- scoring strategies

EXT = "abc.com/xyz"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED_SET = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": EXT, "weight": 1}]
TWO_CONTAINERS = [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]


def cap(cpu: str, memory: str, **extra: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory, **{EXT if k == "ext" else k: v for k, v in extra.items()}}


# (name, pod containers, node capacities, existing (node, requests) or (node, None) for a container-less pod,
#  resources, {LeastAllocated: scores, MostAllocated: scores}) - a strategy missing from the dict
#  has no such case in kube's table.
ScoreCase = tuple[
    str,
    list[dict[str, str]],
    list[dict[str, str]],
    list[tuple[str, dict[str, str] | None]],
    list[dict[str, Any]],
    dict[str, list[int]],
]
SCORE_CASES: list[ScoreCase] = [
    (
        "nothing scheduled, nothing requested",
        [],
        [cap("4000", "10000")] * 2,
        [],
        DEFAULT,
        {"Least": [100, 100], "Most": [0, 0]},
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        [cap("4000", "10000"), cap("6000", "10000")],
        [],
        DEFAULT,
        {"Least": [37, 50], "Most": [62, 50]},
    ),
    (
        "no resources requested, pods scheduled",
        [],
        [cap("4000", "10000")] * 2,
        [("node1", None), ("node1", None), ("node2", None), ("node2", None)],
        DEFAULT,
        {"Least": [100, 100]},
    ),
    (
        "no resources requested, pods scheduled with resources",
        [],
        [cap("10000", "20000")] * 2,
        [
            ("node1", {"cpu": "3000", "memory": "0"}),
            ("node1", {"cpu": "3000", "memory": "0"}),
            ("node2", {"cpu": "3000", "memory": "0"}),
            ("node2", {"cpu": "3000", "memory": "5000"}),
        ],
        DEFAULT,
        {"Least": [70, 57], "Most": [30, 42]},
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        [cap("10000", "20000")] * 2,
        [("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})],
        DEFAULT,
        {"Least": [57, 45], "Most": [42, 55]},
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        TWO_CONTAINERS,
        [cap("10000", "20000"), cap("10000", "50000")],
        [("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})],
        DEFAULT,
        {"Least": [57, 60]},
    ),
    (
        "requested resources exceed node capacity",
        [{"cpu": "3000", "memory": "0"}],
        [cap("4000", "10000")] * 2,
        [("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})],
        DEFAULT,
        {"Least": [50, 25]},
    ),
    (
        "zero node resources, pods scheduled with resources",
        [],
        [{}, {}],
        [("node1", {"cpu": "3000", "memory": "0"}), ("node2", {"cpu": "3000", "memory": "5000"})],
        DEFAULT,
        {"Least": [0, 0]},
    ),
    (
        "resources requested equal node capacity",
        [{"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}],
        [cap("5000", "10000"), cap("10000", "9000")],
        [],
        DEFAULT,
        {"Most": [95, 75]},
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
        TWO_CONTAINERS,
        [cap("4000", "10000"), cap("6000", "10000")],
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        {"Least": [41, 50], "Most": [58, 50]},
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        [{}],
        [cap("250m", "1000Mi")] * 2,
        [("node1", {}), ("node1", {})],
        DEFAULT,
        {"Most": [80, 30]},
    ),
    (
        "bypass extended resource if the pod does not request",
        TWO_CONTAINERS,
        [cap("6000", "10000"), cap("6000", "10000", ext="4")],
        [],
        EXTENDED_SET,
        {"Least": [50, 50], "Most": [50, 50]},
    ),
    (
        "honor extended resource if the pod requests",
        [{"cpu": "3000", "memory": "5000", EXT: "2"}],
        [cap("6000", "10000", ext="4"), cap("6000", "10000", ext="10")],
        [],
        EXTENDED_SET,
        {"Least": [50, 60], "Most": [50, 40]},
    ),
    (
        "if the node doesn't have a resource",
        [{"cpu": "3000", "memory": "4000"}],
        [cap("6000", "10000"), cap("6000", "10000", ext="4")],
        [],
        [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        {"Least": [55, 55], "Most": [45, 45]},
    ),
]

STRATEGIES = {"Least": "LeastAllocated", "Most": "MostAllocated"}


def _score_params() -> list[Any]:
    out = []
    for name, pod, nodes, existing, resources, wants in SCORE_CASES:
        for short, want in wants.items():
            out.append(
                pytest.param(STRATEGIES[short], pod, nodes, existing, resources, want, id=f"{short}: {name}")
            )
    return out


@pytest.mark.parametrize(("strategy", "pod", "caps", "existing", "resources", "want"), _score_params())
def test_least_and_most_allocated(
    strategy: str, pod: Any, caps: Any, existing: Any, resources: Any, want: list[int]
) -> None:
    nodes = [knode(f"node{i + 1}", c) for i, c in enumerate(caps)]
    pods = [kpod(*([] if r is None else [r]), node=n) for n, r in existing]
    args = {"scoringStrategy": {"type": strategy, "resources": resources}}
    got = run_score(NodeResourcesFit, kpod(*pod), nodes, pods, args=args, normalize=False)
    assert list(got.values()) == want


@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated"])
@pytest.mark.parametrize(
    ("resources", "path"),
    [
        ([{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}], "resources[0].weight"),
        ([{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}], "resources[1].weight"),
    ],
    ids=["negative weight", "weight above MaxNodeScore"],
)
def test_resource_weights_are_validated(strategy: str, resources: Any, path: str) -> None:
    errs = ErrorList()
    NodeResourcesFitArgs.decode(
        Fields({"scoringStrategy": {"type": strategy, "resources": resources}}, "args", errs)
    )
    assert [e for e in map(str, errs) if e.startswith(f"args.scoringStrategy.{path}: Invalid value")], list(
        map(str, errs)
    )


# ---------------------------------------------------------------- RequestedToCapacityRatio

LEAST_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
BIN_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]


def rtcr(resources: list[dict[str, Any]], shape: list[dict[str, int]]) -> dict[str, Any]:
    return {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": resources,
            "requestedToCapacityRatio": {"shape": shape},
        }
    }


RTCR_CASES = [
    (
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        [],
        [cap("4000", "10000")] * 2,
        [("node1", None), ("node1", None)],
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have priority)",
        TWO_CONTAINERS,
        [cap("4000", "10000"), cap("6000", "10000")],
        [("node1", None), ("node1", None)],
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        [],
        [cap("4000", "10000"), cap("6000", "10000")],
        [("node1", {"cpu": "3000", "memory": "5000"}), ("node2", {"cpu": "3000", "memory": "5000"})],
        [38, 50],
    ),
]


@pytest.mark.parametrize(
    ("pod", "caps", "existing", "want"), [c[1:] for c in RTCR_CASES], ids=[c[0] for c in RTCR_CASES]
)
def test_requested_to_capacity_ratio(pod: Any, caps: Any, existing: Any, want: list[int]) -> None:
    nodes = [knode(f"node{i + 1}", c) for i, c in enumerate(caps)]
    pods = [kpod(*([] if r is None else [r]), node=n) for n, r in existing]
    got = run_score(
        NodeResourcesFit, kpod(*pod), nodes, pods, args=rtcr(DEFAULT, LEAST_SHAPE), normalize=False
    )
    assert list(got.values()) == want


def bin_node(name: str, **ext: str) -> Any:
    # kube's makeNode(name, 4000 milli, 10000Mi, extended): pods 100 in its helper.
    return knode(name, {"cpu": "4", "memory": str(10000 * 1024 * 1024), "pods": "100", **ext})


FOO, BAR = "intel.com/foo", "intel.com/bar"

SINGLE_EXTENDED = [
    ("nothing scheduled, nothing requested", {}, [], [0, 0]),
    ("resources requested, pods scheduled with less resources", {FOO: "2"}, [(None, {})], [2, 5]),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running",
        {FOO: "2"},
        [("node2", {FOO: "2"})],
        [2, 10],
    ),
    ("resources requested, pods scheduled with more resources", {FOO: "4"}, [(None, {})], [5, 10]),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"), [c[1:] for c in SINGLE_EXTENDED], ids=[c[0] for c in SINGLE_EXTENDED]
)
def test_bin_packing_single_extended(pod: Any, existing: Any, want: list[int]) -> None:
    nodes = [bin_node("node1", **{FOO: "8"}), bin_node("node2", **{FOO: "4"})]
    pods = [kpod(r, node=n) for n, r in existing if n]  # kube's unbound pods are not on any node
    got = run_score(
        NodeResourcesFit,
        kpod(*([pod] if pod else [])),
        nodes,
        pods,
        args=rtcr([{"name": FOO, "weight": 1}], BIN_SHAPE),
        normalize=False,
    )
    assert list(got.values()) == want


MULTI_EXTENDED = [
    ("nothing scheduled, nothing requested", {}, [], [0, 0]),
    ("resources requested, pods scheduled with less resources", {FOO: "2", BAR: "2"}, [], [4, 3]),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running",
        {FOO: "2", BAR: "2"},
        [("node2", {FOO: "4", BAR: "2"})],
        [4, 7],
    ),
    ("resources requested, pods scheduled with more resources", {FOO: "4", BAR: "2"}, [], [5, 5]),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"), [c[1:] for c in MULTI_EXTENDED], ids=[c[0] for c in MULTI_EXTENDED]
)
def test_bin_packing_multiple_extended(pod: Any, existing: Any, want: list[int]) -> None:
    nodes = [bin_node("node1", **{FOO: "8", BAR: "4"}), bin_node("node2", **{FOO: "4", BAR: "8"})]
    pods = [kpod(r, node=n) for n, r in existing]
    args = rtcr([{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}], BIN_SHAPE)
    got = run_score(NodeResourcesFit, kpod(*([pod] if pod else [])), nodes, pods, args=args, normalize=False)
    assert list(got.values()) == want


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            [(10, 1), (90, 9)],
            [(0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9), (100, 9)],
        ),
        ([(0, 2), (40, 10), (100, 0)], [(0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0)]),
        ([(0, 2), (40, 2), (100, 2)], [(0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2)]),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    from netsched.plugins.noderesources.scoring import broken_linear

    # kube's TestBrokenLinearFunction (utilisations outside 0..100 cannot occur here: they are clamped).
    assert [broken_linear(points, p) for p, _ in assertions] == [want for _, want in assertions]


@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated"])
def test_kube_v1_defaulting_cases(strategy: str) -> None:
    """MARKED DIFFERENCE (of the test, not of kube): kube's "resource with zero weight" and
    "Resources not set" cases call the plugin with internal args that skipped v1 defaulting,
    so they fail.  From a config file kube's v1 defaulting turns weight 0 into 1 and an empty
    resources list into cpu+memory, and so does netsched; that is what we assert."""
    errs = ErrorList()
    raw = {
        "scoringStrategy": {
            "type": strategy,
            "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}],
        }
    }
    args = NodeResourcesFitArgs.decode(Fields(raw, "args", errs))
    assert list(errs) == [] and [(r.name, r.weight) for r in args.resources] == [("memory", 1), ("cpu", 1)]
    args = NodeResourcesFitArgs.decode(Fields({"scoringStrategy": {"type": strategy}}, "args", errs))
    assert list(errs) == [] and [(r.name, r.weight) for r in args.resources] == [("cpu", 1), ("memory", 1)]


# ---------------------------------------------------------------- TestFitScore and TestRestartableInitContainers

FIT_SCORE = [
    (
        "RequestedToCapacityRatio case1",
        [{"cpu": "3000", "memory": "5000"}],
        rtcr(DEFAULT, LEAST_SHAPE),
        [10, 32],
    ),
    (
        "RequestedToCapacityRatio case2",
        [{"cpu": "3000", "memory": "5000"}],
        rtcr(DEFAULT, [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]),
        [95, 68],
    ),
    (
        "MostAllocated",
        [{"cpu": "1000", "memory": "2000"}],
        {"scoringStrategy": {"type": "MostAllocated", "resources": DEFAULT}},
        [67, 36],
    ),
    (
        "LeastAllocated",
        [{"cpu": "1000", "memory": "2000"}],
        {"scoringStrategy": {"type": "LeastAllocated", "resources": DEFAULT}},
        [32, 63],
    ),
]


@pytest.mark.parametrize("pre_score", [True, False], ids=["PreScore", "PreScore not called"])
@pytest.mark.parametrize(("pod", "args", "want"), [c[1:] for c in FIT_SCORE], ids=[c[0] for c in FIT_SCORE])
def test_fit_score(pod: Any, args: Any, want: list[int], pre_score: bool) -> None:
    from kube_cases import decode_args, snapshot

    from netsched.framework.cycle_state import CycleState
    from netsched.testing.framework import build_plugin

    nodes = [knode("node1", cap("4000", "10000")), knode("node2", cap("6000", "10000"))]
    existing = [
        kpod({"cpu": "2000", "memory": "4000"}, node="node1"),
        kpod({"cpu": "1000", "memory": "2000"}, node="node2"),
    ]
    if pre_score:
        got = run_score(NodeResourcesFit, kpod(*pod), nodes, existing, args=args, normalize=False)
        assert list(got.values()) == want
        return
    snap = snapshot(nodes, existing)
    plugin = build_plugin(NodeResourcesFit, decode_args(NodeResourcesFit, args), snapshot=snap)
    assert [plugin.score(CycleState(), kpod(*pod), n) for n in snap.nodes] == want


@pytest.mark.parametrize(
    "sidecar", [False, True], ids=["without restartable init containers", "with restartable init containers"]
)
def test_restartable_init_containers(sidecar: bool) -> None:
    """kube (SidecarContainers enabled, the default since v1.29): both pods pass PreFilter and Filter
    on a node with room for one pod.  netsched has no switch to disable sidecars, so kube's two
    "feature disabled" cases do not apply."""
    pod = kpod({}, sidecars=[{}] if sidecar else [])
    node = knode("n", {"cpu": "0", "memory": "0", "pods": "1"})
    assert run_filter(NodeResourcesFit, pod, [node]) == {"n": None}
