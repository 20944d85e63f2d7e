"""InterPodAffinity against kube's own cases.

Ported from kubernetes/kubernetes
pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go
(TestRequiredAffinitySingleNode).  One node "machine1" (region r1, zone z11);
existing pods on machine1 unless noted.  kube's older versions add the generic
reason "node(s) didn't match pod affinity/anti-affinity rules" before the
specific one; newer versions report only the specific reason, as netsched does,
so the tables assert the code and the specific reason.  Where kube's versions
disagree (symmetry checks b1/b2) the newest test is followed.
Two kube cases give a term no topologyKey, which the API server has rejected
since required terms need one; they use topologyKey "region" here (same outcome:
no pod in any domain matches).
"""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import UNRES, UNSCHED, knode, kpod, run_filter

from netsched.plugins.inter_pod_affinity import InterPodAffinity
from netsched.plugins.inter_pod_affinity.filtering import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)

SCAN = {"service": "securityscan"}
S1 = {"security": "S1"}


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)} if values else {"key": key, "operator": op}


def term(topology: str, *exprs: dict[str, Any], namespaces: list[str] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": topology}
    if namespaces is not None:
        t["namespaces"] = namespaces
    return t


def affinity(
    aff: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if aff:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": aff}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return out


IN_SCAN = req("service", "In", "securityscan", "value2")
IN_AV = req("service", "In", "antivirusscan", "value2")

# (name, pod labels, pod affinity, existing pods [(labels, node, affinity, namespace)], want)
CASES: list[
    tuple[str, dict[str, str], dict[str, Any], list[tuple[dict[str, str], str, dict[str, Any], str]], Any]
] = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        {},
        {},
        [],
        None,
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
        S1,
        affinity([term("region", IN_SCAN)]),
        [(SCAN, "machine1", {}, "default")],
        None,
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
        S1,
        affinity([term("region", req("service", "NotIn", "securityscan3", "value3"))]),
        [(SCAN, "machine1", {}, "default")],
        None,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        S1,
        affinity([term("region", IN_SCAN, namespaces=["DiffNameSpace"])]),
        [(SCAN, "machine1", {}, "ns")],
        (UNRES, REASON_AFFINITY),
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        SCAN,
        affinity([term("region", IN_AV)]),
        [(SCAN, "machine1", {}, "default")],
        (UNRES, REASON_AFFINITY),
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution",
        S1,
        affinity(
            [
                term("region", req("service", "Exists"), req("wrongkey", "DoesNotExist")),
                term("region", req("service", "In", "securityscan"), req("service", "NotIn", "WrongValue")),
            ]
        ),
        [(SCAN, "machine1", {}, "default")],
        None,
    ),
    (
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
        S1,
        affinity(
            [
                term("region", req("service", "Exists"), req("wrongkey", "DoesNotExist")),
                term("region", req("service", "In", "securityscan2"), req("service", "NotIn", "WrongValue")),
            ]
        ),
        [(SCAN, "machine1", {}, "default")],
        (UNRES, REASON_AFFINITY),
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        S1,
        affinity([term("region", IN_SCAN)], [term("node", IN_AV)]),
        [(SCAN, "machine1", {}, "default")],
        None,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        S1,
        affinity([term("region", IN_SCAN)], [term("node", IN_AV)]),
        [(SCAN, "machine1", affinity(None, [term("node", IN_AV)]), "default")],
        None,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        S1,
        affinity([term("region", IN_SCAN)], [term("zone", IN_SCAN)]),
        [(SCAN, "machine1", {}, "default")],
        (UNSCHED, REASON_ANTI_AFFINITY),
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        SCAN,
        affinity([term("region", IN_SCAN)], [term("node", IN_AV)]),
        [(SCAN, "machine1", affinity(None, [term("zone", IN_SCAN)]), "default")],
        (UNSCHED, REASON_EXISTING_ANTI_AFFINITY),
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        SCAN,
        affinity([term("region", req("service", "NotIn", "securityscan", "value2"))]),
        [(SCAN, "machine2", {}, "default")],
        (UNRES, REASON_AFFINITY),
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        SCAN,
        {},
        [(SCAN, "machine1", affinity(None, [term("zone", IN_SCAN)]), "default")],
        (UNSCHED, REASON_EXISTING_ANTI_AFFINITY),
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        SCAN,
        {},
        [
            (
                SCAN,
                "machine1",
                affinity(None, [term("zone", req("service", "NotIn", "securityscan", "value2"))]),
                "default",
            )
        ],
        None,
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
        SCAN,
        affinity(None, [term("region", req("service", "Exists")), term("region", req("security", "Exists"))]),
        [(S1, "machine1", affinity(None, [term("zone", req("security", "Exists"))]), "default")],
        (UNSCHED, REASON_ANTI_AFFINITY),
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
        SCAN,
        affinity(None, [term("zone", req("service", "Exists")), term("zone", req("security", "Exists"))]),
        [(S1, "machine1", affinity(None, [term("zone", req("security", "Exists"))]), "default")],
        (UNSCHED, REASON_ANTI_AFFINITY),
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
        S1,
        affinity(None, [term("zone", req("security", "Exists"))]),
        [
            (
                SCAN,
                "machine1",
                affinity(
                    None, [term("zone", req("service", "Exists")), term("zone", req("security", "Exists"))]
                ),
                "default",
            )
        ],
        (UNSCHED, REASON_EXISTING_ANTI_AFFINITY),
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
        {"abc": "", "xyz": ""},
        affinity(None, [term("zone", req("abc", "Exists")), term("zone", req("def", "Exists"))]),
        [
            (
                {"def": "", "xyz": ""},
                "machine1",
                affinity(None, [term("zone", req("abc", "Exists")), term("zone", req("def", "Exists"))]),
                "default",
            )
        ],
        (UNSCHED, REASON_ANTI_AFFINITY),  # newest kube; older: existing,
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
        {"def": "", "xyz": ""},
        affinity(None, [term("zone", req("abc", "Exists")), term("zone", req("def", "Exists"))]),
        [
            (
                {"abc": "", "xyz": ""},
                "machine1",
                affinity(None, [term("zone", req("abc", "Exists")), term("zone", req("def", "Exists"))]),
                "default",
            )
        ],
        (UNSCHED, REASON_ANTI_AFFINITY),  # newest kube; older: existing,
    ),
]


