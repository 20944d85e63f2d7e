"""NodeAffinity: nodeSelector, required/preferred terms, PreFilter narrowing, addedAffinity, args."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from netsched.framework import IntArray
from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.framework.types import PodInfo
from netsched.plugins.node_affinity import NodeAffinity, NodeAffinityArgs
from netsched.testing.agreement import filter_statuses, score_outcomes, verdict
from netsched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
POD_REASON = (UNRES, ("node(s) didn't match Pod's node affinity/selector",))
ENFORCED = (UNRES, ("node(s) didn't match scheduler-enforced node affinity",))
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def decode(raw: dict[str, Any]) -> tuple[NodeAffinityArgs, list[str]]:
    errs = ErrorList()
    args = NodeAffinityArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def setup(nodes: list[NodeBuilder], raw: dict[str, Any] | None = None) -> tuple[NodeAffinity, Snapshot]:
    snap = Snapshot.of(node_infos(list(nodes)))
    args, errs = decode(raw or {})
    assert errs == []
    return build_plugin(NodeAffinity, args, snapshot=snap), snap


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {PREF: [{"weight": w, "preference": t} for w, t in weighted]}}


def outcomes(pl: NodeAffinity, pod: PodInfo, snap: Snapshot, idx: IntArray | None = None) -> dict[int, Any]:
    idx = snap.all_rows if idx is None else idx
    state = CycleState()
    _, st = pl.pre_filter(state, pod, snap)
    if st.is_skip:  # no filtering at all; filter() must agree every node fits
        assert all(pl.filter(state, pod, snap.nodes[i]).ok for i in idx)
        return dict.fromkeys(idx.tolist())
    return {row: verdict(s) for row, s in filter_statuses(pl, pod, snap, idx, state=state).items()}


def nodes3() -> list[NodeBuilder]:
    return [
        make_node("a").labels(disk="ssd", zone="z1", cores="8"),
        make_node("b").labels(disk="hdd", zone="z2", cores="abc"),
        make_node("c").labels(zone="z3"),
    ]


def test_node_selector() -> None:
    pl, snap = setup(nodes3())
    assert outcomes(pl, make_pod("p").node_selector(disk="ssd").info(), snap) == {
        0: None,
        1: POD_REASON,
        2: POD_REASON,
    }
    both = make_pod("q").node_selector(disk="hdd", zone="z2").info()
    assert outcomes(pl, both, snap) == {0: POD_REASON, 1: None, 2: POD_REASON}


@pytest.mark.parametrize(
    ("terms", "want_ok"),
    [
        ([{"matchExpressions": [expr("zone", "In", "z1", "z3")]}], {0, 2}),
        ([{"matchExpressions": [expr("disk", "NotIn", "ssd")]}], {1, 2}),  # a missing label satisfies NotIn
        ([{"matchExpressions": [expr("disk", "Exists")]}], {0, 1}),
        ([{"matchExpressions": [expr("disk", "DoesNotExist")]}], {2}),
        ([{"matchExpressions": [expr("cores", "Gt", "4")]}], {0}),  # "abc" is no number: no match
        ([{"matchExpressions": [expr("cores", "Lt", "9")]}], {0}),
        # Requirements in a term are ANDed, terms ORed.
        (
            [
                {"matchExpressions": [expr("zone", "In", "z1", "z2"), expr("disk", "In", "hdd")]},
                {"matchExpressions": [expr("zone", "In", "z3")]},
            ],
            {1, 2},
        ),
        ([{"matchFields": [expr("metadata.name", "NotIn", "a")]}], {1, 2}),
        ([{}], set()),  # an empty term matches nothing
        ([], set()),  # so does a selector without terms
    ],
)
def test_required_terms(terms: list[dict[str, Any]], want_ok: set[int]) -> None:
    pl, snap = setup(nodes3())
    got = outcomes(pl, make_pod("p").affinity(required(*terms)).info(), snap)
    assert {i for i, v in got.items() if v is None} == want_ok
    assert all(v == POD_REASON for v in got.values() if v is not None)


def test_pre_filter_skips_pods_without_constraints() -> None:
    pl, snap = setup(nodes3())
    _, st = pl.pre_filter(CycleState(), make_pod("p").info(), snap)
    assert st.is_skip


def test_pre_filter_narrows_to_pinned_names() -> None:
    pl, snap = setup(nodes3())

    def pre(*terms: dict[str, Any]) -> tuple[Any, Any]:
        res, st = pl.pre_filter(CycleState(), make_pod("p").affinity(required(*terms)).info(), snap)
        return (None if res is None else res.node_names), (st.code, st.reasons)

    ok: tuple[Code, list[str]] = (Code.SUCCESS, [])
    pin = {"matchFields": [expr("metadata.name", "In", "a", "b")]}
    assert pre(pin) == ({"a", "b"}, ok)
    # Two In lists in one term intersect; terms union.
    both = {"matchFields": [expr("metadata.name", "In", "a", "b"), expr("metadata.name", "In", "b", "c")]}
    assert pre(both, {"matchFields": [expr("metadata.name", "In", "x")]}) == ({"b", "x"}, ok)
    # One term without a name pin leaves every node possible.
    assert pre(pin, {"matchExpressions": [expr("zone", "Exists")]}) == (None, ok)
    conflict = {"matchFields": [expr("metadata.name", "In", "a"), expr("metadata.name", "In", "b")]}
    assert pre(conflict) == (None, (UNRES, ["pod affinity terms conflict"]))


def test_added_affinity_is_reported_separately() -> None:
    raw = {
        "addedAffinity": {
            REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "z1", "z2")]}]}
        }
    }
    pl, snap = setup(nodes3(), raw)
    # Even a pod without constraints gets the profile's affinity.
    assert outcomes(pl, make_pod("p").info(), snap) == {0: None, 1: None, 2: ENFORCED}
    assert outcomes(pl, make_pod("q").node_selector(disk="ssd").info(), snap) == {
        0: None,
        1: POD_REASON,
        2: ENFORCED,
    }


def scores(pl: NodeAffinity, pod: PodInfo, snap: Snapshot) -> tuple[list[int], list[int]]:
    before = score_outcomes(pl, pod, snap)
    raw = np.asarray(before, dtype=np.int64)
    pl.normalize_scores(CycleState(), pod, raw)
    return before, raw.tolist()


def test_preferred_terms_sum_weights_and_normalise() -> None:
    pl, snap = setup(nodes3())
    pod = make_pod("p").affinity(
        preferred(
            (10, {"matchExpressions": [expr("zone", "In", "z1", "z2")]}),
            (5, {"matchExpressions": [expr("disk", "In", "ssd")]}),
        )
    )
    # a: 10 + 5 = 15, b: 10, c: 0. Normalised: 100*s/15 -> 100, 66, 0.
    assert scores(pl, pod.info(), snap) == ([15, 10, 0], [100, 66, 0])


def test_added_preferred_terms_add_up_and_prescore_skip() -> None:
    raw = {
        "addedAffinity": {
            PREF: [{"weight": 20, "preference": {"matchExpressions": [expr("zone", "In", "z3")]}}]
        }
    }
    pl, snap = setup(nodes3(), raw)
    pod = make_pod("p").affinity(preferred((10, {"matchExpressions": [expr("disk", "Exists")]})))
    # a: 10, b: 10, c: 20 -> 50, 50, 100.
    assert scores(pl, pod.info(), snap) == ([10, 10, 20], [50, 50, 100])
    plain, snap2 = setup(nodes3())
    assert plain.pre_score(CycleState(), make_pod("q").info(), snap2, snap2.all_rows).is_skip


def test_cache_follows_label_changes() -> None:
    pl, snap = setup(nodes3())
    pod = make_pod("p").node_selector(disk="ssd").info()
    assert outcomes(pl, pod, snap)[2] == POD_REASON
    snap.set_node(2, make_node("c").labels(zone="z3", disk="ssd").info())
    assert outcomes(pl, pod, snap)[2] is None


def random_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {}
    exprs = []
    for _ in range(rng.randint(0, 2)):
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
        key = rng.choice(["k1", "k2", "num"])
        if op in ("In", "NotIn"):
            exprs.append(expr(key, op, *rng.sample(["v1", "v2", "v3", "5"], rng.randint(1, 2))))
        elif op in ("Gt", "Lt"):
            exprs.append(expr(key, op, str(rng.randint(0, 9))))
        else:
            exprs.append(expr(key, op))
    if exprs:
        term["matchExpressions"] = exprs
    if rng.random() < 0.3:
        term["matchFields"] = [
            expr("metadata.name", rng.choice(["In", "NotIn"]), *rng.sample(["n0", "n1", "n2", "zz"], 2))
        ]
    return term


def test_batch_matches_per_node_on_random_clusters() -> None:
    rng = random.Random(5)
    for k in range(80):
        nodes = []
        for i in range(rng.randint(1, 9)):
            nb = make_node(f"n{i}")
            for key in ("k1", "k2", "num"):
                if rng.random() < 0.6:
                    nb.label(
                        key,
                        rng.choice(["v1", "v2", "v3", "5", "x7"]) if key != "num" else str(rng.randint(0, 9)),
                    )
            nodes.append(nb)
        raw = None
        if rng.random() < 0.3:
            raw = {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [random_term(rng)]},
                    PREF: [{"weight": 7, "preference": random_term(rng)}],
                }
            }
        pl, snap = setup(nodes, raw)
        pb: PodBuilder = make_pod(f"p{k}")
        if rng.random() < 0.4:
            pb.node_selector(k1=rng.choice(["v1", "v2"]))
        if rng.random() < 0.6:
            pb.affinity(required(*[random_term(rng) for _ in range(rng.randint(1, 2))]))
        if rng.random() < 0.6:
            pb.affinity(
                {
                    "nodeAffinity": {
                        **(pb.obj()["spec"].get("affinity", {}).get("nodeAffinity", {})),
                        **preferred((rng.randint(1, 100), random_term(rng)), (3, random_term(rng)))[
                            "nodeAffinity"
                        ],
                    }
                }
            )
        pod = pb.info()
        idx = np.array(rng.sample(range(len(snap)), rng.randint(1, len(snap))), dtype=np.int64)
        outcomes(pl, pod, snap, idx)
        state = CycleState()
        if not pl.pre_score(state, pod, snap, idx).is_skip:
            assert pl.score_nodes(state, pod, snap, idx).tolist() == [
                pl.score(state, pod, snap.nodes[i]) for i in idx
            ]


# ---------------------------------------------------------------- args


def test_args_round_trip() -> None:
    raw = {
        "addedAffinity": {
            REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("pool", "In", "batch")]}]},
            PREF: [{"weight": 5, "preference": {"matchExpressions": [expr("zone", "Exists")]}}],
        }
    }
    args, errs = decode(raw)
    assert errs == []
    assert args.added_required is not None and len(args.added_required.terms) == 1
    assert [p.weight for p in args.added_preferred] == [5]
    assert args.encode() == raw
    assert decode({})[0].encode() == {}


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "Near", "x")]}]}
                }
            },
            [
                f"args.addedAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "
                "'Near': supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt"
            ],
        ),
        (
            {"addedAffinity": {REQ: {"nodeSelectorTerms": []}}},
            [
                f"args.addedAffinity.{REQ}.nodeSelectorTerms: Required value: must have at least one node selector term"
            ],
        ),
        (
            {
                "addedAffinity": {
                    PREF: [{"weight": 0, "preference": {"matchExpressions": [{"operator": "Exists"}]}}]
                }
            },
            [
                f"args.addedAffinity.{PREF}[0].weight: Invalid value: 0: must be in the range 1-100",
                f"args.addedAffinity.{PREF}[0].preference.matchExpressions[0].key: Required value",
            ],
        ),
        (
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [{"matchFields": [expr("metadata.uid", "In", "x")]}]}
                }
            },
            [
                f"args.addedAffinity.{REQ}.nodeSelectorTerms[0].matchFields[0].key: Unsupported value: 'metadata.uid': supported values: \"metadata.name\""
            ],
        ),
        (
            {"addedAffinity": {"required": {}}},
            ["args.addedAffinity.required: Unknown field: not a field of this object (typo?)"],
        ),
    ],
)
def test_args_validation_errors(raw: dict[str, Any], want: list[str]) -> None:
    assert decode(raw)[1] == want


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert NodeAffinity.name == "NodeAffinity"
    assert extension_points_of(NodeAffinity) == ["preFilter", "filter", "preScore", "score"]
