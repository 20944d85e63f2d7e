"""Gangs in `netsched simulate`: PodGroups in YAML and generator form, per-group outcomes, and the
shipped example where kube's default profile splits two gangs and Coscheduling places one whole."""

from __future__ import annotations

import json

import pytest

from netsched.app import build_registry
from netsched.config import ConfigError, load_config
from netsched.plugins.gangs import TOPOLOGY_PREFERRED, TOPOLOGY_REQUIRED
from netsched.simulate import load_scenario, simulate
from netsched.simulate.cli import main
from netsched.simulate.configs import default_profile, example_text, examples
from netsched.simulate.gangs import GROUP_LABEL, gang_outcomes
from netsched.simulate.report import Report, lower_bounds

REGISTRY = build_registry()
EXAMPLE = "gangs-scenario.yaml"

GANG_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
- schedulerName: netsched
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
"""

WRITTEN = f"""
nodes: "2 nodes, 4 cpu, 8Gi"
podGroups:
  - apiVersion: scheduling.x-k8s.io/v1alpha1
    kind: PodGroup
    metadata: {{name: pair}}
    spec: {{minMember: 2}}
  - kind: PodGroup
    metadata: {{name: trio, namespace: ml}}
    spec: {{minMember: 3, scheduleTimeoutSeconds: 5}}
pods:
  - {{count: 2, namePrefix: p, cpu: "1", labels: {{"{GROUP_LABEL}": pair}}}}
  - {{count: 2, namePrefix: t, namespace: ml, cpu: "1", labels: {{"{GROUP_LABEL}": trio}}}}
  - {{count: 1, namePrefix: solo, cpu: "1"}}
"""


def test_podgroups_as_written_and_their_members() -> None:
    s = load_scenario(WRITTEN, "written.yaml")
    assert [g["metadata"]["name"] for g in s.pod_groups] == ["pair", "trio"]
    trio = s.pod_groups[1]
    assert trio["metadata"]["namespace"] == "ml" and trio["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    # Listed order is creation order (Coscheduling's queue sort reads it).
    stamps = [g["metadata"]["creationTimestamp"] for g in s.pod_groups]
    assert stamps == sorted(stamps) and len(set(stamps)) == 2
    run = simulate(s, load_config(GANG_CONFIG, REGISTRY), REGISTRY)
    report = Report(s, [run], ["gangs"], lower_bounds(s))
    by = {g.key: g for g in report.gangs(run)}
    assert (by["default/pair"].outcome, by["default/pair"].placed) == ("all", 2)
    assert by["default/pair"].seconds_to_full is not None and by["default/pair"].seconds_to_full >= 0
    # Two of three members exist: the gang never starts and holds nothing.
    assert (by["ml/trio"].outcome, by["ml/trio"].placed, by["ml/trio"].seconds_to_full) == ("none", 0, None)
    assert "minMember of group: 3" in run.unscheduled["ml/t-00"]
    assert "default/solo-00" in run.placements
    assert "Pod groups" in report.text() and "ml/trio" in report.text()


def test_generated_gangs_grouped_and_interleaved() -> None:
    s = load_scenario(
        """
nodes: "1 node"
podGroups:
  - {count: 2, namePrefix: g, minMember: 2, members: 3, scheduleTimeoutSeconds: 7, pod: {cpu: 100m}}
  - {count: 2, namePrefix: i, minMember: 2, arrival: interleaved, pod: {cpu: 100m, labels: {app: x}}}
pods: "1 pod"
""",
        "gen.yaml",
    )
    assert [g["metadata"]["name"] for g in s.pod_groups] == ["g-00", "g-01", "i-00", "i-01"]
    assert s.pod_groups[0]["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 7}
    names = [p["metadata"]["name"] for p in s.pods]
    assert names == [
        "pod-00",
        "g-00-00", "g-00-01", "g-00-02", "g-01-00", "g-01-01", "g-01-02",
        "i-00-00", "i-01-00", "i-00-01", "i-01-01",
    ]  # fmt: skip
    member = s.pods[-1]["metadata"]["labels"]
    assert member == {"app": "x", GROUP_LABEL: "i-01"}


def test_generated_gangs_need_no_pods_section() -> None:
    s = load_scenario('nodes: "1 node"\npodGroups: {count: 1, minMember: 2, pod: {cpu: 100m}}', "x.yaml")
    assert len(s.pods) == 2 and s.pod_groups[0]["metadata"]["name"] == "gang-00"


def test_podgroup_errors_name_their_field() -> None:
    with pytest.raises(ConfigError) as e:
        load_scenario(
            """
