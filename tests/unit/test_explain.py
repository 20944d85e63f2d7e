"""explain(): per-node filter verdicts and per-plugin raw/normalised/weighted scores."""

from __future__ import annotations

import json

from netsched.app import build_registry
from netsched.config import load_config
from netsched.explain import explain
from netsched.framework.snapshot import Snapshot
from netsched.inmemory import InMemoryCluster
from netsched.testing.builders import make_node, make_pod, node_infos

CFG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
"""


def test_explain_matches_the_scheduler_decision() -> None:
    reg = build_registry()
    cluster = InMemoryCluster(load_config(CFG, reg), reg)
    fwk = cluster.frameworks["netsched"]
    nodes = [
        make_node("busy").capacity(cpu="4", memory="8Gi"),
        make_node("idle").capacity(cpu="4", memory="8Gi"),
        make_node("tainted").capacity(cpu="16", memory="32Gi").taint("dedicated", "gpu"),
    ]
    existing = [make_pod("hog").req(cpu="3", memory="6Gi").node("busy")]
    snap = Snapshot.of(node_infos(nodes, existing))
    pod = make_pod("web").scheduler("netsched").req(cpu="500m", memory="512Mi").info()
    ex = explain(fwk, pod, snap)
    by = {n.node: n for n in ex.nodes}
    assert ex.winner == "idle"
    assert not by["tainted"].feasible
    assert by["tainted"].filters["TaintToleration"] == "node(s) had untolerated taint {dedicated: gpu}"
    assert by["busy"].feasible and by["busy"].filters["NodeResourcesFit"] == "passed"
    # Totals are the sums of weighted scores, weights as configured.
    for n in (by["busy"], by["idle"]):
        assert n.total == sum(w for _, _, w in n.scores.values())
        for plugin, (_raw, norm, weighted) in n.scores.items():
            assert weighted == norm * ex.weights[plugin]
    assert by["idle"].scores["NodeResourcesFit"][1] > by["busy"].scores["NodeResourcesFit"][1]
    table = ex.table()
    assert "idle *" in table and "tainted: TaintToleration: node(s) had untolerated taint" in table
    doc = json.loads(ex.to_json())
    assert doc["winner"] == "idle" and len(doc["nodes"]) == 3
    assert json.loads(ex.annotation())["top"][0]["node"] == "idle"


def test_explain_reports_prefilter_rejection() -> None:
    reg = build_registry()
    cluster = InMemoryCluster(load_config(CFG, reg), reg)
    fwk = cluster.frameworks["netsched"]
    snap = Snapshot.of(node_infos([make_node("n1")]))
    pod = make_pod("claims").scheduler("netsched").pvc("data").info()
    ex = explain(fwk, pod, snap)
    assert ex.winner == "" and 'persistentvolumeclaim "data" not found' in ex.message


def test_explainer_never_touches_the_scheduling_framework() -> None:
    """/debug/explain and the annotation run on a replica and a snapshot copy of their own."""
    reg = build_registry()
    cluster = InMemoryCluster(load_config(CFG, reg), reg)
    cluster.add_nodes(
        [make_node("a").capacity(cpu="4", memory="8Gi").obj(), make_node("b").capacity(cpu="8").obj()]
    )
    live = cluster.frameworks["netsched"]
    live_snapshot = live.snapshot()
    pod = make_pod("web").scheduler("netsched").req(cpu="1").info()
    ex = cluster.scheduler.explainer.explain(pod)
    assert ex.winner in ("a", "b") and len(ex.nodes) == 2
    assert live.snapshot() is live_snapshot  # the live handle still serves the scheduler's snapshot
    replica = cluster.scheduler.explainer._replicas.of("netsched")
    assert replica is not live
    pairs = list(
        zip(
            replica.filter_plugins + replica.score_plugins,
            live.filter_plugins + live.score_plugins,
            strict=True,
        )
    )
    assert pairs and all(r is not lv and r.name == lv.name for r, lv in pairs)


def test_explainer_explains_a_bound_pod_as_if_pending() -> None:
    reg = build_registry()
    cluster = InMemoryCluster(load_config(CFG, reg), reg)
    cluster.add_nodes([make_node("a").capacity(cpu="2").obj(), make_node("b").capacity(cpu="2").obj()])
    cluster.add_pod(make_pod("big").scheduler("netsched").req(cpu="2").obj())
    cluster.schedule_pending()
    placed = cluster.placements["default/big"]
    bound = cluster.cache.find_pod("default/big")
    assert bound is not None
    ex = cluster.scheduler.explainer.explain(bound)
    # Taken off its node first, so both nodes fit it again.
    assert all(n.feasible for n in ex.nodes) and placed in {n.node for n in ex.nodes}
