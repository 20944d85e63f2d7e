"""Deployments, the timeline and the simulated Deployment / ReplicaSet controllers.

Rollouts run through the real scheduler (netsched.inmemory): every pod a
controller creates or deletes goes through InMemoryCluster.add_pod /
delete_pod, which these tests record in order to check kube's invariants at
every single step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from netsched.app import build_registry
from netsched.config import ConfigError
from netsched.framework.parse import parse_pod
from netsched.framework.workload import workload_key
from netsched.inmemory import InMemoryCluster
from netsched.simulate import Report, Run, load_scenario, lower_bounds, simulate
from netsched.simulate.configs import default_profile, example_text
from netsched.simulate.controllers import REPLICASETS_KEY, Controllers
from netsched.simulate.engine import retarget
from netsched.simulate.timeline import LoadChange, PodLoadChange, Rollout, TrafficChange

REGISTRY = build_registry()
DEFAULT = default_profile("netsched", REGISTRY)

WEB = """
nodes: "4 nodes, 8 cpu, 16Gi, 1 Gbit"
pods:
  - {{count: {replicas}, deployment: web, cpu: 200m, labels: {{app: web}}}}
  - {{count: 2, namePrefix: bare, cpu: 100m}}
timing: {{arrivalRatePerSecond: 10, podStartSeconds: 5}}
timeline:
  - {{at: 30, rollout: {rollout}}}