nodes: "1 node"
pods: "1 pod"
podGroups:
  - {kind: PodGroup, metadata: {name: a}, spec: {minMember: 0}}
  - {kind: Deployment, metadata: {name: b}}
  - {minMember: 2, pod: {count: 3}, arrival: sideways}
  - {kind: PodGroup, metadata: {name: a}, spec: {minMember: 1}}
  - {kind: PodGroup, metadata: {name: a}, spec: {minMember: 1}}
""",
            "bad.yaml",
        )
    text = str(e.value)
    assert "podGroups[0].spec.minMember" in text
    assert "podGroups[1].kind" in text
    assert "podGroups[2].pod.count" in text and "podGroups[2].arrival" in text
    assert "podGroups[4].metadata.name" in text


def test_shipped_example_default_splits_both_gangs_netsched_places_one_whole() -> None:
    s = load_scenario(example_text(EXAMPLE), EXAMPLE)
    cfg = load_config(examples().joinpath(s.config).read_text("utf-8"), REGISTRY)
    ours = simulate(s, cfg, REGISTRY)
    theirs = simulate(s, default_profile("netsched", REGISTRY), REGISTRY, label="default")
    report = Report(s, [ours, theirs], ["gangs", "default"], lower_bounds(s))
    netsched_outcomes = sorted(g.outcome for g in report.gangs(ours))
    assert netsched_outcomes == ["all", "none"]
    whole = next(g for g in report.gangs(ours) if g.outcome == "all")
    assert whole.placed == 6 and whole.seconds_to_full is not None
    assert [g.outcome for g in report.gangs(theirs)] == ["split", "split"]
    assert sum(g.placed for g in report.gangs(theirs)) == 8
    doc = report.to_dict()
    assert [g["outcome"] for g in doc["runs"][1]["podGroups"]] == ["split", "split"]
    assert "SPLIT" in report.text(placements=False)


def test_simulate_explain_shows_the_gang_topology_score(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(examples().joinpath(EXAMPLE))
    assert main([path, "--compare-config", "none", "--explain", "default/train-00-03", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ex = doc["explain"]
    assert ex["weights"]["GangTopology"] == 2
    assert any("GangTopology" in n["scores"] for n in ex["nodes"] if n["feasible"])
    assert [g["outcome"] for g in doc["runs"][0]["podGroups"]].count("all") == 1


RACKS = "racks-scenario.yaml"


def test_nodes_with_several_topology_levels_and_podgroup_annotations_in_generator_form() -> None:
    s = load_scenario(
        """
nodes:
  - count: 8
    topology:
      - {label: topology.kubernetes.io/zone, domains: 2}
      - {label: example.com/rack, domains: 4, prefix: r}
podGroups:
  - {count: 1, namePrefix: g, minMember: 2, annotations: {netsched.io/topology-required: example.com/rack},
     pod: {cpu: 100m}}
""",
        "levels.yaml",
    )
    labels = [(n["metadata"]["labels"]["topology.kubernetes.io/zone"], n["metadata"]["labels"]["example.com/rack"])
              for n in s.nodes]  # fmt: skip
    # Contiguous blocks, each rack inside one zone.
    assert (
        labels
        == [("zone-0", "r-0")] * 2
        + [("zone-0", "r-1")] * 2
        + [("zone-1", "r-2")] * 2
        + [("zone-1", "r-3")] * 2
    )
    assert s.levels == ["topology.kubernetes.io/zone", "example.com/rack"]
    assert s.pod_groups[0]["metadata"]["annotations"] == {"netsched.io/topology-required": "example.com/rack"}


def test_topology_level_errors_name_their_field() -> None:
    with pytest.raises(ConfigError) as e:
        load_scenario(
            """
