"""NodeResourcesBalancedAllocation: the std-dev formula, best-effort skip, args."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import NodeInfo, PodInfo
from netsched.plugins.noderesources import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from netsched.testing.agreement import score_outcomes
from netsched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

GPU = "nvidia.com/gpu"


def decode(raw: dict[str, Any]) -> tuple[NodeResourcesBalancedAllocationArgs, list[str]]:
    errs = ErrorList()
    args = NodeResourcesBalancedAllocationArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def setup(
    nodes: Sequence[NodeBuilder], pods: Sequence[PodBuilder] = (), raw: dict[str, Any] | None = None
) -> tuple[NodeResourcesBalancedAllocation, Snapshot]:
    snap = Snapshot.of(node_infos(list[NodeInfo | NodeBuilder](nodes), list[PodInfo | PodBuilder](pods)))
    args, errs = decode(raw or {})
    assert errs == []
    return build_plugin(NodeResourcesBalancedAllocation, args, snapshot=snap), snap


def scores(pl: NodeResourcesBalancedAllocation, pod: PodInfo, snap: Snapshot) -> list[int]:
    return score_outcomes(pl, pod, snap)


def test_two_resources_std_is_half_the_difference() -> None:
    pl, snap = setup(
        [make_node("n1").capacity(cpu="4", memory="8Gi"), make_node("n2").capacity(cpu="4", memory="8Gi")],
        [
            make_pod("e").req(cpu="2", memory="1Gi").node("n1"),
            make_pod("f").req(cpu="1", memory="3Gi").node("n2"),
        ],
    )
    # n1: cpu 3000/4000 = 0.75, memory 2Gi/8Gi = 0.25: std = 0.25 -> (1 - 0.25) * 100 = 75.
    # n2: cpu 2000/4000 = 0.5, memory 4Gi/8Gi = 0.5: std 0 -> 100.
    assert scores(pl, make_pod("p").req(cpu="1", memory="1Gi").info(), snap) == [75, 100]


def test_three_resources_population_std() -> None:
    raw = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}]}
    pl, snap = setup([make_node("n1").capacity(cpu="4", memory="8Gi", ephemeral_storage="8Gi")], raw=raw)
    pod = make_pod("p").req(cpu="3", memory="2Gi", ephemeral_storage="4Gi").info()
    # fractions 0.75, 0.25, 0.5: mean 0.5, variance (0.0625 + 0.0625 + 0) / 3 = 0.041667,
    # std 0.204124 -> (1 - 0.204124) * 100 = 79.59 -> 79.
    assert scores(pl, pod, snap) == [79]


def test_fraction_capped_at_one() -> None:
    pl, snap = setup([make_node("n1").capacity(cpu="1", memory="4Gi")])
    # cpu 2000/1000 -> 1.0, memory 1Gi/4Gi = 0.25: std 0.375 -> 62.5 -> 62.
    assert scores(pl, make_pod("p").req(cpu="2", memory="1Gi").info(), snap) == [62]


def test_uses_real_requests_not_nonzero_defaults() -> None:
    # The existing best-effort pod counts as nothing here (the other scores would count 100m/200Mi).
    pl, snap = setup([make_node("n1").capacity(cpu="4", memory="8Gi")], [make_pod("be").node("n1")])
    # cpu 1000/4000 = 0.25, memory 2Gi/8Gi = 0.25 -> 100.
    assert scores(pl, make_pod("p").req(cpu="1", memory="2Gi").info(), snap) == [100]


def test_pod_requesting_one_resource_still_balances_both() -> None:
    pl, snap = setup(
        [make_node("n1").capacity(cpu="4", memory="8Gi")], [make_pod("e").req(memory="4Gi").node("n1")]
    )
    # cpu 2000/4000 = 0.5, memory 4Gi/8Gi = 0.5 -> 100.
    assert scores(pl, make_pod("p").req(cpu="2").info(), snap) == [100]


def test_best_effort_pod_is_skipped() -> None:
    pl, snap = setup([make_node("n1")])
    state = CycleState()
    assert pl.pre_score(state, make_pod("p").info(), snap, snap.all_rows).is_skip
    assert pl.score_nodes(state, make_pod("p").info(), snap, snap.all_rows).tolist() == [0]


def test_unrequested_extended_resource_and_missing_allocatable_are_left_out() -> None:
    raw = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}
    pl, snap = setup([make_node("n1").capacity(cpu="4", memory="0", nvidia_gpu=4)], raw=raw)
    # memory allocatable 0 and GPU not requested: only cpu remains, a single fraction has std 0.
    assert scores(pl, make_pod("p").req(cpu="3").info(), snap) == [100]
    # Requesting 1 of 4 GPUs: cpu 0.75, gpu 0.25 -> 75.
    assert scores(pl, make_pod("q").req(cpu="3").req_named(GPU, 1).info(), snap) == [75]


def test_batch_matches_per_node_on_random_clusters() -> None:
    rng = random.Random(11)
    raw = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}, {"name": GPU}]}
    for k in range(60):
        nodes = []
        pods = []
        for i in range(rng.randint(1, 8)):
            nodes.append(
                make_node(f"n{i}").capacity(
                    cpu=f"{rng.choice([0, 1000, 3000])}m",
                    memory=f"{rng.choice([0, 3, 7])}Gi",
                    ephemeral_storage=f"{rng.choice([0, 10])}Gi",
                    nvidia_gpu=rng.choice([0, 3]),
                )
            )
            if rng.random() < 0.6:
                pods.append(
                    make_pod(f"e{i}")
                    .req(cpu=f"{rng.randint(0, 2000)}m", memory=f"{rng.randint(0, 5000)}Mi")
                    .node(f"n{i}")
                )
        pl, snap = setup(nodes, pods, raw if k % 2 else None)
        pb = make_pod(f"p{k}").req(
            cpu=f"{rng.randint(0, 3000)}m",
            memory=f"{rng.randint(0, 4000)}Mi",
            ephemeral_storage=f"{rng.randint(0, 12)}Gi",
        )
        if rng.random() < 0.5:
            pb.req_named(GPU, rng.randint(1, 2))
        pod = pb.info()
        state = CycleState()
        if pl.pre_score(state, pod, snap, snap.all_rows).is_skip:
            continue
        idx = np.array(rng.sample(range(len(snap)), len(snap)), dtype=np.int64)
        assert pl.score_nodes(state, pod, snap, idx).tolist() == [
            pl.score(state, pod, snap.nodes[i]) for i in idx
        ]


def test_default_args() -> None:
    args, errs = decode({})
    assert errs == []
    assert args.encode() == {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}
    assert decode(args.encode())[0] == args


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            {"resources": [{"name": "cpu", "weight": 2}]},
            ["args.resources[0].weight: Invalid value: 2: must be 1"],
        ),
        (
            {"resources": [{"name": "cpu"}, {"name": "cpu", "weight": 1}]},
            ['args.resources[1].name: Duplicate value: "cpu"'],
        ),
        (
            {"resources": [{"name": "cpu", "weigth": 1}]},
            ["args.resources[0].weigth: Unknown field: not a field of this object (typo?)"],
        ),
        ({"resource": []}, ["args.resource: Unknown field: not a field of this object (typo?)"]),
    ],
)
def test_args_validation_errors(raw: dict[str, Any], want: list[str]) -> None:
    assert decode(raw)[1] == want


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert NodeResourcesBalancedAllocation.name == "NodeResourcesBalancedAllocation"
    assert extension_points_of(NodeResourcesBalancedAllocation) == ["preScore", "score"]