"""


@dataclass
class Event:
    kind: str  # "add" or "delete"
    key: str


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Event]]:
    """Every pod creation and deletion of the in-memory clusters, in order."""
    got: list[Event] = []
    add, delete = InMemoryCluster.add_pod, InMemoryCluster.delete_pod

    def recording_add(self: InMemoryCluster, raw: dict[str, Any]) -> None:
        got.append(Event("add", f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"))
        add(self, raw)

    def recording_delete(self: InMemoryCluster, pod: Any) -> None:
        got.append(Event("delete", pod.key))
        delete(self, pod)

    monkeypatch.setattr(InMemoryCluster, "add_pod", recording_add)
    monkeypatch.setattr(InMemoryCluster, "delete_pod", recording_delete)
    yield got


# ---------------------------------------------------------------- Deployment pods


def test_deployment_pods_are_owned_by_a_replica_set_and_named_by_their_deployment() -> None:
    s = load_scenario(WEB.format(replicas=3, rollout="{workloads: all}"))
    (d,) = s.deployments
    assert (d.key, d.replicas, len(d.pods)) == ("default/web", 3, 3)
    pod = s.pods[0]
    meta = pod["metadata"]
    assert (
        meta["name"] == f"web-{d.template_hash}-00" and meta["labels"]["pod-template-hash"] == d.template_hash
    )
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("ReplicaSet", d.replica_set, True)
    assert workload_key(parse_pod(pod)) == "default/web"  # the mesh's and netsched's workload name
    assert "ownerReferences" not in s.pods[3]["metadata"]  # bare pods stay bare
    rs = d.replica_set_object(d.template_hash, 3, d.template)
    assert rs["spec"]["replicas"] == 3 and rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"


# ---------------------------------------------------------------- rollouts


def test_recreate_deletes_every_old_pod_before_creating_a_new_one(events: list[Event]) -> None:
    s = load_scenario(WEB.format(replicas=4, rollout="{workloads: [web], strategy: Recreate}"))
    old = set(s.deployments[0].pods)
    run = simulate(s, DEFAULT, REGISTRY)
    rollout = [e for e in events if e.key.startswith("default/web-")][4:]  # after the 4 arrivals
    kinds = [e.kind for e in rollout]
    assert kinds == ["delete"] * 4 + ["add"] * 4
    assert {e.key for e in rollout if e.kind == "delete"} == old
    new = [e.key for e in rollout if e.kind == "add"]
    assert all(run.created_at[k] == 30.0 and k in run.placements for k in new)
    assert all(run.deleted_at[k] == 30.0 and k in run.deleted_by_controller for k in old)
    assert len({k.rsplit("-", 1)[0] for k in new} - {k.rsplit("-", 1)[0] for k in old}) == 1  # one new RS
    (initial, phase) = run.phases
    assert (phase.complete, phase.at, phase.deleted, phase.created) == (True, 35.0, 4, 4)
    assert initial.figures.placed == phase.figures.placed == 6


# (replicas, rollout, maxSurge and maxUnavailable in pods as kube resolves them)
ROLLING = [
    (10, "{maxSurge: 3, maxUnavailable: 2}", 3, 2),
    (10, "{maxSurge: 25%, maxUnavailable: 25%}", 3, 2),  # 2.5 rounds up for surge, down otherwise
    (4, "{maxSurge: 1, maxUnavailable: 0}", 1, 0),
    (4, "{maxSurge: 0, maxUnavailable: 1}", 0, 1),
    (3, '{maxSurge: "30%", maxUnavailable: "0%", minReadySeconds: 4}', 1, 0),
    (2, "{maxSurge: 10%, maxUnavailable: 10%}", 1, 0),
]


@pytest.mark.parametrize(("replicas", "args", "surge", "unavailable"), ROLLING)
def test_rolling_update_keeps_within_surge_and_unavailable_at_every_step(
    events: list[Event], replicas: int, args: str, surge: int, unavailable: int
) -> None:
    rollout = "{workloads: [web], strategy: RollingUpdate, " + args[1:]
    s = load_scenario(WEB.format(replicas=replicas, rollout=rollout))
    action = s.timeline[0].action
    assert isinstance(action, Rollout) and action.fenceposts(replicas) == (surge, unavailable)
    run = simulate(s, DEFAULT, REGISTRY)
    ready = 5 + action.min_ready_seconds
    live: set[str] = set()
    most, least = 0, replicas
    for e in events:
        if not e.key.startswith("default/web-"):
            continue
        if e.kind == "add":
            live.add(e.key)
            most = max(most, len(live))
            continue
        live.discard(e.key)
        now = run.deleted_at[e.key]
        available = sum(1 for k in live if k in run.bound_at and run.bound_at[k] + ready <= now)
        least = min(least, available)
    assert most == replicas + surge  # reached, never passed
    assert least == replicas - unavailable
    phase = run.phases[-1]
    assert phase.complete and phase.deleted == phase.created == replicas
    assert sorted(k for k in run.live() if k.startswith("default/web-")) == sorted(run.created_at)


def test_rolling_update_deletes_unhealthy_old_pods_first() -> None:
    # Three nodes take three of the four old pods; the fourth never runs. With maxSurge 0 the
    # rollout may only start by deleting a pod, and kube's cleanupUnhealthyReplicas picks that one.
    s = load_scenario(
        """
nodes: "3 nodes, 1 cpu, 4Gi"
pods: [{count: 4, deployment: web, cpu: 800m}]
timeline: [{at: 10, rollout: {workloads: all, maxSurge: 0, maxUnavailable: 1}}]
"""
    )
    run = simulate(s, DEFAULT, REGISTRY)
    (never,) = (k for k in s.deployments[0].pods if k not in run.bound_at)
    assert min(run.deleted_at, key=lambda k: run.deleted_at[k]) == never
    assert run.deleted_at[never] == 10.0
    assert not run.phases[-1].complete  # 800m pods: the new one never fits beside the old ones


def test_a_rollout_that_cannot_complete_is_reported_incomplete() -> None:
    # Each node takes one 5-cpu pod: with maxUnavailable 0 the surge pod never fits.
    s = load_scenario(
        """