nodes:
  - count: 6
    topology:
      - {label: zone, domains: 2}
      - {label: rack, domains: 3}
      - {label: "not a label!", domains: 1}
      - {label: host, domains: 7}
""",
            "bad.yaml",
        )
    text = str(e.value)
    assert "nodes[0].topology[1].domains: Invalid value: 3: must be a multiple of 2" in text
    assert "nodes[0].topology[2].label" in text
    assert "nodes[0].topology[3].domains" in text


def test_shipped_racks_example_default_and_per_pod_split_gangs_the_placement_keeps_each_in_one_rack() -> None:
    s = load_scenario(example_text(RACKS), RACKS)
    ours = simulate(s, load_config(examples().joinpath(s.config).read_text("utf-8"), REGISTRY), REGISTRY)
    per_pod_cfg = load_config(examples().joinpath("racks-per-pod-config.yaml").read_text("utf-8"), REGISTRY)
    per_pod = simulate(s, per_pod_cfg, REGISTRY, label="per-pod")
    default = simulate(s, default_profile("netsched", REGISTRY), REGISTRY, label="default")
    report = Report(s, [ours, default, per_pod], ["racks", "default", "per-pod"], lower_bounds(s))
    spans = {run.label: [g.spans for g in report.gangs(run)] for run in (ours, default, per_pod)}
    assert spans["netsched"] == [1, 1, 1]
    assert all(n is not None and n > 1 for n in spans["default"])
    assert sum(1 for n in spans["per-pod"] if n is not None and n > 1) >= 2
    assert all(g.outcome == "all" for run in (ours, default, per_pod) for g in report.gangs(run))
    assert "1 rack " in report.text(placements=False) and "racks" in report.text(placements=False)
    assert report.to_dict()["runs"][0]["podGroups"][0]["domainsSpanned"] == 1


def test_simulate_explain_shows_the_gang_placement_decision(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(examples().joinpath(RACKS))
    assert main([path, "--compare-config", "none", "--explain", "default/train-00-00"]) == 0
    out = capsys.readouterr().out
    assert "gang default/train-00 (preferred example.com/rack, 8 member(s) to place): placed in" in out
    assert "example.com/rack=rack-0: too small" in out
    assert "example.com/rack=rack-1: holds the gang (peak link" in out and "*" in out


def test_compare_config_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(examples().joinpath(RACKS))
    per_pod = str(examples().joinpath("racks-per-pod-config.yaml"))
    assert main([path, "--compare-config", "default", "--compare-config", per_pod, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in doc["runs"]] == ["netsched", "default", "racks-per-pod-config.yaml"]


def test_the_level_domains_are_counted_at_follows_the_podgroup_s_topology_annotation() -> None:
    def group(spec: dict[str, object] | None = None, **annotations: str) -> dict[str, object]:
        meta = {"name": "g", "namespace": "default", "annotations": annotations}
        return {"metadata": meta, "spec": spec or {"minMember": 2}}

    levels = ("topology.kubernetes.io/zone", "example.com/rack")
    assert gang_outcomes([group()], [], {}, {}, {}, levels=levels)[0].level == "example.com/rack"
    required = group(**{TOPOLOGY_REQUIRED: "topology.kubernetes.io/zone"})
    assert gang_outcomes([required], [], {}, {}, {}, levels=levels)[0].level == "topology.kubernetes.io/zone"
    # A PodGroup the gang plugins reject still names the level its annotations ask for:
    # both set (the required one), an empty one skipped, a malformed spec.
    both = group(**{TOPOLOGY_REQUIRED: "a", TOPOLOGY_PREFERRED: "b"})
    empty = group(**{TOPOLOGY_REQUIRED: "", TOPOLOGY_PREFERRED: "b"})
    bad_spec = group({"minMember": 2, "minResources": ["cpu"]}, **{TOPOLOGY_PREFERRED: "c"})
    got = gang_outcomes([both, empty, bad_spec], [], {}, {}, {}, levels=levels)
    assert [o.level for o in got] == ["a", "b", "c"]
