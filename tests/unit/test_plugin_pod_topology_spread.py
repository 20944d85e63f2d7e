"""PodTopologySpread: skew filter, minDomains, inclusion policies, defaults, scoring, args."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.framework.types import NodeInfo, PodInfo
from netsched.plugins.pod_topology_spread import PodTopologySpread, PodTopologySpreadArgs
from netsched.plugins.pod_topology_spread.args import SYSTEM_DEFAULT_CONSTRAINTS
from netsched.plugins.pod_topology_spread.filtering import REASON_CONSTRAINTS, REASON_MISSING_LABEL
from netsched.plugins.pod_topology_spread.scoring import IGNORED, normalize
from netsched.testing.agreement import filter_verdicts, score_outcomes
from netsched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin, schedule_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"app": "web"}
OK = "ok"
SKEW = (Code.UNSCHEDULABLE, REASON_CONSTRAINTS)
LABEL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_MISSING_LABEL)


def infos(nodes: Sequence[Any], pods: Sequence[Any] = ()) -> list[NodeInfo]:
    """node_infos over any sequences of builders/records (its list parameters are invariant)."""
    return node_infos(list(nodes), list(pods))


def plugin(args: PodTopologySpreadArgs | None = None) -> PodTopologySpread:
    return build_plugin(PodTopologySpread, args or PodTopologySpreadArgs.default())


def cluster() -> list[NodeBuilder]:
    """Zone a: a1, a2; zone b: b1, b2."""
    return [make_node(n).zone(n[0]) for n in ("a1", "a2", "b1", "b2")]


def web_pods(placement: dict[str, int], **labels: str) -> list[PodInfo]:
    out = []
    for node, count in placement.items():
        for i in range(count):
            out.append(make_pod(f"w-{node}-{i}").labels(**(labels or WEB)).node(node).info())
    return out


# a: 3 matching pods, b: 1.
BASE = {"a1": 2, "a2": 1, "b1": 1}


def verdicts(
    pl: PodTopologySpread, pod: PodBuilder | PodInfo, nodes: Sequence[Any], existing: Sequence[Any] = ()
) -> dict[str, Any]:
    """node -> OK | (code, reason) | "skip", checking per-node filter() and batch filter_nodes() agree."""
    return filter_verdicts(pl, pod, nodes, existing)


def scores(
    pl: PodTopologySpread,
    pod: PodBuilder | PodInfo,
    nodes: Sequence[Any],
    existing: Sequence[Any] = (),
    only: Sequence[str] | None = None,
) -> dict[str, tuple[int, int]] | str:
    """node -> (raw, normalised) over the filtered nodes `only` (default all); score() and score_nodes() agree."""
    pi = pod.info() if isinstance(pod, PodBuilder) else pod
    snap = Snapshot.of(infos(list(nodes), list(existing)))
    idx = snap.all_rows if only is None else np.asarray([snap.index[n] for n in only], dtype=np.int64)
    state = CycleState()
    st = pl.pre_score(state, pi, snap, idx)
    if st.is_skip:
        return "skip"
    raw = score_outcomes(pl, pi, snap, idx, state=state)
    norm = np.asarray(raw, dtype=np.int64)
    pl.normalize_scores(state, pi, norm)
    return {snap.nodes[i].name: (r, int(s)) for i, r, s in zip(idx.tolist(), raw, norm, strict=True)}


def spread(max_skew: int, key: str = ZONE, when: str = "DoNotSchedule", **extra: Any) -> PodBuilder:
    return make_pod("p").labels(**WEB).spread(max_skew, key, when, selector=WEB, **extra)


# ---------------------------------------------------------------- args


def decode(raw: dict[str, Any]) -> tuple[PodTopologySpreadArgs, list[str]]:
    errs = ErrorList()
    out = PodTopologySpreadArgs.decode(Fields(raw, "args", errs))
    return out, [str(e) for e in errs]


def test_args_default_to_system_constraints() -> None:
    a = PodTopologySpreadArgs.default()
    assert a.defaulting_type == "System"
    assert a.effective_defaults == SYSTEM_DEFAULT_CONSTRAINTS
    assert [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in a.effective_defaults] == [
        (HOST, 3, "ScheduleAnyway"),
        (ZONE, 5, "ScheduleAnyway"),
    ]


def test_args_list_round_trip() -> None:
    raw = {
        "defaultingType": "List",
        "defaultConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "nodeTaintsPolicy": "Honor",
            },
            {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
        ],
    }
    a, errs = decode(raw)
    assert not errs
    assert a.effective_defaults == a.default_constraints and len(a.default_constraints) == 2
    assert decode(a.encode()) == (a, [])


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            ['args.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'],
        ),
        (
            {"defaultingType": "Sometimes"},
            ['args.defaultingType: Unsupported value: "Sometimes": supported values: "System", "List"'],
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}],
            },
            ["args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range"],
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}],
            },
            ["args.defaultConstraints[0].topologyKey: Required value: can not be empty"],
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "bad key!"}]},
            [
                'args.defaultConstraints[0].topologyKey: Invalid value: "bad key!": name part must consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                "args.defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
            ],
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Maybe"}],
            },
            [
                'args.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: '
                '"DoNotSchedule", "ScheduleAnyway"'
            ],
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {},
                    }
                ],
            },
            [
                "args.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod"
            ],
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
                    {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
                ],
            },
            [f'args.defaultConstraints[1]: Duplicate value: "{{{ZONE}, ScheduleAnyway}}"'],
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "skew": 1}
                ],
            },
            ["args.defaultConstraints[0].skew: Unknown field: not a field of this object (typo?)"],
        ),
    ],
)
def test_args_errors_name_the_field(raw: dict[str, Any], want: list[str]) -> None:
    assert decode(raw)[1] == want


# ---------------------------------------------------------------- filter


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        # a: 3+1-1 = 3 > 1; b: 1+1-1 = 1.
        (spread(1), {"a1": SKEW, "a2": SKEW, "b1": OK, "b2": OK}),
        (spread(2), {"a1": SKEW, "a2": SKEW, "b1": OK, "b2": OK}),
        (spread(3), {"a1": OK, "a2": OK, "b1": OK, "b2": OK}),
        # The pod does not match its own selector: a: 3+0-1 = 2.
        (make_pod("p").spread(2, ZONE, selector=WEB), {"a1": OK, "a2": OK, "b1": OK, "b2": OK}),
        # hostname: a1 2, a2 1, b1 1, b2 0 -> min 0.
        (spread(1, HOST), {"a1": SKEW, "a2": SKEW, "b1": SKEW, "b2": OK}),
        (spread(2, HOST), {"a1": SKEW, "a2": OK, "b1": OK, "b2": OK}),
        # Fewer domains (2) than minDomains (3): the minimum counts as 0, so b: 1+1-0 = 2 > 1.
        (spread(1, minDomains=3), {"a1": SKEW, "a2": SKEW, "b1": SKEW, "b2": SKEW}),
        (spread(1, minDomains=2), {"a1": SKEW, "a2": SKEW, "b1": OK, "b2": OK}),
        (spread(3, minDomains=3), {"a1": SKEW, "a2": SKEW, "b1": OK, "b2": OK}),
    ],
)
def test_skew_table(pod: PodBuilder, want: dict[str, Any]) -> None:
    assert verdicts(plugin(), pod, cluster(), web_pods(BASE)) == want


def test_missing_topology_key_is_unresolvable() -> None:
    nodes = [*cluster(), make_node("c1")]
    got = verdicts(plugin(), spread(1), nodes, web_pods({**BASE, "c1": 5}))
    # c1's pods are not counted (it has no zone): same verdicts as before for a and b.
    assert got == {"a1": SKEW, "a2": SKEW, "b1": OK, "b2": OK, "c1": LABEL}


def test_first_failing_constraint_gives_the_reason() -> None:
    nodes = [*cluster(), make_node("c1")]
    pod = make_pod("p").labels(**WEB).spread(1, HOST, selector=WEB).spread(1, ZONE, selector=WEB)
    got = verdicts(plugin(), pod, nodes, web_pods(BASE))
    assert got == {"a1": SKEW, "a2": SKEW, "b1": SKEW, "b2": OK, "c1": LABEL}


def test_node_affinity_policy() -> None:
    honor = spread(1).node_selector(**{ZONE: "b"})
    # Only zone b counts: b = 1 is the minimum; a's domain has no counted pods.
    assert verdicts(plugin(), honor, cluster(), web_pods(BASE)) == {"a1": OK, "a2": OK, "b1": OK, "b2": OK}
    ignore = spread(1, nodeAffinityPolicy="Ignore").node_selector(**{ZONE: "b"})
    assert verdicts(plugin(), ignore, cluster(), web_pods(BASE)) == {
        "a1": SKEW,
        "a2": SKEW,
        "b1": OK,
        "b2": OK,
    }


def test_node_taints_policy() -> None:
    nodes = [make_node("a1").zone("a"), make_node("a2").zone("a").taint("dedicated", "x"), *cluster()[2:]]
    # Ignore (default): a = 3, 3+1-1 = 3 > 2.  Honor: a2 is not counted, a = 2, 2+1-1 = 2.
    assert verdicts(plugin(), spread(2), nodes, web_pods(BASE)) == {
        "a1": SKEW,
        "a2": SKEW,
        "b1": OK,
        "b2": OK,
    }
    honor = spread(2, nodeTaintsPolicy="Honor")
    assert verdicts(plugin(), honor, nodes, web_pods(BASE)) == {"a1": OK, "a2": OK, "b1": OK, "b2": OK}
    tolerant = spread(2, nodeTaintsPolicy="Honor").toleration("dedicated", "x", "NoSchedule")
    assert verdicts(plugin(), tolerant, nodes, web_pods(BASE)) == {"a1": SKEW, "a2": SKEW, "b1": OK, "b2": OK}


def test_terminating_and_other_namespace_pods_do_not_count() -> None:
    extra = [
        make_pod("t1")
        .labels(**WEB)
        .node("b2")
        .set("metadata.deletionTimestamp", "2024-01-01T00:00:00Z")
        .info(),
        make_pod("o1", "other").labels(**WEB).node("b2").info(),
        make_pod("o2", "other").labels(**WEB).node("b2").info(),
    ]
    assert verdicts(plugin(), spread(1, HOST), cluster(), web_pods(BASE) + extra)["b2"] == OK


def test_match_label_keys() -> None:
    existing = web_pods({"a1": 2}, app="web", version="v1") + web_pods({"b1": 1}, app="web", version="v2")
    pod = (
        make_pod("p")
        .labels(app="web", version="v2")
        .spread(1, ZONE, selector=WEB, matchLabelKeys=["version"])
    )
    # Only v2 pods count: a 0, b 1.
    assert verdicts(plugin(), pod, cluster(), existing) == {"a1": OK, "a2": OK, "b1": SKEW, "b2": SKEW}


def test_pod_without_constraints_skips() -> None:
    assert set(verdicts(plugin(), make_pod("p").labels(**WEB), cluster(), web_pods(BASE)).values()) == {
        "skip"
    }
    # Soft-only constraints: nothing to filter.
    soft = spread(1, when="ScheduleAnyway")
    assert set(verdicts(plugin(), soft, cluster(), web_pods(BASE)).values()) == {"skip"}


def test_list_defaults_can_be_hard() -> None:
    args, errs = decode(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
        }
    )
    assert not errs
    owned = make_pod("p").labels(**WEB).owner("ReplicaSet", "web-1")
    assert verdicts(plugin(args), owned, cluster(), web_pods(BASE)) == {
        "a1": SKEW,
        "a2": SKEW,
        "b1": OK,
        "b2": OK,
    }
    bare = make_pod("p").labels(**WEB)
    assert set(verdicts(plugin(args), bare, cluster(), web_pods(BASE)).values()) == {"skip"}


def test_add_and_remove_pod_in_a_what_if() -> None:
    existing = web_pods(BASE)
    snap = Snapshot.of(infos(cluster(), existing))
    pl = plugin()
    pod = spread(1).info()
    state = CycleState()
    assert pl.pre_filter(state, pod, snap)[1].ok
    a1 = snap.nodes[snap.index["a1"]]
    assert pl.filter(state, pod, a1).code == Code.UNSCHEDULABLE
    what_if = state.clone()
    node = a1.clone()
    for p in [p for p in existing if p.node_name == "a1"]:
        node.remove_pod(p)
        assert pl.remove_pod(what_if, pod, p, node).ok
    # a: 1, b: 1 -> 1+1-1 = 1.
    assert pl.filter(what_if, pod, node).ok
    assert pl.filter(state, pod, a1).code == Code.UNSCHEDULABLE
    # A pod of another namespace or not matching changes nothing.
    stranger = make_pod("s", "other").labels(**WEB).node("a1").info()
    pl.add_pod(what_if, pod, stranger, node)
    assert pl.filter(what_if, pod, node).ok
    pl.add_pod(what_if, pod, existing[0], node)
    assert pl.filter(what_if, pod, node).code == Code.UNSCHEDULABLE


# ---------------------------------------------------------------- score


def test_soft_zone_constraint_scores() -> None:
    nodes = [*cluster(), make_node("c1")]
    # Filtered nodes with a zone: zones a, b -> weight log(4).  a: 3 x 1.386 = 4.16 -> 4; b: 1.39 -> 1.
    # c1 lacks the key: ignored (raw -1, score 0).  (4 + 1 - s) x 100 / 4.
    got = scores(plugin(), spread(1, when="ScheduleAnyway"), nodes, web_pods(BASE))
    assert got == {"a1": (4, 25), "a2": (4, 25), "b1": (1, 100), "b2": (1, 100), "c1": (IGNORED, 0)}


def test_soft_hostname_constraint_scores() -> None:
    # 4 filtered nodes -> weight log(6) = 1.792; maxSkew 2 adds 1.
    # a1: 2 x 1.792 + 1 = 4.58 -> 5; a2, b1: 2.79 -> 3; b2: 1.  (5 + 1 - s) x 100 / 5.
    got = scores(plugin(), spread(2, HOST, "ScheduleAnyway"), cluster(), web_pods(BASE))
    assert got == {"a1": (5, 20), "a2": (3, 60), "b1": (3, 60), "b2": (1, 100)}


def test_weights_come_from_the_filtered_nodes_only() -> None:
    # Only a1 and b1 passed the filters: hostname weight log(4) = 1.386.
    # a1: 2 x 1.386 = 2.77 -> 3; b1: 1.39 -> 1.
    got = scores(plugin(), spread(1, HOST, "ScheduleAnyway"), cluster(), web_pods(BASE), only=["a1", "b1"])
    assert got == {"a1": (3, 33), "b1": (1, 100)}


def test_no_matching_pods_scores_all_max() -> None:
    got = scores(plugin(), spread(1, when="ScheduleAnyway"), cluster())
    assert got == {"a1": (0, 100), "a2": (0, 100), "b1": (0, 100), "b2": (0, 100)}


def test_system_defaults_for_owned_pods() -> None:
    nodes = [*cluster(), make_node("c1")]
    pod = make_pod("p").labels(**WEB).owner("ReplicaSet", "web-1")
    # hostname (maxSkew 3): weight log(5 + 2); zone (maxSkew 5): values a, b and "" (c1) -> log(3 + 2).
    # Nodes without a zone are scored under the system defaults (hostname only).
    wh, wz = math.log(7), math.log(5)
    raw = {
        "a1": round(2 * wh + 2 + 3 * wz + 4),
        "a2": round(1 * wh + 2 + 3 * wz + 4),
        "b1": round(1 * wh + 2 + 1 * wz + 4),
        "b2": round(0 * wh + 2 + 1 * wz + 4),
        "c1": round(0 * wh + 2),
    }
    assert raw == {"a1": 15, "a2": 13, "b1": 10, "b2": 8, "c1": 2}
    want = {n: (r, 100 * (15 + 2 - r) // 15) for n, r in raw.items()}
    assert scores(plugin(), pod, nodes, web_pods(BASE)) == want
    assert want == {"a1": (15, 13), "a2": (13, 26), "b1": (10, 46), "b2": (8, 60), "c1": (2, 100)}


def test_defaults_apply_only_to_owned_pods_and_list_can_disable_them() -> None:
    assert scores(plugin(), make_pod("p").labels(**WEB), cluster(), web_pods(BASE)) == "skip"
    assert scores(plugin(), make_pod("p").owner("ReplicaSet", "x"), cluster()) == "skip"  # no labels
    owned = make_pod("p").labels(**WEB).owner("ReplicaSet", "web-1")
    no_defaults, _ = decode({"defaultingType": "List"})
    assert scores(plugin(no_defaults), owned, cluster(), web_pods(BASE)) == "skip"
    job = make_pod("p").labels(**WEB).owner("Job", "batch")
    assert scores(plugin(), job, cluster(), web_pods(BASE)) == "skip"


def test_statefulset_pods_spread_by_shared_labels() -> None:
    existing = [
        make_pod(f"db-{i}")
        .labels(
            app="db", **{"statefulset.kubernetes.io/pod-name": f"db-{i}", "controller-revision-hash": "h1"}
        )
        .node(n)
        .info()
        for i, n in enumerate(["a1", "a1", "b1"])
    ]
    pod = make_pod("db-3").labels(
        app="db", **{"statefulset.kubernetes.io/pod-name": "db-3", "controller-revision-hash": "h2"}
    )
    got = scores(plugin(), pod.owner("StatefulSet", "db"), cluster(), existing)
    assert isinstance(got, dict)
    # Fewest sibling pods (none on a2 and b2, and zone b has fewer) scores best.
    assert got["b2"][1] == 100 and got["a1"][1] < got["a2"][1] < got["b2"][1]


def test_user_defaulted_list_requires_all_keys() -> None:
    args, _ = decode(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        }
    )
    owned = make_pod("p").labels(**WEB).owner("ReplicaSet", "web-1")
    got = scores(plugin(args), owned, [*cluster(), make_node("c1")], web_pods(BASE))
    assert isinstance(got, dict) and got["c1"] == (IGNORED, 0)


def test_normalize_ignores_marked_nodes() -> None:
    s = np.array([IGNORED, 4, 1, 0], dtype=np.int64)
    normalize(s)
    assert s.tolist() == [0, 0, 75, 100]
    s = np.array([IGNORED, IGNORED], dtype=np.int64)
    normalize(s)
    assert s.tolist() == [0, 0]


def test_spreads_replicas_through_runtime() -> None:
    placed: list[PodInfo] = []
    for i in range(6):
        pod = (
            make_pod(f"w{i}")
            .labels(**WEB)
            .spread(1, ZONE, selector=WEB)
            .spread(1, HOST, "ScheduleAnyway", selector=WEB)
        )
        node = schedule_pod(pod, cluster(), plugins=[PodTopologySpread], existing=placed).node
        placed.append(make_pod(f"w{i}").labels(**WEB).node(node).info())
    per_zone = {"a": 0, "b": 0}
    per_node: dict[str, int] = {}
    for p in placed:
        per_zone[p.node_name[0]] += 1
        per_node[p.node_name] = per_node.get(p.node_name, 0) + 1
    assert per_zone == {"a": 3, "b": 3}
    assert sorted(per_node.values()) == [1, 1, 2, 2]


# ---------------------------------------------------------------- random agreement


def _random_case(rng: random.Random) -> tuple[list[NodeBuilder], list[PodInfo], PodInfo]:
    nodes = []
    for i in range(rng.randint(2, 10)):
        b = make_node(f"n{i}")
        if rng.random() < 0.85:
            b.zone(f"z{rng.randint(0, 3)}")
        if rng.random() < 0.2:
            b.taint("t", "v")
        if rng.random() < 0.5:
            b.label("pool", rng.choice(["x", "y"]))
        nodes.append(b)
    names = [n.info().name for n in nodes]
    pods = []
    for j in range(rng.randint(0, 20)):
        p = make_pod(f"e{j}", rng.choice(["default", "default", "other"])).labels(
            app=rng.choice(["web", "db"])
        )
        if rng.random() < 0.1:
            p.set("metadata.deletionTimestamp", "2024-01-01T00:00:00Z")
        pods.append(p.node(rng.choice(names)).info())
    pod = make_pod("incoming").labels(app=rng.choice(["web", "db"]))
    for _ in range(rng.randint(1, 2)):
        extra: dict[str, Any] = {}
        if rng.random() < 0.3:
            extra["minDomains"] = rng.randint(1, 5)
        if rng.random() < 0.3:
            extra["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.3:
            extra["nodeAffinityPolicy"] = "Ignore"
        when = rng.choice(["DoNotSchedule", "ScheduleAnyway"])
        if when == "ScheduleAnyway":
            extra.pop("minDomains", None)
        pod.spread(
            rng.randint(1, 3),
            rng.choice([ZONE, HOST]),
            when,
            selector={"app": rng.choice(["web", "db"])},
            **extra,
        )
    if rng.random() < 0.3:
        pod.node_selector(pool="x")
    return nodes, pods, pod.info()


def _brute_force(pod: PodInfo, nodes: list[NodeInfo]) -> dict[str, Any]:
    """kube's Filter over plain dicts, recounting everything."""
    hard = [c for c in pod.topology_spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
    out: dict[str, Any] = {}
    counts: list[dict[str, int]] = []
    for c in hard:
        per: dict[str, int] = {}
        for n in nodes:
            if any(h.topology_key not in n.labels for h in hard):
                continue
            if c.node_affinity_policy == "Honor" and any(
                n.labels.get(k) != v for k, v in pod.node_selector.items()
            ):
                continue
            if c.node_taints_policy == "Honor" and any(
                t.effect in ("NoSchedule", "NoExecute")
                and not any(tol.tolerates(t) for tol in pod.tolerations)
                for t in n.taints
            ):
                continue
            sel = dict(c.label_selector.match_labels) if c.label_selector else None
            k = sum(
                1
                for p in n.pods.values()
                if sel is not None
                and not p.deleting
                and p.namespace == pod.namespace
                and all(p.labels.get(a) == b for a, b in sel.items())
            )
            value = n.labels[c.topology_key]
            per[value] = per.get(value, 0) + k
        counts.append(per)
    for n in nodes:
        verdict: Any = OK
        for c, per in zip(hard, counts, strict=True):
            v = n.labels.get(c.topology_key)
            if v is None:
                verdict = LABEL
                break
            low = 0 if len(per) < (c.min_domains or 1) else min(per.values())
            own = int(
                c.label_selector is not None
                and all(pod.labels.get(a) == b for a, b in c.label_selector.match_labels)
            )
            if per.get(v, 0) + own - low > c.max_skew:
                verdict = SKEW
                break
        out[n.name] = verdict
    return out


@pytest.mark.parametrize("seed", range(80))
def test_random_clusters_agree(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods, pod = _random_case(rng)
    got = verdicts(plugin(), pod, nodes, pods)
    if set(got.values()) != {"skip"}:
        assert got == _brute_force(pod, infos(nodes, pods))
    scores(plugin(), pod, nodes, pods)
    names = [n.name for n in infos(nodes, pods)]
    subset = [n for n in names if rng.random() < 0.6] or names[:1]
    scores(plugin(), pod, nodes, pods, only=subset)


def test_readme_example_loads() -> None:
    import pathlib
    import re

    from netsched.config.load import load_config
    from netsched.framework.registry import Registry
    from netsched.testing.framework import FifoSort, NoopBinder

    class PrioritySort(FifoSort):
        name = "PrioritySort"

    class DefaultBinder(NoopBinder):
        name = "DefaultBinder"

    readme = pathlib.Path(__file__).parents[2] / "plugins" / "pod_topology_spread" / "README.md"
    (example,) = re.findall(r"```yaml\n(.*?)```", readme.read_text(), re.S)
    cfg = load_config(example, Registry([PodTopologySpread, PrioritySort, DefaultBinder]))
    assert isinstance(cfg.profiles[0].plugin_config["PodTopologySpread"], PodTopologySpreadArgs)