nodes: "2 nodes, 8 cpu, 16Gi"
pods: [{count: 2, deployment: big, cpu: "5"}]
timeline: [{at: 10, rollout: {workloads: all, maxSurge: 1, maxUnavailable: 0}}]
"""
    )
    run = simulate(s, DEFAULT, REGISTRY)
    phase = run.phases[-1]
    assert not phase.complete and phase.pending == 1 and phase.deleted == 0
    (stuck,) = run.unscheduled
    assert "Insufficient cpu" in run.unscheduled[stuck]


# ---------------------------------------------------------------- the ReplicaSet controller


def test_a_deleted_deployment_pod_is_recreated_unbound_with_a_new_name() -> None:
    s = load_scenario('nodes: "2 nodes, 4 cpu"\npods: [{count: 2, deployment: api, cpu: 500m}]')
    cluster = InMemoryCluster(DEFAULT, REGISTRY)
    cluster.add_nodes(s.nodes)
    ctl = Controllers(cluster, s.deployments, lambda raw: retarget([raw], ["netsched"], "netsched")[0], 5.0)
    cluster.on_deleted.append(lambda pod: ctl.deleted(pod.key, 1.0))
    for raw in retarget(s.pods, ["netsched"], "netsched"):
        assert ctl.arrived(raw, 0.0)
        cluster.add_pod(raw)
    cluster.schedule_pending()
    assert not ctl.sync(0.0)  # two pods, two wanted
    victim = cluster.cache.get_pod(s.pods[0]["metadata"]["uid"])
    assert victim is not None
    cluster.delete_pod(victim)  # an eviction, through the real cache and queue
    assert ctl.sync(1.0)
    (created,) = ctl.created
    new = next(p for p in ctl.pods_of("default/api") if p.key == created)
    old = retarget(s.pods, ["netsched"], "netsched")[0]
    assert created != victim.key and new.raw["spec"] == old["spec"] and "nodeName" not in new.raw["spec"]
    assert new.raw["metadata"]["ownerReferences"] == old["metadata"]["ownerReferences"]
    assert cluster.schedule_pending() == 1 and created in cluster.placements
    rs = cluster.objects.get(REPLICASETS_KEY, "default", s.deployments[0].replica_set)
    assert rs is not None and rs["spec"]["replicas"] == 2 and rs["status"]["replicas"] == 2


def test_a_preempted_deployment_pod_comes_back_and_waits() -> None:
    s = load_scenario(
        """
nodes: "1 node, 1 cpu, 4Gi"
pods:
  - {count: 1, deployment: batch, cpu: 800m}
  - {count: 1, namePrefix: urgent, cpu: 800m, priority: 1000}
timing: {arrivalRatePerSecond: 0.1}
"""
    )
    run = simulate(s, DEFAULT, REGISTRY)
    (victim,) = s.deployments[0].pods
    assert run.placements["default/urgent-00"] == "node-00"
    assert victim in run.deleted_at and victim not in run.deleted_by_controller
    (replacement,) = run.created_at
    assert replacement.startswith(f"default/batch-{s.deployments[0].template_hash}-")
    assert "Insufficient cpu" in run.unscheduled[replacement]


# ---------------------------------------------------------------- decoding


def test_timeline_entries_decode_to_records() -> None:
    s = load_scenario(
        """
nodes: "2 nodes, 4 cpu, 8Gi, 1 Gbit"
pods:
  - {count: 2, deployment: api, cpu: 100m}
  - {count: 1, deployment: db, namespace: shop, cpu: 100m}
traffic: {pairs: [{source: api, destination: shop/db, rate: 8Mbit}]}
timeline:
  - {at: 10, rollout: {workloads: [api, shop/db], strategy: Recreate}}
  - {at: 20, load: "1 hot node at 90% network"}
  - {at: 20, podLoad: {workload: shop/db, bandwidth: 80Mbit, cpu: 1500m}}
  - {at: 30, traffic: {pairs: [{source: api, destination: shop/db, response: 0}]}}
