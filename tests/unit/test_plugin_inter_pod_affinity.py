"""InterPodAffinity: required/preferred (anti-)affinity, symmetry, args, per-node vs batch agreement."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.pod_index import LookalikePods, PodIndex, label_codes
from netsched.framework.search import FitError
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.plugins.inter_pod_affinity import InterPodAffinity, InterPodAffinityArgs
from netsched.plugins.inter_pod_affinity.filtering import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)
from netsched.testing.agreement import filter_verdicts, score_outcomes
from netsched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin, schedule_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

OK = "ok"
AFF = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY)
ANTI = (Code.UNSCHEDULABLE, REASON_ANTI_AFFINITY)
EXISTING = (Code.UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY)


def infos(nodes: Sequence[Any], pods: Sequence[Any] = ()) -> list[NodeInfo]:
    """node_infos over any sequences of builders/records (its list parameters are invariant)."""
    return node_infos(list(nodes), list(pods))


def term(labels: Mapping[str, str] | None, key: str = ZONE, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": key}
    if labels is not None:
        t["labelSelector"] = {"matchLabels": dict(labels)}
    t.update(extra)
    return t


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind: str, *weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in weighted
            ]
        }
    }


def merged(*parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        for kind, v in part.items():
            out.setdefault(kind, {}).update(v)
    return out


def zoned(n: int, zones: int = 2) -> list[NodeBuilder]:
    return [make_node(f"n{i}").zone(f"z{i % zones}") for i in range(n)]


def plugin(namespaces: Mapping[str, Mapping[str, str]] | None = None, **args: Any) -> InterPodAffinity:
    """Built by a real Framework whose Handle knows the given namespace labels."""
    return build_plugin(InterPodAffinity, InterPodAffinityArgs(**args), namespaces=namespaces)


def verdicts(
    pl: InterPodAffinity,
    pod: PodInfo | PodBuilder,
    nodes: Sequence[NodeInfo | NodeBuilder],
    existing: Sequence[Any] = (),
) -> dict[str, Any]:
    """node -> OK | (code, reason) | "skip", checking per-node filter() and batch filter_nodes() agree."""
    return filter_verdicts(pl, pod, nodes, existing)


def scores(
    pl: InterPodAffinity,
    pod: PodInfo | PodBuilder,
    nodes: Sequence[NodeInfo | NodeBuilder],
    existing: Sequence[Any] = (),
) -> dict[str, tuple[int, int]] | str:
    """node -> (raw, normalised), checking score() and score_nodes() agree; "skip" when PreScore skips."""
    pi = pod.info() if isinstance(pod, PodBuilder) else pod
    snap = Snapshot.of(infos(list(nodes), list(existing)))
    state = CycleState()
    st = pl.pre_score(state, pi, snap, snap.all_rows)
    if st.is_skip:
        return "skip"
    assert st.ok, st
    raw = score_outcomes(pl, pi, snap, state=state)
    norm = np.asarray(raw, dtype=np.int64)
    pl.normalize_scores(state, pi, norm)
    return {n.name: (r, int(s)) for n, r, s in zip(snap.nodes, raw, norm, strict=True)}


WEB = {"app": "web"}


# ---------------------------------------------------------------- args


def test_args_defaults_and_round_trip() -> None:
    a = InterPodAffinityArgs.default()
    assert (a.hard_pod_affinity_weight, a.ignore_preferred_terms_of_existing_pods) == (1, False)
    errs = ErrorList()
    b = InterPodAffinityArgs.decode(
        Fields({"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True}, "args", errs)
    )
    assert not errs
    assert InterPodAffinityArgs.decode(Fields(b.encode(), "args", ErrorList())) == b


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            {"hardPodAffinityWeight": -1},
            "args.hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            {"hardPodAffinityWeight": 101},
            "args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            {"hardPodAffinityWeight": "x"},
            'args.hardPodAffinityWeight: Invalid value: "x": must be an integer',
        ),
        (
            {"ignorePreferredTermsOfExistingPods": 1},
            "args.ignorePreferredTermsOfExistingPods: Invalid value: 1: must be true or false",
        ),
        (
            {"hardPodAfinityWeight": 1},
            "args.hardPodAfinityWeight: Unknown field: not a field of this object (typo?)",
        ),
    ],
)
def test_args_errors_name_the_field(raw: dict[str, Any], want: str) -> None:
    errs = ErrorList()
    InterPodAffinityArgs.decode(Fields(raw, "args", errs))
    assert [str(e) for e in errs] == [want]


def test_zero_hard_weight_is_valid() -> None:
    errs = ErrorList()
    assert (
        InterPodAffinityArgs.decode(Fields({"hardPodAffinityWeight": 0}, "a", errs)).hard_pod_affinity_weight
        == 0
    )
    assert not errs


# ---------------------------------------------------------------- filter


def test_pod_without_affinity_skips_when_no_existing_anti_affinity() -> None:
    existing = [make_pod("w").labels(**WEB).node("n0")]
    assert set(verdicts(plugin(), make_pod("p"), zoned(2), existing).values()) == {"skip"}


def test_required_affinity_by_zone() -> None:
    nodes = [*zoned(4), make_node("bare")]
    existing = [make_pod("w").labels(**WEB).node("n1")]
    pod = make_pod("p").affinity(required("podAffinity", term(WEB)))
    assert verdicts(plugin(), pod, nodes, existing) == {"n0": AFF, "n1": OK, "n2": AFF, "n3": OK, "bare": AFF}


def test_required_affinity_all_terms_must_match_the_same_pod() -> None:
    existing = [make_pod("a").labels(app="web").node("n0"), make_pod("b").labels(tier="fe").node("n1")]
    pod = make_pod("p").affinity(required("podAffinity", term(WEB, HOST), term({"tier": "fe"}, HOST)))
    # No single pod matches both terms, and the pod does not match them itself.
    assert verdicts(plugin(), pod, zoned(2), existing) == {"n0": AFF, "n1": AFF}
    existing.append(make_pod("c").labels(app="web", tier="fe").node("n1"))
    assert verdicts(plugin(), pod, zoned(2), existing) == {"n0": AFF, "n1": OK}


def test_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_key() -> None:
    nodes = [*zoned(3), make_node("bare")]
    pod = make_pod("p").labels(**WEB).affinity(required("podAffinity", term(WEB)))
    assert verdicts(plugin(), pod, nodes) == {"n0": OK, "n1": OK, "n2": OK, "bare": AFF}
    # Not self-matching: no exception.
    other = make_pod("q").labels(app="db").affinity(required("podAffinity", term(WEB)))
    assert verdicts(plugin(), other, nodes) == {"n0": AFF, "n1": AFF, "n2": AFF, "bare": AFF}
    # Once a matching pod exists anywhere, the exception no longer applies.
    existing = [make_pod("w").labels(**WEB).node("n0")]
    assert verdicts(plugin(), pod, nodes, existing) == {"n0": OK, "n1": AFF, "n2": OK, "bare": AFF}


def test_required_anti_affinity() -> None:
    nodes = [*zoned(4), make_node("bare")]
    existing = [make_pod("w").labels(**WEB).node("n0")]
    pod = make_pod("p").affinity(required("podAntiAffinity", term(WEB)))
    # A node without the key cannot conflict.
    assert verdicts(plugin(), pod, nodes, existing) == {
        "n0": ANTI,
        "n1": OK,
        "n2": ANTI,
        "n3": OK,
        "bare": OK,
    }


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    guard = (
        make_pod("guard").labels(app="db").affinity(required("podAntiAffinity", term(WEB, HOST))).node("n2")
    )
    web = make_pod("p").labels(**WEB)
    assert verdicts(plugin(), web, zoned(3), [guard]) == {"n0": OK, "n1": OK, "n2": EXISTING}
    # A pod the guard's term does not select is not affected.
    assert set(verdicts(plugin(), make_pod("q").labels(app="db"), zoned(3), [guard]).values()) == {"skip"}


def test_reasons_in_kube_order() -> None:
    # Node n0 violates both the pod's anti-affinity and an existing pod's: affinity first, then anti.
    existing = [
        make_pod("w").labels(**WEB).node("n0"),
        make_pod("g")
        .labels(app="db")
        .affinity(required("podAntiAffinity", term({"app": "x"}, HOST)))
        .node("n0"),
    ]
    pod = make_pod("p").labels(app="x").affinity(required("podAntiAffinity", term(WEB, HOST)))
    assert verdicts(plugin(), pod, zoned(2), existing) == {"n0": ANTI, "n1": OK}


def test_namespaces_and_default_namespace() -> None:
    existing = [make_pod("w", "other").labels(**WEB).node("n0"), make_pod("v").labels(**WEB).node("n1")]
    own_ns = make_pod("p").affinity(required("podAffinity", term(WEB, HOST)))
    assert verdicts(plugin(), own_ns, zoned(2), existing) == {"n0": AFF, "n1": OK}
    listed = make_pod("p").affinity(required("podAffinity", term(WEB, HOST, namespaces=["other"])))
    assert verdicts(plugin(), listed, zoned(2), existing) == {"n0": OK, "n1": AFF}


def test_namespace_selector_without_and_with_namespace_labels() -> None:
    existing = [
        make_pod("w", "team-a").labels(**WEB).node("n0"),
        make_pod("v", "team-b").labels(**WEB).node("n1"),
    ]
    everything = make_pod("p").affinity(required("podAffinity", term(WEB, HOST, namespaceSelector={})))
    assert verdicts(plugin(), everything, zoned(3), existing) == {"n0": OK, "n1": OK, "n2": AFF}
    team_a = make_pod("p").affinity(
        required("podAffinity", term(WEB, HOST, namespaceSelector={"matchLabels": {"team": "a"}}))
    )
    # The handle has no namespace labels: a non-empty selector selects no namespace.
    assert verdicts(plugin(), team_a, zoned(3), existing) == {"n0": AFF, "n1": AFF, "n2": AFF}

    labelled = {"team-a": {"team": "a"}, "team-b": {"team": "b"}}
    assert verdicts(plugin(labelled), team_a, zoned(3), existing) == {"n0": OK, "n1": AFF, "n2": AFF}


def test_match_and_mismatch_label_keys() -> None:
    existing = [
        make_pod("v1").labels(app="web", version="v1").node("n0"),
        make_pod("v2").labels(app="web", version="v2").node("n1"),
    ]
    same_version = (
        make_pod("p")
        .labels(version="v2")
        .affinity(required("podAffinity", term(WEB, HOST, matchLabelKeys=["version"])))
    )
    assert verdicts(plugin(), same_version, zoned(3), existing) == {"n0": AFF, "n1": OK, "n2": AFF}
    other_versions = (
        make_pod("p")
        .labels(version="v2")
        .affinity(required("podAntiAffinity", term(WEB, HOST, mismatchLabelKeys=["version"])))
    )
    assert verdicts(plugin(), other_versions, zoned(3), existing) == {"n0": ANTI, "n1": OK, "n2": OK}


def test_missing_label_selector_selects_nothing() -> None:
    existing = [make_pod("w").labels(**WEB).node("n0")]
    pod = make_pod("p").affinity(required("podAntiAffinity", term(None, HOST)))
    assert verdicts(plugin(), pod, zoned(2), existing) == {"n0": OK, "n1": OK}


def test_add_and_remove_pod_update_the_state_and_clones_are_independent() -> None:
    w = make_pod("w").labels(**WEB).node("n0").info()
    snap = Snapshot.of(infos(zoned(2), [w]))
    pl = plugin()
    pod = make_pod("p").affinity(required("podAntiAffinity", term(WEB, HOST))).info()
    state = CycleState()
    assert pl.pre_filter(state, pod, snap)[1].ok
    n0 = snap.nodes[0]
    assert pl.filter(state, pod, n0).code == Code.UNSCHEDULABLE
    what_if = state.clone()
    node = n0.clone()
    node.remove_pod(w)
    assert pl.remove_pod(what_if, pod, w, node).ok
    assert pl.filter(what_if, pod, node).ok
    assert pl.filter(state, pod, n0).code == Code.UNSCHEDULABLE  # original untouched
    node.add_pod(w)
    assert pl.add_pod(what_if, pod, w, node).ok
    assert pl.filter(what_if, pod, node).code == Code.UNSCHEDULABLE


def test_removing_the_only_affinity_match_leaves_no_match() -> None:
    w = make_pod("w").labels(**WEB).node("n0").info()
    snap = Snapshot.of(infos(zoned(2), [w]))
    pl = plugin()
    pod = make_pod("p").labels(app="other").affinity(required("podAffinity", term(WEB, HOST))).info()
    state = CycleState()
    pl.pre_filter(state, pod, snap)
    assert pl.filter(state, pod, snap.nodes[0]).ok
    pl.remove_pod(state, pod, w, snap.nodes[0])
    assert pl.filter(state, pod, snap.nodes[0]).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_existing_anti_affinity_added_during_preemption() -> None:
    snap = Snapshot.of(infos(zoned(2)))
    pl = plugin()
    pod = (
        make_pod("p").labels(**WEB).affinity(required("podAntiAffinity", term({"app": "none"}, HOST))).info()
    )
    state = CycleState()
    assert pl.pre_filter(state, pod, snap)[1].ok
    guard = make_pod("g").affinity(required("podAntiAffinity", term(WEB, HOST))).node("n1").info()
    node = snap.nodes[1].clone()
    node.add_pod(guard)
    pl.add_pod(state, pod, guard, node)
    assert pl.filter(state, pod, node) == Status.unschedulable(REASON_EXISTING_ANTI_AFFINITY)


# ---------------------------------------------------------------- score


def test_preferred_terms_of_the_incoming_pod() -> None:
    existing = [make_pod(f"w{i}").labels(**WEB).node(n) for i, n in enumerate(["n0", "n0", "n2"])]
    pod = make_pod("p").affinity(
        merged(
            preferred("podAffinity", (5, term(WEB, ZONE))), preferred("podAntiAffinity", (3, term(WEB, HOST)))
        )
    )
    # zone z0 (n0, n2): +5 x 3 = 15; z1: 0.  hostname: n0 -3 x 2, n2 -3.
    # raw n0 = 9, n1 = 0, n2 = 12, n3 = 0; min 0, max 12.
    assert scores(plugin(), pod, zoned(4), existing) == {
        "n0": (9, 75),
        "n1": (0, 0),
        "n2": (12, 100),
        "n3": (0, 0),
    }


def test_scores_normalise_from_the_minimum() -> None:
    existing = [make_pod(f"w{i}").labels(**WEB).node(n) for i, n in enumerate(["n0", "n0", "n1"])]
    pod = make_pod("p").affinity(
        merged(
            preferred("podAffinity", (5, term(WEB, ZONE))), preferred("podAntiAffinity", (3, term(WEB, HOST)))
        )
    )
    # z0 = {n0, n2}: +10, z1 = {n1, n3}: +5; n0 -6, n1 -3.  raw 4, 2, 10, 5; (s-2)*100/8.
    assert scores(plugin(), pod, zoned(4), existing) == {
        "n0": (4, 25),
        "n1": (2, 0),
        "n2": (10, 100),
        "n3": (5, 37),
    }


def test_existing_pods_terms_score_the_incoming_pod() -> None:
    loves_web = make_pod("a").affinity(required("podAffinity", term(WEB, ZONE))).node("n0")
    likes_web = make_pod("b").affinity(preferred("podAffinity", (7, term(WEB, HOST)))).node("n1")
    hates_web = make_pod("c").affinity(preferred("podAntiAffinity", (4, term(WEB, HOST)))).node("n3")
    web = make_pod("p").labels(**WEB)
    existing = [loves_web, likes_web, hates_web]
    # hard weight 1 on zone z0 (n0, n2); +7 on n1; -4 on n3 -> raw 1, 7, 1, -4; min -4, max 7.
    assert scores(plugin(), web, zoned(4), existing) == {
        "n0": (1, 45),
        "n1": (7, 100),
        "n2": (1, 45),
        "n3": (-4, 0),
    }
    # hardPodAffinityWeight 10: raw 10, 7, 10, -4.
    got = scores(plugin(hard_pod_affinity_weight=10), web, zoned(4), existing)
    assert got == {"n0": (10, 100), "n1": (7, 78), "n2": (10, 100), "n3": (-4, 0)}
    # 0 turns the required-term bonus off.
    got = scores(plugin(hard_pod_affinity_weight=0), web, zoned(4), existing)
    assert got == {"n0": (0, 36), "n1": (7, 100), "n2": (0, 36), "n3": (-4, 0)}


def test_prescore_skips() -> None:
    likes_web = make_pod("b").affinity(preferred("podAffinity", (7, term(WEB, HOST)))).node("n1")
    # No pod anywhere has affinity and the pod has no preferred terms.
    assert scores(plugin(), make_pod("p").labels(**WEB), zoned(2)) == "skip"
    # ignorePreferredTermsOfExistingPods: existing terms are not looked at.
    assert (
        scores(
            plugin(ignore_preferred_terms_of_existing_pods=True),
            make_pod("p").labels(**WEB),
            zoned(2),
            [likes_web],
        )
        == "skip"
    )
    # Existing terms that do not match the pod contribute nothing: skip as kube does.
    assert scores(plugin(), make_pod("p").labels(app="db"), zoned(2), [likes_web]) == "skip"
    # With its own preferred terms, existing pods' terms still count under ignorePreferred...
    pod = make_pod("p").labels(**WEB).affinity(preferred("podAffinity", (1, term({"app": "none"}, HOST))))
    got = scores(plugin(ignore_preferred_terms_of_existing_pods=True), pod, zoned(2), [likes_web])
    assert got == {"n0": (0, 0), "n1": (7, 100)}


def test_equal_scores_normalise_to_zero() -> None:
    existing = [make_pod("w").labels(**WEB).node("n0")]
    pod = make_pod("p").affinity(preferred("podAffinity", (5, term(WEB, "region"))))
    nodes = [make_node("n0").label("region", "r"), make_node("n1").label("region", "r")]
    assert scores(plugin(), pod, nodes, existing) == {"n0": (5, 0), "n1": (5, 0)}


# ---------------------------------------------------------------- through the runtime


def test_schedule_through_runtime_and_fit_error_text() -> None:
    existing = [make_pod("w").labels(**WEB).node("n0")]
    pod = make_pod("p").labels(**WEB).affinity(required("podAntiAffinity", term(WEB, ZONE)))
    assert schedule_pod(pod, zoned(4), plugins=[InterPodAffinity], existing=existing).node in {"n1", "n3"}
    stuck = make_pod("q").affinity(required("podAffinity", term({"app": "db"}, HOST)))
    with pytest.raises(FitError) as e:
        schedule_pod(stuck, zoned(3), plugins=[InterPodAffinity], existing=existing)
    assert (
        e.value.diagnosis.message() == "0/3 nodes are available: 3 node(s) didn't match pod affinity rules."
    )


def test_spread_by_preferred_anti_affinity_through_runtime() -> None:
    anti = preferred("podAntiAffinity", (100, term(WEB, HOST)))
    placed: list[PodInfo] = []
    for i in range(4):
        pod = make_pod(f"w{i}").labels(**WEB).affinity(anti)
        node = schedule_pod(pod, zoned(4), plugins=[InterPodAffinity], existing=placed).node
        placed.append(make_pod(f"w{i}").labels(**WEB).affinity(anti).node(node).info())
    assert sorted(p.node_name for p in placed) == ["n0", "n1", "n2", "n3"]


# ---------------------------------------------------------------- agreement and index upkeep


def _random_cluster(rng: random.Random) -> tuple[list[NodeBuilder], list[PodInfo]]:
    nodes = []
    for i in range(rng.randint(2, 9)):
        b = make_node(f"n{i}")
        if rng.random() < 0.85:
            b.zone(f"z{rng.randint(0, 2)}")
        if rng.random() < 0.5:
            b.label("rack", f"r{rng.randint(0, 3)}")
        nodes.append(b)
    pods = []
    for j in range(rng.randint(0, 14)):
        p = make_pod(f"e{j}", rng.choice(["default", "default", "other"])).labels(
            app=rng.choice(["web", "db", "cache"])
        )
        roll = rng.random()
        if roll < 0.2:
            p.affinity(
                required(
                    "podAntiAffinity", term({"app": rng.choice(["web", "db"])}, rng.choice([HOST, ZONE]))
                )
            )
        elif roll < 0.35:
            p.affinity(
                preferred(
                    "podAffinity", (rng.randint(1, 100), term({"app": "web"}, rng.choice([ZONE, "rack"])))
                )
            )
        elif roll < 0.45:
            p.affinity(required("podAffinity", term({"app": "cache"}, ZONE)))
        pods.append(p.node(rng.choice(nodes).info().name).info())
    return nodes, pods


def _random_pod(rng: random.Random) -> PodBuilder:
    p = make_pod("incoming").labels(app=rng.choice(["web", "db", "cache"]))
    parts = []
    keys = [HOST, ZONE, "rack"]
    if rng.random() < 0.5:
        parts.append(
            required("podAffinity", term({"app": rng.choice(["web", "db", "cache"])}, rng.choice(keys)))
        )
    if rng.random() < 0.5:
        parts.append(required("podAntiAffinity", term({"app": rng.choice(["web", "db"])}, rng.choice(keys))))
    if rng.random() < 0.5:
        parts.append(preferred("podAffinity", (rng.randint(1, 100), term({"app": "db"}, rng.choice(keys)))))
    if rng.random() < 0.5:
        parts.append(
            preferred("podAntiAffinity", (rng.randint(1, 100), term({"app": "web"}, rng.choice(keys))))
        )
    return p.affinity(merged(*parts)) if parts else p


def _brute_force_filter(pod: PodInfo, nodes: list[NodeInfo]) -> dict[str, Any]:
    """A direct transcription of kube's checks over every pod (no counting state)."""

    def sel(labels_: Mapping[str, str], want: Mapping[str, str]) -> bool:
        return all(labels_.get(k) == v for k, v in want.items())

    def term_ok(t: Any, owner: PodInfo, other: PodInfo) -> bool:
        namespaces = t.namespaces or (owner.namespace,)
        return (
            other.namespace in namespaces
            and t.label_selector is not None
            and sel(other.labels, dict(t.label_selector.match_labels))
        )

    all_pods = [(n, p) for n in nodes for p in n.pods.values()]
    out: dict[str, Any] = {}
    for node in nodes:
        verdict: Any = OK
        aff_terms = pod.required_affinity
        if aff_terms:
            if any(t.topology_key not in node.labels for t in aff_terms):
                verdict = AFF
            else:
                matches_all = [(n, p) for n, p in all_pods if all(term_ok(t, pod, p) for t in aff_terms)]
                found = all(
                    any(n.labels.get(t.topology_key) == node.labels[t.topology_key] for n, _ in matches_all)
                    for t in aff_terms
                )
                self_ok = all(term_ok(t, pod, pod) for t in aff_terms)
                any_match = any(t.topology_key in n.labels for n, _ in matches_all for t in aff_terms)
                if not found and not (self_ok and not any_match):
                    verdict = AFF
        if verdict == OK:
            for t in pod.required_anti_affinity:
                v = node.labels.get(t.topology_key)
                if v is not None and any(
                    n.labels.get(t.topology_key) == v and term_ok(t, pod, p) for n, p in all_pods
                ):
                    verdict = ANTI
        if verdict == OK:
            for n, p in all_pods:
                for t in p.required_anti_affinity:
                    v = n.labels.get(t.topology_key)
                    if v is not None and node.labels.get(t.topology_key) == v and term_ok(t, p, pod):
                        verdict = EXISTING
        out[node.name] = verdict
    return out


