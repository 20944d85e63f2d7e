"""TaintToleration: filter reasons, PreferNoSchedule counting, reversed normalisation, batch caches."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from netsched.framework import IntArray
from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.framework.types import PodInfo
from netsched.plugins.taint_toleration import TaintToleration
from netsched.testing.agreement import filter_statuses, score_outcomes, verdict
from netsched.testing.builders import NodeBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def setup(nodes: list[NodeBuilder]) -> tuple[TaintToleration, Snapshot]:
    snap = Snapshot.of(node_infos(list(nodes)))
    return build_plugin(TaintToleration, snapshot=snap), snap


def filter_outcomes(
    pl: TaintToleration, pod: PodInfo, snap: Snapshot, idx: IntArray | None = None
) -> dict[int, Any]:
    return {row: verdict(st) for row, st in filter_statuses(pl, pod, snap, idx).items()}


def normalized(pl: TaintToleration, pod: PodInfo, snap: Snapshot) -> tuple[list[int], list[int]]:
    before = score_outcomes(pl, pod, snap)
    raw = np.asarray(before, dtype=np.int64)
    pl.normalize_scores(CycleState(), pod, raw)
    return before, raw.tolist()


def test_untolerated_taint_reason_uses_first_hard_taint_in_node_order() -> None:
    pl, snap = setup(
        [
            make_node("a")
            .taint("soft", "x", "PreferNoSchedule")
            .taint("gpu", "true")
            .taint("zone", "z1", "NoExecute"),
            make_node("b").taint("dedicated", "", "NoExecute"),
            make_node("c"),
        ]
    )
    got = filter_outcomes(pl, make_pod("p").info(), snap)
    assert got == {
        0: (UNRES, ("node(s) had untolerated taint {gpu: true}",)),
        1: (UNRES, ("node(s) had untolerated taint {dedicated: }",)),
        2: None,
    }


def test_tolerations_equal_exists_and_effects() -> None:
    pl, snap = setup([make_node("a").taint("gpu", "true"), make_node("b").taint("gpu", "false", "NoExecute")])
    # Equal needs the value; Exists matches any value; an empty effect matches every effect.
    assert filter_outcomes(pl, make_pod("p").toleration("gpu", "true", "NoSchedule").info(), snap) == {
        0: None,
        1: (UNRES, ("node(s) had untolerated taint {gpu: false}",)),
    }
    assert filter_outcomes(pl, make_pod("q").toleration("gpu", operator="Exists").info(), snap) == {
        0: None,
        1: None,
    }
    # A NoExecute toleration does not cover a NoSchedule taint.
    assert filter_outcomes(
        pl, make_pod("r").toleration("gpu", operator="Exists", effect="NoExecute").info(), snap
    )[0] == (
        UNRES,
        ("node(s) had untolerated taint {gpu: true}",),
    )
    # Empty key with Exists tolerates everything.
    assert filter_outcomes(pl, make_pod("s").toleration(operator="Exists").info(), snap) == {0: None, 1: None}


def test_prefer_no_schedule_never_filters() -> None:
    pl, snap = setup([make_node("a").taint("soft", "", "PreferNoSchedule")])
    assert filter_outcomes(pl, make_pod("p").info(), snap) == {0: None}


def test_score_counts_intolerable_prefer_taints_then_reverses() -> None:
    pl, snap = setup(
        [
            make_node("a"),
            make_node("b").taint("s1", "", "PreferNoSchedule"),
            make_node("c")
            .taint("s1", "", "PreferNoSchedule")
            .taint("s2", "v", "PreferNoSchedule")
            .taint("hard", "x"),
            make_node("d")
            .taint("s2", "v", "PreferNoSchedule")
            .taint("s3", "", "PreferNoSchedule")
            .taint("s4", "", "PreferNoSchedule"),
        ]
    )
    # Raw: 0, 1, 2, 3 intolerable PreferNoSchedule taints (the NoSchedule one does not count).
    # Normalised reversed: 100 - 100*s/3 -> 100, 67 (100-33), 34 (100-66), 0.
    assert normalized(pl, make_pod("p").info(), snap) == ([0, 1, 2, 3], [100, 67, 34, 0])
    # Tolerating s2 (effect PreferNoSchedule) and s3 (empty effect); a NoSchedule toleration of s4 does not count.
    pod = (
        make_pod("q")
        .toleration("s2", "v", "PreferNoSchedule")
        .toleration("s3", operator="Exists")
        .toleration("s4", operator="Exists", effect="NoSchedule")
        .info()
    )
    assert normalized(pl, pod, snap) == ([0, 1, 1, 1], [100, 0, 0, 0])


def test_all_zero_scores_normalise_to_max() -> None:
    pl, snap = setup([make_node("a"), make_node("b").taint("hard", "x")])
    assert normalized(pl, make_pod("p").info(), snap) == ([0, 0], [100, 100])


def test_cache_follows_taint_changes() -> None:
    pl, snap = setup([make_node("a"), make_node("b")])
    pod = make_pod("p").info()
    assert filter_outcomes(pl, pod, snap) == {0: None, 1: None}
    # A node update with a new taints tuple replaces the row and drops label/taint caches.
    snap.set_node(1, make_node("b").taint("gpu", "true").info())
    assert filter_outcomes(pl, pod, snap) == {
        0: None,
        1: (UNRES, ("node(s) had untolerated taint {gpu: true}",)),
    }


def test_batch_matches_per_node_on_random_clusters() -> None:
    rng = random.Random(3)
    keys = ["a", "b", "c"]
    effects = ["NoSchedule", "NoExecute", "PreferNoSchedule"]
    for k in range(60):
        nodes = []
        for i in range(rng.randint(1, 10)):
            nb = make_node(f"n{i}")
            for _ in range(rng.randint(0, 3)):
                nb.taint(rng.choice(keys), rng.choice(["", "1"]), rng.choice(effects))
            nodes.append(nb)
        pl, snap = setup(nodes)
        pb = make_pod(f"p{k}")
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.5:
                pb.toleration(rng.choice(keys), operator="Exists", effect=rng.choice(["", *effects]))
            else:
                pb.toleration(rng.choice(keys), rng.choice(["", "1"]), rng.choice(["", *effects]))
        pod = pb.info()
        idx = np.array(rng.sample(range(len(snap)), rng.randint(1, len(snap))), dtype=np.int64)
        filter_outcomes(pl, pod, snap, idx)
        state = CycleState()
        pl.pre_score(state, pod, snap, idx)
        assert pl.score_nodes(state, pod, snap, idx).tolist() == [
            pl.score(state, pod, snap.nodes[i]) for i in idx
        ]


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert TaintToleration.name == "TaintToleration"
    assert extension_points_of(TaintToleration) == ["filter", "preScore", "score"]