@pytest.mark.parametrize(
    ("labels", "aff", "existing", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_required_affinity_single_node(labels: Any, aff: Any, existing: Any, want: Any) -> None:
    nodes = [knode("machine1", labels={"region": "r1", "zone": "z11"})]
    if any(n == "machine2" for _, n, _, _ in existing):
        nodes.append(knode("machine2"))  # kube's snapshot holds the pod's node too (not filtered here)
    pods = [
        kpod(labels=ls, node=n, namespace=ns, **({"affinity": a} if a else {})) for ls, n, a, ns in existing
    ]
    pod = kpod(labels=labels, **({"affinity": aff} if aff else {}))
    got = run_filter(InterPodAffinity, pod, nodes, pods)["machine1"]
    if want is None:
        assert got is None
    else:
        assert got is not None and got[0] == want[0] and want[1] in got[1], got


# ---------------------------------------------------------------- TestRequiredAffinityMultipleNodes

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
ANTI = (UNSCHED, REASON_ANTI_AFFINITY)

# (name, pod (labels, namespace, affinity), existing [(labels, node, affinity, namespace)], nodes [(name, labels)], wants)
MULTI: list[
    tuple[
        str,
        tuple[dict[str, str], str, dict[str, Any]],
        list[Any],
        list[tuple[str, dict[str, str]]],
        list[Any],
    ]
] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
        ({}, "default", affinity([term("region", req("foo", "In", "bar"))])),
        [({"foo": "bar"}, "machine1", {}, "default")],
        [("machine1", CHINA), ("machine2", CHINA_AZ1), ("machine3", INDIA)],
        [None, None, (UNRES, REASON_AFFINITY)],
    ),
    (
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
        (
            {"foo": "bar", "service": "securityscan"},
            "default",
            affinity(
                [term("zone", req("foo", "In", "bar")), term("zone", req("service", "In", "securityscan"))]
            ),
        ),
        [({"foo": "bar"}, "nodeA", {}, "default")],
        [("nodeA", {"zone": "az1", "hostname": "h1"}), ("nodeB", {"zone": "az2", "hostname": "h2"})],
        [None, None],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        ({}, "default", affinity(None, [term("region", req("foo", "In", "abc"))])),
        [({"foo": "abc"}, "nodeA", {}, "default")],
        [("nodeA", {"region": "r1", "hostname": "nodeA"}), ("nodeB", {"region": "r1", "hostname": "nodeB"})],
        [ANTI, ANTI],
    ),
    (
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
        (
            {},
            "default",
            affinity(
                None,
                [term("region", req("foo", "In", "abc")), term("zone", req("service", "In", "securityscan"))],
            ),
        ),
        [({"foo": "abc", "service": "securityscan"}, "nodeA", {}, "default")],
        [
            ("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            ("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        ],
        [ANTI, ANTI],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
        ({}, "default", affinity(None, [term("region", req("foo", "In", "abc"))])),
        [({"foo": "abc"}, "nodeA", {}, "default")],
        [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)],
        [ANTI, ANTI, None],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        ({"foo": "123"}, "NS1", affinity(None, [term("region", req("foo", "In", "bar"))])),
        [
            ({"foo": "bar"}, "nodeA", {}, "NS1"),
            ({}, "nodeC", affinity(None, [term("region", req("foo", "In", "123"))]), "NS2"),
        ],
        [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)],
        [ANTI, ANTI, None],
    ),
    (
        "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
        (
            {"foo": "bar", "service": "securityscan"},
            "default",
            affinity(
                [term("zone", req("foo", "In", "bar")), term("zone", req("service", "In", "securityscan"))]
            ),
        ),
        [({"foo": "bar"}, "nodeA", {}, "default")],
        [
            ("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            ("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        [(UNRES, REASON_AFFINITY), (UNRES, REASON_AFFINITY)],
    ),
    (
        "existing pod's anti-affinity term with a topology key no node has matches nothing",
        ({"foo": ""}, "default", {}),
        [({}, "nodeA", affinity(None, [term("invalid-node-label", req("foo", "Exists"))]), "default")],
        [
            ("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            ("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"}),
        ],
        [None, None],
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "nodes", "wants"), [c[1:] for c in MULTI], ids=[c[0] for c in MULTI]
)
def test_required_affinity_multiple_nodes(pod: Any, existing: Any, nodes: Any, wants: list[Any]) -> None:
    infos = [knode(n, labels=ls, hostname_label=False) for n, ls in nodes]
    pods = [
        kpod(labels=ls, node=n, namespace=ns, **({"affinity": a} if a else {})) for ls, n, a, ns in existing
    ]
    labels, ns, aff = pod
    got = run_filter(
        InterPodAffinity, kpod(labels=labels, namespace=ns, **({"affinity": aff} if aff else {})), infos, pods
    )
    for (name, _), want in zip(nodes, wants, strict=True):
        if want is None:
            assert got[name] is None, name
        else:
            assert got[name] is not None and got[name][0] == want[0] and want[1] in got[name][1], (
                name,
                got[name],
            )


# ---------------------------------------------------------------- namespaceSelector and label syntax (newest test)

NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
}
TEAM1 = {"matchExpressions": [req("team", "In", "team1")]}

NS_CASES = [
    (
        "affinity with NamespaceSelector",
        "default",
        affinity([{**term("region", IN_SCAN), "namespaceSelector": TEAM1}]),
        "subteam1.team1",
        None,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        "default",
        affinity([{**term("region", IN_SCAN), "namespaceSelector": TEAM1}]),
        "subteam1.team2",
        (UNRES, REASON_AFFINITY),
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        "subteam1.team1",
        affinity(None, [{**term("zone", IN_SCAN), "namespaceSelector": TEAM1}]),
        "subteam2.team1",
        (UNSCHED, REASON_ANTI_AFFINITY),
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        "subteam1.team1",
        affinity(None, [{**term("zone", IN_SCAN), "namespaceSelector": {}}]),
        "subteam2.team1",
        (UNSCHED, REASON_ANTI_AFFINITY),
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        "subteam1.team1",
        affinity(None, [{**term("zone", IN_SCAN), "namespaceSelector": TEAM1}]),
        "subteam1.team2",
        None,
    ),
]


@pytest.mark.parametrize(
    ("ns", "aff", "existing_ns", "want"), [c[1:] for c in NS_CASES], ids=[c[0] for c in NS_CASES]
)
def test_namespace_selector(ns: str, aff: Any, existing_ns: str, want: Any) -> None:
    nodes = [knode("node1", labels={"region": "r1", "zone": "z11"})]
    pods = [kpod(labels=SCAN, node="node1", namespace=existing_ns)]
    got = run_filter(
        InterPodAffinity, kpod(labels=S1, namespace=ns, affinity=aff), nodes, pods, namespaces=NAMESPACES
    )["node1"]
    if want is None:
        assert got is None
    else:
        assert got is not None and got[0] == want[0] and want[1] in got[1], got


def test_invalid_label_value_in_affinity_term_is_unresolvable() -> None:
    """kube: "PodAffinity fails PreFilter with an invalid affinity label syntax" -> PreFilter
    UnschedulableAndUnresolvable.  MARKED DIFFERENCE: netsched accepts the term and it matches
    no pod, so Filter rejects every node UnschedulableAndUnresolvable; the outcome for the pod
    (unschedulable, preemption skipped) is the same, the reason text differs."""
    nodes = [knode("node1", labels={"region": "r1", "zone": "z11"})]
    pod = kpod(
        labels=SCAN,
        affinity=affinity([term("region", req("service", "In", "{{.bad-value.}}")), term("node", IN_AV)]),
    )
    got = run_filter(InterPodAffinity, pod, nodes, [kpod(labels=SCAN, node="node1")])["node1"]
    assert got is not None and got[0] == UNRES


# ---------------------------------------------------------------- scoring_test.go (TestPreferredAffinity)


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def preferred(
    aff: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if aff:
        out["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": aff}
    if anti:
        out["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": anti}
    return out


S1_ = {"security": "S1"}
S2_ = {"security": "S2"}
RG_CHINA, RG_INDIA = {"region": "China"}, {"region": "India"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
STAY_S1_REGION = preferred([weighted(5, term("region", req("security", "In", "S1")))])
STAY_S2_REGION = preferred([weighted(6, term("region", req("security", "In", "S2")))])
AFFINITY3 = preferred(
    [
        weighted(8, term("region", req("security", "NotIn", "S1"), req("security", "In", "S2"))),
        weighted(2, term("region", req("security", "Exists"), req("wrongkey", "DoesNotExist"))),
    ]
)
HARD = affinity(
    [
        term("region", req("security", "In", "S1", "value2")),
        term("region", req("security", "Exists"), req("wrongkey", "DoesNotExist")),
    ]
)
AWAY_S1_AZ = preferred(None, [weighted(5, term("az", req("security", "In", "S1")))])
AWAY_S2_AZ = preferred(None, [weighted(5, term("az", req("security", "In", "S2")))])
STAY_S1_AWAY_S2 = {
    **preferred([weighted(8, term("region", req("security", "In", "S1")))]),
    **preferred(None, [weighted(5, term("az", req("security", "In", "S2")))]),
}
NS_SEL = {"namespaces": ["subteam2.team2"], "namespaceSelector": TEAM1}
AFF_NS = preferred([weighted(5, {**term("region", req("security", "In", "S1")), **NS_SEL})])
ANTI_NS = preferred(None, [weighted(5, {**term("region", req("security", "In", "S1")), **NS_SEL})])
NAMESPACES_ALL = {**NAMESPACES, "subteam2.team2": {"team": "team2"}}

# (name, pod (labels, affinity, namespace), existing [(labels, node, affinity, namespace)], nodes, want)
PREFERRED: list[
    tuple[
        str,
        tuple[dict[str, str], dict[str, Any], str],
        list[Any],
        list[tuple[str, dict[str, str]]],
        list[int],
    ]
] = [
    (
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others which doesn't match either pods in nodes or in topology key",
        (S1_, STAY_S1_REGION, "default"),
        [(S1_, "node1", {}, "default"), (S2_, "node2", {}, "default"), (S1_, "node3", {}, "default")],
        [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)],
        [100, 0, 0],
    ),
    (
        "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
        ({}, STAY_S1_REGION, "default"),
        [(S1_, "node1", {}, "default")],
        [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)],
        [100, 100, 0],
    ),
    (
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
        (S1_, STAY_S2_REGION, "default"),
        [(S2_, n, {}, "default") for n in ("node1", "node1", "node2", "node3", "node4", "node5")],
        [
            ("node1", RG_CHINA),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ],
        [100, 0, 100, 100, 0],
    ),
    (
        "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures",
        (S1_, AFFINITY3, "default"),
        [(S1_, "node1", {}, "default"), (S2_, "node2", {}, "default"), (S1_, "node3", {}, "default")],
        [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)],
        [20, 100, 0],
    ),
    (
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        (S2_, {}, "default"),
        [(S1_, "node1", STAY_S1_REGION, "default"), (S2_, "node2", STAY_S2_REGION, "default")],
        [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)],
        [0, 100, 0],
    ),
    (
        "Affinity symmetry with namespace selector",
        (S1_, {}, "subteam1.team1"),
        [(S1_, "node1", AFF_NS, "default"), (S2_, "node2", STAY_S2_REGION, "default")],
        [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)],
        [100, 0, 0],
    ),
    (
        "AntiAffinity symmetry with namespace selector",
        (S1_, {}, "subteam1.team1"),
        [(S1_, "node1", ANTI_NS, "default"), (S2_, "node2", STAY_S2_REGION, "default")],
        [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)],
        [0, 100, 100],
    ),
    (
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        (S1_, {}, "default"),
        [(S1_, "node1", HARD, "default"), (S2_, "node2", HARD, "default")],
        [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)],
        [100, 100, 0],
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score",
        (S1_, AWAY_S1_AZ, "default"),
        [(S1_, "node1", {}, "default"), (S2_, "node2", {}, "default")],
        [("node1", AZ1), ("node2", RG_CHINA)],
        [0, 100],
    ),
    (
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others",
        (S1_, AWAY_S1_AZ, "default"),
        [(S1_, "node1", {}, "default"), (S1_, "node2", {}, "default")],
        [("node1", AZ1), ("node2", RG_CHINA)],
        [0, 100],
    ),
    (
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
        (S1_, AWAY_S1_AZ, "default"),
        [(S1_, "node1", {}, "default"), (S1_, "node1", {}, "default"), (S2_, "node2", {}, "default")],
        [("node1", AZ1), ("node2", RG_INDIA)],
        [0, 100],
    ),
    (
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        (S2_, {}, "default"),
        [(S1_, "node1", AWAY_S2_AZ, "default"), (S2_, "node2", AWAY_S1_AZ, "default")],
        [("node1", AZ1), ("node2", AZ2)],
        [0, 100],
    ),
    (
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
        (S1_, STAY_S1_AWAY_S2, "default"),
        [(S1_, "node1", {}, "default"), (S1_, "node2", {}, "default")],
        [("node1", RG_CHINA), ("node2", AZ1)],
        [100, 0],
    ),
    (
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
        (S1_, STAY_S1_AWAY_S2, "default"),
        [(S1_, n, {}, "default") for n in ("node1", "node1", "node2", "node3", "node3", "node4", "node5")],
        [
            ("node1", RG_CHINA_AZ1),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ],
        [100, 0, 100, 100, 0],
    ),
    (
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
        (S1_, STAY_S1_AWAY_S2, "default"),
        [
            (S1_, "node1", {}, "default"),
            (S2_, "node2", {}, "default"),
            ({}, "node3", STAY_S1_AWAY_S2, "default"),
            ({}, "node4", AWAY_S1_AZ, "default"),
        ],
        [("node1", RG_CHINA), ("node2", AZ1), ("node3", RG_INDIA), ("node4", AZ2)],
        [100, 0, 100, 0],
    ),
    (
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        (S1_, {}, "default"),
        [(S1_, "node1", {}, "default"), ({}, "node2", STAY_S1_AWAY_S2, "default")],
        [("node1", RG_CHINA), ("node2", RG_CHINA)],
        [0, 0],
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "nodes", "want"), [c[1:] for c in PREFERRED], ids=[c[0] for c in PREFERRED]
)
def test_preferred_affinity(pod: Any, existing: Any, nodes: Any, want: list[int]) -> None:
    from kube_cases import run_score

    infos = [knode(n, labels=ls, hostname_label=False) for n, ls in nodes]
    pods = [
        kpod(labels=ls, node=n, namespace=ns, **({"affinity": a} if a else {})) for ls, n, a, ns in existing
    ]
    labels, aff, ns = pod
    incoming = kpod(labels=labels, namespace=ns, **({"affinity": aff} if aff else {}))
    got = run_score(InterPodAffinity, incoming, infos, pods, namespaces=NAMESPACES_ALL)
    assert list(got.values()) == want