@pytest.mark.parametrize("seed", range(60))
def test_random_clusters_per_node_batch_and_brute_force_agree(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = _random_cluster(rng)
    pod = _random_pod(rng).info()
    got = verdicts(plugin(), pod, nodes, pods)
    want = _brute_force_filter(pod, infos(nodes, pods))
    if set(got.values()) == {"skip"}:
        assert set(want.values()) == {OK}
    else:
        assert got == want
    scores(plugin(), pod, nodes, pods)  # per-node and batch scores agree


def test_index_follows_changed_rows() -> None:
    nodes = infos(zoned(3), [make_pod("a").labels(**WEB).node("n0"), make_pod("b").labels(**WEB).node("n1")])
    snap = Snapshot.of(nodes)
    index = PodIndex()
    index.sync(snap)
    web = index.select(None, frozenset({"default"}), lambda g: g.labels.get("app") == "web")
    assert index.row_counts(web).tolist() == [1, 1, 0]
    # The cache swaps in a changed node's clone: the index re-indexes that row only.
    n2 = snap.nodes[2].clone()
    n2.add_pod(make_pod("c").labels(**WEB).node("n2").info())
    n0 = snap.nodes[0].clone()
    n0.remove_pod(next(iter(n0.pods.values())))
    assert snap.set_node(2, n2) and snap.set_node(0, n0)
    index.sync(snap)
    web = index.select(None, frozenset({"default"}), lambda g: g.labels.get("app") == "web")
    assert index.row_counts(web).tolist() == [0, 1, 1]
    fresh = PodIndex()
    fresh.sync(snap)
    assert fresh.row_counts(fresh.select(None, None, lambda g: True)).tolist() == [0, 1, 1]


def test_index_remembers_answers_and_checks_new_groups_only() -> None:
    snap = Snapshot.of(infos(zoned(2), [make_pod("a").labels(**WEB).node("n0")]))
    index = PodIndex()
    index.sync(snap)
    calls: list[str] = []

    def pred(g: Any) -> bool:
        calls.append(g.rep.name)
        return True

    assert len(index.select("k", None, pred)) == 1
    assert len(index.select("k", None, pred)) == 1
    assert calls == ["a"]
    n1 = snap.nodes[1].clone()
    n1.add_pod(make_pod("b").labels(app="db").node("n1").info())
    snap.set_node(1, n1)
    index.sync(snap)
    assert len(index.select("k", None, pred)) == 2
    assert calls == ["a", "b"]


def test_dense_groups_count_like_sparse_ones() -> None:
    nodes = zoned(120, zones=3)
    existing = [make_pod(f"w{i}").labels(**WEB).node(f"n{i % 120}") for i in range(200)]
    snap = Snapshot.of(infos(nodes, existing))
    index = PodIndex()
    index.sync(snap)
    (g,) = index.select(None, None, lambda g: True)
    assert g.dense is not None
    assert index.row_counts([g]).tolist() == [2 if i < 80 else 1 for i in range(120)]
    codes = label_codes(snap, ZONE)
    per_zone = codes.sum_rows(index.row_counts([g]))
    assert {codes.values[c]: int(per_zone[c]) for c in range(codes.size)} == {"z0": 67, "z1": 67, "z2": 66}


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

    readme = pathlib.Path(__file__).parents[2] / "plugins" / "inter_pod_affinity" / "README.md"
    (example,) = re.findall(r"```yaml\n(.*?)```", readme.read_text(), re.S)
    cfg = load_config(example, Registry([InterPodAffinity, PrioritySort, DefaultBinder]))
    assert isinstance(cfg.profiles[0].plugin_config["InterPodAffinity"], InterPodAffinityArgs)


def test_remembered_counts_stay_current() -> None:
    snap = Snapshot.of(infos(zoned(3), [make_pod("a").labels(**WEB).node("n0")]))
    index = PodIndex()
    index.sync(snap)

    def web(g: LookalikePods) -> bool:
        return g.labels.get("app") == "web"

    assert index.select_counts("web", None, web).tolist() == [1, 0, 0]
    # New pods with distinct labels (new groups) and a removed pod, in two syncs.
    n1 = snap.nodes[1].clone()
    for i in range(3):
        n1.add_pod(make_pod(f"s{i}").labels(app="web", pod=f"s{i}").node("n1").info())
    snap.set_node(1, n1)
    index.sync(snap)
    assert index.select_counts("web", None, web).tolist() == [1, 3, 0]
    n0 = snap.nodes[0].clone()
    n0.remove_pod(next(iter(n0.pods.values())))
    n2 = snap.nodes[2].clone()
    n2.add_pod(make_pod("t").labels(**WEB).node("n2").info())
    snap.set_node(0, n0)
    snap.set_node(2, n2)
    index.sync(snap)
    assert index.select_counts("web", None, web).tolist() == [0, 3, 1]
    fresh = PodIndex()
    fresh.sync(snap)
    assert fresh.select_counts(None, None, web).tolist() == [0, 3, 1]


def test_namespace_selector_uses_the_handles_namespace_labels() -> None:
    """A required anti-affinity term with namespaceSelector sees pods of namespaces whose labels match."""
    from netsched.framework.cycle_state import CycleState as _CycleState
    from netsched.framework.snapshot import Snapshot as _Snapshot
    from netsched.plugins.inter_pod_affinity import InterPodAffinity as _IPA
    from netsched.testing.builders import make_node as _node
    from netsched.testing.builders import make_pod as _pod
    from netsched.testing.builders import node_infos as _infos
    from netsched.testing.framework import build_plugin as _build

    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": {"matchLabels": {"team": "payments"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    pod = (
        _pod("web", "frontend")
        .affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
        .info()
    )
    nodes = _infos(
        [_node("n1"), _node("n2")],
        [
            _pod("db-1", "billing").label("app", "db").node("n1"),
            _pod("db-2", "other").label("app", "db").node("n2"),
        ],
    )
    snap = _Snapshot.of(nodes)
    plugin = _build(
        _IPA, namespaces={"billing": {"team": "payments"}, "other": {"team": "search"}}, snapshot=snap
    )
    state = _CycleState()
    _, st = plugin.pre_filter(state, pod, snap)
    assert st.ok
    verdicts = {n.name: plugin.filter(state, pod, n).ok for n in snap.nodes}
    # db-1's namespace is labelled team=payments: n1 is excluded; db-2's is not: n2 is fine.
    assert verdicts == {"n1": False, "n2": True}
