"""InterPodAffinity against kube's own cases.

Ported from kubernetes/kubernetes
pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go
(TestRequiredAffinitySingleNode).  One node "machine1" (region r1, zone z11);
existing pods on machine1 unless noted.  kube's older versions add the generic
reason "node(s) didn't match pod affinity/anti-affinity rules" before the
specific one; newer versions report only the specific reason, as netsched does,
so the tables assert the code and the specific reason.
Two kube cases give a term no topologyKey, which the API server has rejected
since required terms need one; they use topologyKey "region" here (same outcome:
no pod in any domain matches).
"""

from __future__ import annotations

from typing import Any

import pytest

from kube_cases import UNRES, UNSCHED, kpod, knode, run_filter
from plugins.inter_pod_affinity import InterPodAffinity
from plugins.inter_pod_affinity.filtering import (
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
