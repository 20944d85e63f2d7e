"""NodeResourcesFit: filter reasons and codes, the three score strategies, args validation."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.selectors import label_key_errors
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.framework.types import NodeInfo, PodInfo
from netsched.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs
from netsched.plugins.noderesources.resources import is_extended, is_scalar, qualified_name_errors
from netsched.plugins.noderesources.scoring import broken_linear, go_div
from netsched.testing.agreement import filter_statuses, score_outcomes, verdict
from netsched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

GPU = "nvidia.com/gpu"
Gi = 1024**3


def decode(raw: dict[str, Any]) -> tuple[NodeResourcesFitArgs, list[str]]:
    errs = ErrorList()
    args = NodeResourcesFitArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def plugin(snap: Snapshot, raw: dict[str, Any] | None = None) -> NodeResourcesFit:
    args, errs = decode(raw or {})
    assert errs == []
    return build_plugin(NodeResourcesFit, args, snapshot=snap)


def cluster(nodes: Sequence[NodeBuilder], pods: Sequence[PodBuilder] = ()) -> tuple[list[NodeInfo], Snapshot]:
    infos = node_infos(list[NodeInfo | NodeBuilder](nodes), list[PodInfo | PodBuilder](pods))
    return infos, Snapshot.of(infos)


def run_filter(pl: NodeResourcesFit, pod: PodInfo, snap: Snapshot) -> dict[int, Any]:
    state = CycleState()
    _, st = pl.pre_filter(state, pod, snap)
    assert st.ok
    return {row: verdict(st) for row, st in filter_statuses(pl, pod, snap, state=state).items()}


def run_score(pl: NodeResourcesFit, pod: PodInfo, snap: Snapshot) -> list[int]:
    return score_outcomes(pl, pod, snap)


# ---------------------------------------------------------------- filter


def test_fits_when_free_resources_suffice() -> None:
    _, snap = cluster(
        [make_node("n1").capacity(cpu="4", memory="10Gi")],
        [make_pod("e").req(cpu="3", memory="8Gi").node("n1")],
    )
    assert run_filter(plugin(snap), make_pod("p").req(cpu="1", memory="2Gi").info(), snap) == {0: None}


@pytest.mark.parametrize(
    ("request_", "want"),
    [
        # 4000m allocatable, 3500m requested: 1000m does not fit but would on an empty node.
        ({"cpu": "1"}, (Code.UNSCHEDULABLE, ("Insufficient cpu",))),
        # 5000m exceeds the node's whole allocatable: preemption cannot help.
        ({"cpu": "5"}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",))),
        ({"cpu": "1", "memory": "9Gi"}, (Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory"))),
        ({"memory": "11Gi"}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient memory",))),
        (
            {"ephemeral_storage": "101Gi"},
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient ephemeral-storage",)),
        ),
        ({"nvidia_gpu": "1"}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient nvidia.com/gpu",))),
    ],
)
def test_insufficient_reasons_and_codes(request_: dict[str, str], want: tuple[Code, tuple[str, ...]]) -> None:
    _, snap = cluster(
        [make_node("n1").capacity(cpu="4", memory="10Gi", ephemeral_storage="100Gi")],
        [make_pod("e").req(cpu="3500m", memory="2Gi").node("n1")],
    )
    assert run_filter(plugin(snap), make_pod("p").req(**request_).info(), snap) == {0: want}


def test_too_many_pods_is_checked_even_without_requests() -> None:
    _, snap = cluster(
        [make_node("n1").capacity(pods=2), make_node("n2").capacity(pods=3)],
        [make_pod("a").node("n1"), make_pod("b").node("n1"), make_pod("c").node("n2")],
    )
    got = run_filter(plugin(snap), make_pod("p").info(), snap)
    assert got == {0: (Code.UNSCHEDULABLE, ("Too many pods",)), 1: None}


def test_too_many_pods_comes_first_and_unresolvable_wins() -> None:
    _, snap = cluster([make_node("n1").capacity(pods=1, cpu="1")], [make_pod("a").node("n1")])
    got = run_filter(plugin(snap), make_pod("p").req(cpu="2").info(), snap)
    assert got == {0: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Too many pods", "Insufficient cpu"))}


def test_extended_resources_fit_and_ignore_args() -> None:
    _, snap = cluster(
        [make_node("gpu").capacity(nvidia_gpu=2), make_node("plain")],
        [make_pod("e").req_named(GPU, 1).node("gpu")],
    )
    pod = make_pod("p").req_named(GPU, 1).info()
    assert run_filter(plugin(snap), pod, snap) == {
        0: None,
        1: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"Insufficient {GPU}",)),
    }
    two = make_pod("q").req_named(GPU, 2).info()
    assert run_filter(plugin(snap), two, snap)[0] == (Code.UNSCHEDULABLE, (f"Insufficient {GPU}",))
    # Ignored by name or by group (the part before "/"): the device plugin's admission decides.
    assert run_filter(plugin(snap, {"ignoredResources": [GPU]}), two, snap) == {0: None, 1: None}
    assert run_filter(plugin(snap, {"ignoredResourceGroups": ["nvidia.com"]}), two, snap) == {
        0: None,
        1: None,
    }


def test_hugepages_are_checked_but_never_ignored() -> None:
    _, snap = cluster([make_node("n1").capacity_named("hugepages-2Mi", "4Mi")])
    pod = make_pod("p").req_named("hugepages-2Mi", "8Mi").info()
    got = run_filter(plugin(snap, {"ignoredResourceGroups": ["hugepages-2Mi"]}), pod, snap)
    assert got == {0: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient hugepages-2Mi",))}


def test_extended_resource_no_node_offers() -> None:
    _, snap = cluster([make_node("n1"), make_node("n2")])
    got = run_filter(plugin(snap), make_pod("p").req_named("example.com/foo", 1).info(), snap)
    assert set(got.values()) == {(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/foo",))}


def test_filter_without_prefilter_state_still_works() -> None:
    nodes, _ = cluster([make_node("n1").capacity(cpu="1")])
    st = plugin(Snapshot.of(nodes)).filter(CycleState(), make_pod("p").req(cpu="2").info(), nodes[0])
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.reasons == ["Insufficient cpu"]


def test_resource_kinds() -> None:
    assert is_extended(GPU) and is_scalar(GPU)
    assert not is_extended("kubernetes.io/foo") and is_scalar("kubernetes.io/foo")
    assert not is_extended("hugepages-1Gi") and is_scalar("hugepages-1Gi")
    assert not is_scalar("cpu") and not is_scalar("pods") and not is_scalar("foo")
    assert not is_extended("requests.example.com/x")


# ---------------------------------------------------------------- score


def scoring_cluster() -> Snapshot:
    # n1: 4000m cpu, 10Gi memory, 1000m + 2Gi already requested.
    # n2: empty, same size.
    _, snap = cluster(
        [make_node("n1").capacity(cpu="4", memory="10Gi"), make_node("n2").capacity(cpu="4", memory="10Gi")],
        [make_pod("e").req(cpu="1", memory="2Gi").node("n1")],
    )
    return snap


POD = make_pod("p").req(cpu="500m", memory="1Gi")


def test_least_allocated_default() -> None:
    # n1: cpu (4000-1500)*100/4000 = 62 (62.5 truncated); mem (10-3)*100/10 = 70; (62+70)/2 = 66.
    # n2: cpu (4000-500)*100/4000 = 87; mem 90; (87+90)/2 = 88.
    assert run_score(plugin(scoring_cluster()), POD.info(), scoring_cluster()) == [66, 88]


def test_least_allocated_weights() -> None:
    raw = {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 2}, {"name": "memory"}],
        }
    }
    snap = scoring_cluster()
    # n1: (62*2 + 70*1) / 3 = 194/3 = 64; n2: (87*2 + 90) / 3 = 88.
    assert run_score(plugin(snap, raw), POD.info(), snap) == [64, 88]


def test_most_allocated() -> None:
    raw = {"scoringStrategy": {"type": "MostAllocated"}}
    snap = scoring_cluster()
    # n1: cpu 1500*100/4000 = 37; mem 3*100/10 = 30; (37+30)/2 = 33.  n2: 12 (12.5) and 10 -> 11.
    assert run_score(plugin(snap, raw), POD.info(), snap) == [33, 11]


def test_nonzero_defaults_for_pods_without_requests() -> None:
    snap = scoring_cluster()
    # A pod without requests counts as 100m cpu and 200Mi memory when scoring.
    # n2: cpu (4000-100)*100/4000 = 97; mem (10240Mi-200Mi)*100/10240Mi = 98 (98.04); (97+98)/2 = 97.
    assert run_score(plugin(snap), make_pod("p").info(), snap)[1] == 97


def test_over_committed_node_scores_zero_least_and_full_most() -> None:
    _, snap = cluster(
        [make_node("n1").capacity(cpu="1", memory="1Gi")],
        [make_pod("e").req(cpu="1", memory="1Gi").node("n1")],
    )
    assert run_score(plugin(snap), POD.info(), snap) == [0]
    # MostAllocated caps requested at capacity: 100 each.
    assert run_score(plugin(snap, {"scoringStrategy": {"type": "MostAllocated"}}), POD.info(), snap) == [100]


def rtcr(shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": v} for u, v in shape]},
    }
    if resources:
        s["resources"] = resources
    return {"scoringStrategy": s}


def test_requested_to_capacity_ratio_bin_packing() -> None:
    snap = scoring_cluster()
    # Shape (0,0)-(100,10) -> scores x10. n1: cpu util 1500*100/4000 = 37 -> 37; mem util 30 -> 30;
    # round((37+30)/2 = 33.5) = 34.  n2: cpu util 12 -> 12; mem util 10 -> 10; 11.
    assert run_score(plugin(snap, rtcr([(0, 0), (100, 10)])), POD.info(), snap) == [34, 11]


def test_requested_to_capacity_ratio_truncates_toward_zero() -> None:
    snap = scoring_cluster()
    # Shape (0,10)-(70,0): falling. n1 cpu util 37: 100 + (-100*37)/70 = 100 - 52 (Go truncation of -52.86) = 48;
    # mem util 30: 100 - 42 (-42.86) = 58; round((48+58)/2) = 53.
    # n2 cpu util 12: 100 - 17 (-17.14) = 83; mem util 10: 100 - 14 (-14.29) = 86; round(84.5) = 85.
    assert run_score(plugin(snap, rtcr([(0, 10), (70, 0)])), POD.info(), snap) == [53, 85]


def test_requested_to_capacity_ratio_leaves_zero_scores_out() -> None:
    # 1000Gi of memory: a 200Mi request is utilization 0 -> score 0, left out of the average.
    _, snap = cluster([make_node("n1").capacity(cpu="1", memory="1000Gi")])
    pod = make_pod("p").req(cpu="500m", memory="200Mi").info()
    # cpu util 50 -> 50; memory dropped: 50 (not 25).
    assert run_score(plugin(snap, rtcr([(0, 0), (100, 10)])), pod, snap) == [50]


def test_extended_resource_scoring() -> None:
    _, snap = cluster(
        [make_node("gpu").capacity(cpu="4", nvidia_gpu=4), make_node("plain").capacity(cpu="4")],
        [make_pod("e").req(cpu="1").req_named(GPU, 1).node("gpu")],
    )
    raw = {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 3}],
        }
    }
    pl = plugin(snap, raw)
    # gpu node: cpu (4000-2000)*100/4000 = 50, gpu (4-2)*100/4 = 50 -> (50 + 150)/4 = 50.
    # plain node has no GPU allocatable: scored on cpu alone, (4000-1000)*100/4000 = 75.
    assert run_score(pl, make_pod("p").req(cpu="1").req_named(GPU, 1).info(), snap) == [50, 75]
    # A pod without GPU requests is scored on cpu only: gpu node (4000-1000-1000)*100/4000 = 50, plain 75.
    assert run_score(pl, make_pod("q").req(cpu="1").info(), snap) == [50, 75]


def test_broken_linear_and_go_division() -> None:
    shape = [(10, 100), (50, 0)]
    assert broken_linear(shape, 0) == 100 and broken_linear(shape, 60) == 0
    assert broken_linear(shape, 30) == 50
    assert broken_linear(shape, 11) == 100 + go_div(-100 * 1, 40) == 98
    assert go_div(-7, 2) == -3 and go_div(7, 2) == 3 and go_div(-8, 2) == -4


# ---------------------------------------------------------------- per-node vs batch on random clusters


def random_cluster(rng: random.Random) -> Snapshot:
    nodes: list[NodeBuilder] = []
    pods: list[PodBuilder] = []
    for i in range(rng.randint(1, 9)):
        nb = make_node(f"n{i}").capacity(
            cpu=f"{rng.choice([0, 500, 1000, 4000])}m",
            memory=f"{rng.choice([0, 1, 4])}Gi",
            pods=rng.choice([1, 2, 110]),
        )
        if rng.random() < 0.4:
            nb.capacity(nvidia_gpu=rng.randint(0, 4))
        nodes.append(nb)
        for j in range(rng.randint(0, 2)):
            pb = make_pod(f"e{i}-{j}").node(f"n{i}")
            if rng.random() < 0.7:
                pb.req(cpu=f"{rng.randint(0, 2000)}m", memory=f"{rng.randint(0, 2048)}Mi")
            pods.append(pb)
    return Snapshot.of(node_infos(list[NodeInfo | NodeBuilder](nodes), list[PodInfo | PodBuilder](pods)))


def random_pod(rng: random.Random, k: int) -> PodInfo:
    pb = make_pod(f"p{k}")
    if rng.random() < 0.8:
        pb.req(cpu=f"{rng.randint(0, 3000)}m", memory=f"{rng.randint(0, 3000)}Mi")
    if rng.random() < 0.3:
        pb.req_named(GPU, rng.randint(1, 3))
    return pb.info()


STRATEGIES = [
    {},
    {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}, {"name": GPU, "weight": 5}],
        }
    },
    rtcr(
        [(0, 10), (30, 3), (100, 7)],
        [{"name": "cpu"}, {"name": "memory", "weight": 2}, {"name": GPU, "weight": 4}],
    ),
    {"ignoredResources": [GPU]},
]


@pytest.mark.parametrize("raw", STRATEGIES)
def test_batch_matches_per_node_on_random_clusters(raw: dict[str, Any]) -> None:
    rng = random.Random(7)
    for k in range(40):
        snap = random_cluster(rng)
        pl = plugin(snap, raw)
        pod = random_pod(rng, k)
        run_filter(pl, pod, snap)
        run_score(pl, pod, snap)
        # A shuffled subset of rows keeps the alignment with idx.
        idx = np.array(rng.sample(range(len(snap)), rng.randint(1, len(snap))), dtype=np.int64)
        state = CycleState()
        pl.pre_filter(state, pod, snap)
        filter_statuses(pl, pod, snap, idx, state=state)
        pl.pre_score(state, pod, snap, idx)
        score_outcomes(pl, pod, snap, idx, state=state)


# ---------------------------------------------------------------- args


def test_default_args_round_trip() -> None:
    args, errs = decode({})
    assert errs == []
    assert args.encode() == {
        "ignoredResources": [],
        "ignoredResourceGroups": [],
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        },
    }
    again, errs = decode(args.encode())
    assert errs == [] and again == args


def test_rtcr_args_round_trip_and_weight_default() -> None:
    args, errs = decode(rtcr([(0, 0), (100, 10)], [{"name": "cpu", "weight": 0}]))
    assert errs == []
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1)]
    again, errs = decode(args.encode())
    assert errs == [] and again == args


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
            [
                "args.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"
            ],
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}]}},
            [
                "args.scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]"
            ],
        ),
        (
            {"scoringStrategy": {"type": "Fancy"}},
            [
                'args.scoringStrategy.type: Unsupported value: "Fancy": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
            ],
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}]}},
            [
                'args.scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
            ],
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            [
                "args.scoringStrategy.requestedToCapacityRatio: Required value: required when type is RequestedToCapacityRatio"
            ],
        ),
        (
            rtcr([]),
            [
                "args.scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"
            ],
        ),
        (
            rtcr([(50, 1), (50, 2), (101, 11)]),
            [
                "args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 50: values must be sorted in increasing order",
                "args.scoringStrategy.requestedToCapacityRatio.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]",
                "args.scoringStrategy.requestedToCapacityRatio.shape[2].score: Invalid value: 11: not in valid range [0, 10]",
            ],
        ),
        (
            {"ignoredResourceGroups": ["example.com/x"]},
            [
                "args.ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'"
            ],
        ),
        (
            {"ignoredResources": ["-gpu"]},
            [
                'args.ignoredResources[0]: Invalid value: "-gpu": name part must consist of alphanumeric characters, '
                "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ],
        ),
        (
            {"ignoredResources": ["Example.com/gpu"]},
            [
                'args.ignoredResources[0]: Invalid value: "Example.com/gpu": prefix part a lowercase RFC 1123 subdomain must consist of '
                "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resource": []}},
            ["args.scoringStrategy.resource: Unknown field: not a field of this object (typo?)"],
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"weight": 2}]}},
            ["args.scoringStrategy.resources[0].name: Required value"],
        ),
    ],
)
def test_args_validation_errors(raw: dict[str, Any], want: list[str]) -> None:
    assert decode(raw)[1] == want


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert NodeResourcesFit.name == "NodeResourcesFit"
    assert extension_points_of(NodeResourcesFit) == ["preFilter", "filter", "preScore", "score"]


@pytest.mark.parametrize(
    "key",
    [
        "gpu",
        "nvidia.com/gpu",
        "example.com/My_Name.1",
        "Example.com/gpu",  # the prefix must be lowercase
        "/gpu",
        "nvidia.com/",
        "a/b/c",
        "-gpu",
        "gpu-",
        "x" * 63,
        "x" * 64,
        "a" * 254 + "/gpu",
        "exa_mple.com/gpu",
    ],
)
def test_resource_names_and_label_keys_share_kube_qualified_name_rules(key: str) -> None:
    # Two wordings (the API server's for resource names, the shorter one for label keys) of one
    # check, with one pair of patterns: both accept and refuse the same non-empty names.
    assert bool(qualified_name_errors(key)) == bool(label_key_errors(key))