"""
    )
    rollout, load, pod_load, traffic = (e.action for e in s.timeline)
    assert rollout == Rollout(("default/api", "shop/db"), "Recreate")
    assert isinstance(load, LoadChange) and len(load.nodes) == 1
    (curves,) = load.nodes.values()
    assert curves["network"].at(25) == pytest.approx(0.9 * 125e6)
    assert pod_load == PodLoadChange("shop/db", (), 10e6, 10e6, 1.5, None)
    assert isinstance(traffic, TrafficChange) and traffic.pairs[0].rate == 0
    assert [e.describe() for e in s.timeline][0] == "10 s: rollout Recreate of api, db"


def bad(timeline: object, extra: str = "") -> list[str]:
    doc = {
        "nodes": "2 nodes, 4 cpu, 8Gi",
        "pods": [{"count": 2, "deployment": "api", "cpu": "100m"}, {"count": 1, "cpu": "100m"}],
        "timeline": timeline,
    }
    if extra:
        doc["traffic"] = {"pairs": [{"source": "api", "destination": "db", "rate": "1Mbit"}]}
    with pytest.raises(ConfigError) as e:
        load_scenario(json.dumps(doc))
    return [str(err) for err in e.value.errors]


@pytest.mark.parametrize(
    ("timeline", "path", "says"),
    [
        ("soon", "timeline", "must be a list"),
        ([{"rollout": {"workloads": "all"}}], "timeline[0].at", "Required"),
        ([{"at": -1, "rollout": {"workloads": "all"}}], "timeline[0].at", "greater than or equal to 0"),
        ([{"at": 5}], "timeline[0]", "one of rollout, load, podLoad, traffic"),
        (
            [{"at": 5, "rollout": {"workloads": "all"}, "load": {"node-00": {"cpu": 0.5}}}],
            "timeline[0].load",
            "not rollout too",
        ),
        (
            [{"at": 5, "rollout": {"workloads": "all"}}, {"at": 4, "load": "all nodes at 10% cpu"}],
            "timeline[1].at",
            "before",
        ),
        (
            [{"at": 5, "rollout": {"workloads": ["web"]}}],
            "timeline[0].rollout.workloads[0]",
            "no such Deployment",
        ),
        ([{"at": 5, "rollout": {}}], "timeline[0].rollout.workloads", "Required"),
        (
            [{"at": 5, "rollout": {"workloads": "all", "strategy": "BlueGreen"}}],
            "timeline[0].rollout.strategy",
            "Unsupported",
        ),
        (
            [{"at": 5, "rollout": {"workloads": "all", "maxSurge": 0, "maxUnavailable": "0%"}}],
            "timeline[0].rollout.maxUnavailable",
            "may not be 0 when maxSurge is 0",
        ),
        (
            [{"at": 5, "rollout": {"workloads": "all", "maxSurge": "lots"}}],
            "timeline[0].rollout.maxSurge",
            "percentage",
        ),
        (
            [{"at": 5, "rollout": {"workloads": "all", "maxUnavailable": "150%"}}],
            "timeline[0].rollout.maxUnavailable",
            "100%",
        ),
        (
            [{"at": 5, "rollout": {"workloads": "all", "strategy": "Recreate", "maxSurge": 1}}],
            "timeline[0].rollout.maxSurge",
            "only with strategy RollingUpdate",
        ),
        (
            [{"at": 5, "rollout": {"workloads": "all", "surge": 1}}],
            "timeline[0].rollout.surge",
            "Unknown field",
        ),
        ([{"at": 5, "load": {"node-09": {"cpu": 0.5}}}], "timeline[0].load.node-09", "no such node"),
        (
            [{"at": 5, "load": {"node-00": {"linkSpeed": "10Gbit"}}}],
            "timeline[0].load.node-00.linkSpeed",
            "constant",
        ),
        ([{"at": 5, "load": {}}], "timeline[0].load", "Required"),
        ([{"at": 5, "podLoad": {"cpu": 1}}], "timeline[0].podLoad.workload", "Required"),
        (
            [{"at": 5, "podLoad": {"workload": "web", "cpu": 1}}],
            "timeline[0].podLoad.workload",
            "no pod of the scenario",
        ),
        ([{"at": 5, "podLoad": {"pods": ["nope"], "cpu": 1}}], "timeline[0].podLoad.pods[0]", "no such pod"),
        (
            [{"at": 5, "podLoad": {"workload": "api", "cpu": "lots"}}],
            "timeline[0].podLoad.cpu",
            "CPU quantity",
        ),
        ([{"at": 5, "podLoad": {"workload": "api"}}], "timeline[0].podLoad", "Required"),
        (
            [{"at": 5, "traffic": {"pairs": [{"source": "api", "destination": "db"}]}}],
            "timeline[0].traffic.pairs[0].rate",
            "Required",
        ),
    ],
)
def test_timeline_errors_name_the_field(timeline: object, path: str, says: str) -> None:
    errors = bad(timeline)
    assert any(e.startswith(path + ":") and says in e for e in errors), errors


def test_direction_keys_and_deployment_errors_name_the_field() -> None:
    doc = {
        "nodes": "2 nodes",
        "pods": [
            {"count": 1, "deployment": "Api", "cpu": "100m"},
            {"count": 1, "deployment": "db", "cpu": "100m"},
            {"count": 1, "deployment": "db", "cpu": "200m"},
        ],
        "traffic": {"pairs": [{"source": "a", "destination": "b", "rate": "1Mbit", "response": "1Mbit"}]},
    }
    with pytest.raises(ConfigError) as e:
        load_scenario(json.dumps(doc))
    text = "\n".join(str(err) for err in e.value.errors)
    assert (
        "traffic.pairs[0].response: Forbidden: give rate (both directions, half each way) or request" in text
    )
    assert 'pods[0].deployment: Invalid value: "Api": must be a Deployment name' in text
    assert "Deployment default/db has pods of two templates" in text


# ---------------------------------------------------------------- the shipped rollout scenarios


@pytest.fixture(scope="module")
def rollout_runs() -> dict[str, Run]:
    out = {}
    for name in ("rollout-scenario.yaml", "rollout-rolling-scenario.yaml"):
        out[name] = simulate(load_scenario(example_text(name)), DEFAULT, REGISTRY, label="default")
    return out


def test_the_rolling_variant_differs_only_in_its_timeline() -> None:
    def body(name: str) -> dict[str, Any]:
        doc = yaml.safe_load(example_text(name))
        return {k: v for k, v in doc.items() if k not in ("name", "description", "timeline")}

    assert body("rollout-scenario.yaml") == body("rollout-rolling-scenario.yaml")


def test_issue_39s_scenario_replaces_every_service_pod(rollout_runs: dict[str, Run]) -> None:
    for name, run in rollout_runs.items():
        initial, rollout = run.phases
        assert initial.label == "initial placement" and initial.figures.placed == 36, name
        assert rollout.complete and rollout.deleted == rollout.created == 20, name
        assert rollout.figures.placed == 36 and not run.unscheduled, name
        assert initial.figures.hot_nodes == ("node-03", "node-07", "node-11")
        t = rollout.figures.traffic
        assert t is not None and t.total == pytest.approx(173e6)


def test_the_report_has_a_timeline_table_and_json(rollout_runs: dict[str, Run]) -> None:
    s = load_scenario(example_text("rollout-scenario.yaml"))
    run = rollout_runs["rollout-scenario.yaml"]
    report = Report(s, [run], ["kube's default plugins"], lower_bounds(s))
    text = report.text()
    assert "Timeline (each phase's placement when it is done" in text
    assert "90 s: rollout Recreate of 10 Deployments" in text
    assert "36/36 pods placed at" in text and "(20 deleted, 20 created by controllers)" in text
    doc = report.to_dict()
    assert doc["scenario"]["timeline"] == ["90 s: rollout Recreate of 10 Deployments"]
    (ours,) = doc["runs"]
    initial, rollout = ours["timeline"]
    assert (initial["phase"], rollout["complete"], rollout["deleted"], rollout["created"]) == (
        "initial placement",
        True,
        20,
        20,
    )
    assert rollout["traffic"]["totalBytesPerSecond"] == pytest.approx(173e6)
    assert rollout["hotNodes"] == ["node-03", "node-07", "node-11"] and rollout["networkLimit"] is None
    assert len(ours["deleted"]) == 20 and ours["placed"] == 36
    json.dumps(doc)  # serialisable