def test_pre_score_skips_without_any_affinity() -> None:
    """kube: "all nodes are same priority as Affinity is nil" -> PreScore Skip."""
    from kube_cases import snapshot

    from netsched.framework.cycle_state import CycleState
    from netsched.testing.framework import build_plugin

    snap = snapshot(
        [knode("node1", labels=RG_CHINA), knode("node2", labels=RG_INDIA), knode("node3", labels=AZ1)]
    )
    plugin = build_plugin(InterPodAffinity, snapshot=snap)
    assert plugin.pre_score(CycleState(), kpod(labels=S1_), snap, snap.all_rows).is_skip


@pytest.mark.parametrize(
    "anti", [False, True], ids=["invalid Affinity fails PreScore", "invalid AntiAffinity fails PreScore"]
)
def test_invalid_preferred_term(anti: bool) -> None:
    """kube: PreScore returns Error `Invalid value: "{{.bad-value.}}"`.  MARKED DIFFERENCE
    (plugins/inter_pod_affinity/README.md): netsched scores the term as matching nothing."""
    from kube_cases import run_score

    bad = weighted(
        8 if not anti else 5, term("region" if not anti else "az", req("security", "In", "{{.bad-value.}}"))
    )
    aff = preferred(None, [bad]) if anti else preferred([bad])
    nodes = [
        knode("node1", labels=RG_CHINA, hostname_label=False),
        knode("node2", labels=RG_CHINA, hostname_label=False),
    ]
    assert run_score(
        InterPodAffinity,
        kpod(affinity=aff),
        nodes,
        [kpod(labels=S1_, node="node1")],
    ) == {
        "node1": 0,
        "node2": 0,
    }
