"""Scenario files: compact and long forms, ranges and seeds, background load, every error with its path."""

from __future__ import annotations

import math

import pytest

from netsched.config import ConfigError
from netsched.framework.parse import parse_node, parse_pod
from netsched.metrics.estimation import EGRESS_BANDWIDTH, INGRESS_BANDWIDTH
from netsched.simulate import load_scenario
from netsched.simulate.compact import metrics_rule, node_generator, pod_generator
from netsched.simulate.units import Curve, bandwidth_annotation, bits_per_second, fraction

GBIT_BYTES = 125_000_000.0


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_scenario(text)
    return [str(err) for err in e.value.errors]


# ---------------------------------------------------------------- units and compact strings


def test_units() -> None:
    assert bits_per_second("10Gbit") == 10e9
    assert bits_per_second("50 Mbit") == 50e6
    assert bits_per_second("1.5Gbps") == 1.5e9
    assert bits_per_second("50M") == 50e6  # a Kubernetes quantity, as the CNI annotation writes it
    assert bits_per_second(1000) == 1000.0
    with pytest.raises(ValueError, match="bit rate"):
        bits_per_second("fast")
    assert fraction("60%") == pytest.approx(0.6) and fraction(0.25) == 0.25
    with pytest.raises(ValueError, match="between 0 and 1"):
        fraction(1.5)
    assert bandwidth_annotation(50e6) == "50M"
    assert bandwidth_annotation(1.5e9) == "1500M"
    assert bandwidth_annotation(37_251_000) == "37251k"


def test_curve_interpolates_and_holds_its_ends() -> None:
    c = Curve(((10.0, 0.2), (20.0, 0.6)))
    assert c.at(0) == 0.2 and c.at(15) == pytest.approx(0.4) and c.at(99) == 0.6
    assert Curve.constant(3.0).at(1e9) == 3.0
    assert c.scaled(2).at(20) == pytest.approx(1.2)


def test_compact_forms_become_generator_mappings() -> None:
    assert node_generator("50 nodes, 32 cpu, 128Gi, 10 Gbit") == {
        "count": 50,
        "cpu": "32",
        "memory": "128Gi",
        "linkSpeed": "10Gbit",
    }
    assert node_generator("3 nodes, 8 cores, 16Gi, 1 Gbit, 3 zones, prefix web") == {
        "count": 3,
        "cpu": "8",
        "memory": "16Gi",
        "linkSpeed": "1Gbit",
        "zones": 3,
        "namePrefix": "web",
    }
    assert pod_generator("200 pods of 500m cpu, 1Gi, 20-50 Mbit") == {
        "count": 200,
        "cpu": "500m",
        "memory": "1Gi",
        "bandwidth": ["20Mbit", "50Mbit"],
    }
    assert pod_generator("2 pods per node of 250m-1 cpu, 1-2Gi") == {
        "perNode": 2,
        "cpu": ["250m", "1"],
        "memory": ["1Gi", "2Gi"],
    }
    assert metrics_rule("10 hot nodes at 60-80% network") == {
        "skew": {"hot": 10, "networkUtilization": ["60%", "80%"]}
    }
    assert metrics_rule("all nodes at 20% cpu, 30% memory") == {"default": {"cpu": "20%", "memory": "30%"}}
    with pytest.raises(ValueError, match="cannot read '32'"):
        node_generator("5 nodes, 32")


# ---------------------------------------------------------------- nodes and pods


def test_compact_scenario() -> None:
    s = load_scenario(
        """
nodes: "4 nodes, 32 cpu, 128Gi, 10 Gbit"
pods: "6 pods of 500m cpu, 1Gi, 50 Mbit"
"""
    )
    assert s.node_names == ["node-00", "node-01", "node-02", "node-03"]
    node = parse_node(s.nodes[0])
    assert node.allocatable["cpu"] == 32_000 and node.allocatable["memory"] == 128 * 2**30
    assert s.link_speed == dict.fromkeys(s.node_names, 10 * GBIT_BYTES)
    pod = parse_pod(s.pods[0])
    assert pod.key == "default/pod-00" and pod.requests["cpu"] == 500
    assert pod.annotations[INGRESS_BANDWIDTH] == "50M" and pod.annotations[EGRESS_BANDWIDTH] == "50M"
    assert "schedulerName" not in s.pods[0]["spec"]  # filled with the simulated profile's name
    assert s.timing.arrival_rate == 20 and s.timing.poll_interval is None
    assert s.end == pytest.approx(5 / 20)


def test_long_forms_objects_lists_and_shared_name_prefixes() -> None:
    s = load_scenario(
        """
nodes:
  - {count: 2, cpu: "4", memory: 8Gi, zones: 2, labels: {tier: web}}
  - {count: 1, namePrefix: node, linkSpeed: 25Gbit}
  - kind: Node
    metadata: {name: big}
    status: {allocatable: {cpu: "64", memory: 256Gi, pods: "110"}}
existingPods:
  - {perNode: 1, nodes: [big], cpu: "2", bandwidth: 1Gbit}
  - kind: List
    items:
      - kind: Pod
        metadata: {name: db, namespace: data}
        spec: {nodeName: node-00, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
pods:
  - {count: 2, ingressBandwidth: 100Mbit, schedulerName: other, namespace: team}
  - kind: Pod
    metadata: {name: web}
    spec: {containers: [{name: c}]}
"""
    )
    assert s.node_names == ["node-00", "node-01", "node-02", "big"]
    assert parse_node(s.nodes[1]).labels["topology.kubernetes.io/zone"] == "zone-1"
    assert parse_node(s.nodes[0]).labels["tier"] == "web"
    assert s.link_speed["node-02"] == 25e9 / 8 and s.link_speed["big"] == 10e9 / 8  # the default
    assert [parse_pod(p).node_name for p in s.existing_pods] == ["big", "node-00"]
    keys = [parse_pod(p).key for p in s.pods]
    assert keys == ["team/pod-00", "team/pod-01", "default/web"]
    first = parse_pod(s.pods[0])
    assert first.scheduler_name == "other" and EGRESS_BANDWIDTH not in first.annotations


def test_ranges_are_drawn_per_object_and_repeatable_with_the_seed() -> None:
    text = 'nodes: "2 nodes"\npods: "50 pods of 250m-1 cpu, 20-50 Mbit"\n'
    a, b, c = load_scenario(text), load_scenario(text), load_scenario(text, seed=7)
    cpus = [parse_pod(p).requests["cpu"] for p in a.pods]
    bw = [bits_per_second(p["metadata"]["annotations"][INGRESS_BANDWIDTH]) for p in a.pods]
    assert all(250 <= v <= 1000 for v in cpus) and len(set(cpus)) > 10
    assert all(20e6 <= v <= 50e6 for v in bw)
    assert a.pods == b.pods and a.pods != c.pods and c.seed == 7
    # One draw serves both directions when `bandwidth` sets them together.
    ann = a.pods[0]["metadata"]["annotations"]
    assert ann[INGRESS_BANDWIDTH] == ann[EGRESS_BANDWIDTH]


# ---------------------------------------------------------------- background load


def test_background_layers_default_skew_node_and_series() -> None:
    s = load_scenario(
        """
nodes: "6 nodes, 1 Gbit"
pods: "1 pod"
metrics:
  - "all nodes at 20% cpu"
  - default: {memory: 0.3, networkUtilization: 0.1}
    skew: {hot: 2, pick: first, networkUtilization: [0.6, 0.8]}
    node-05: {network: 500Mbit, cpu: [[0, 0.1], [60, 0.9]], linkSpeed: 10Gbit}
"""
    )
    bg = s.background
    assert bg["node-03"].cpu.at(0) == pytest.approx(0.2) and bg["node-03"].memory.at(0) == 0.3
    assert bg["node-03"].network.at(0) == pytest.approx(0.1 * GBIT_BYTES)
    for hot in ("node-00", "node-01"):
        assert 0.6 * GBIT_BYTES <= bg[hot].network.at(0) <= 0.8 * GBIT_BYTES
    assert bg["node-05"].network.at(0) == pytest.approx(500e6 / 8)  # absolute, not a share of the link
    assert s.link_speed["node-05"] == 10 * GBIT_BYTES
    assert bg["node-05"].cpu.at(30) == pytest.approx(0.5)


def test_random_skew_picks_distinct_nodes() -> None:
    s = load_scenario('nodes: "20 nodes"\npods: "1 pod"\nmetrics: "5 hot nodes at 70% network"\n')
    hot = [n for n, b in s.background.items() if b.network.at(0) > 0]
    assert len(hot) == 5


def test_timing_and_outages() -> None:
    s = load_scenario(
        """
nodes: "1 node"
pods: "3 pods"
timing: {arrivalRatePerSecond: 2, pollIntervalSeconds: 30, podStartSeconds: 0, rateWindowSeconds: 0}
prometheus: {outages: [[10, 20]]}
"""
    )
    assert s.timing.arrival(2) == 1.0 and s.timing.poll_interval == 30
    assert s.prometheus_down(10) and not s.prometheus_down(20) and not s.prometheus_down(5)
    assert load_scenario('nodes: "1 node"\npods: "1 pod"\nprometheus: {down: true}').prometheus_down(
        -math.inf
    )


# ---------------------------------------------------------------- errors


def test_every_error_is_reported_with_its_path() -> None:
    errs = errors_of(
        """
nodes:
  - "5 nodes, 32 xyz"
  - {count: 0, cpu: lots, linkSpeed: fast, colour: red}
  - {kind: Node, metadata: {name: bare}}
  - {count: 1, namePrefix: x}
  - {count: 1, namePrefix: x, memory: [2Gi, 1Gi]}
pods:
  - {count: 2, bandwidth: fast}
  - kind: Pod
    metadata: {name: p}
    spec: {nodeName: x-00, containers: [{name: c}]}
  - kind: Pod
    metadata: {name: q}
    spec: {containers: [{name: c, resources: {requests: {cpu: abc}}}]}
  - "3 things"
existingPods:
  - {perNode: 1, nodes: [nope]}
  - {kind: Pod, metadata: {name: r}, spec: {containers: [{name: c}]}}
metrics:
  default: {cpu: 1.5, network: 1Gbit, networkUtilization: 0.1}
  skew: {hot: 99, pick: middle}
  node-99: {cpu: 0.1}
  x-00: {cpu: [[0, 0.1], [5]], colour: 1, linkSpeed: [[0, 1Gbit]]}
timing: {arrivalRatePerSecond: 0, speed: 2}
prometheus: {outages: [[5, 1]]}
extra: 1
"""
    )
    expected = [
        "nodes[0]: Invalid value: \"5 nodes, 32 xyz\": cannot read '32 xyz'",
        "nodes[1].count: Invalid value: 0: must be greater than or equal to 1",
        'nodes[1].cpu: Invalid value: "lots": must be a CPU quantity',
        'nodes[1].linkSpeed: Invalid value: "fast": must be a bit rate',
        "nodes[1].colour: Unknown field",
        "nodes[2].status.allocatable: Required value",
        'nodes[4].memory: Invalid value: ["2Gi", "1Gi"]: range must be [lo, hi] with lo <= hi',
        'pods[0].bandwidth: Invalid value: "fast": must be a bit rate',
        "pods[1].spec.nodeName: Forbidden: a pod to place must not be bound",
        "pods[2].spec.containers[0].resources.requests.cpu: Invalid value",
        'pods[3]: Invalid value: "3 things": must start with a pod count',
        'existingPods[0].nodes[0]: Invalid value: "nope": no such node in nodes',
        "existingPods[1].spec.nodeName: Required value",
        "metrics.default.networkUtilization: Forbidden: give one of network",
        "metrics.default.cpu: Invalid value: 1.5: must be between 0 and 1",
        "metrics.skew.hot: Invalid value: 99: more hot nodes than nodes (3)",
        'metrics.skew.pick: Unsupported value: "middle"',
        'metrics.node-99: Invalid value: "node-99": no such node in nodes',
        "metrics.x-00.colour: Unknown field",
        "metrics.x-00.cpu: Invalid value: [[0, 0.1], [5]]: a time series is a list of [seconds, value] pairs",
        'metrics.x-00.linkSpeed: Invalid value: [[0, "1Gbit"]]: a link speed is constant',
        "timing.arrivalRatePerSecond: Invalid value: 0",
        "timing.speed: Unknown field",
        "prometheus.outages[0]: Invalid value: [5, 1]: must be [from, to]",
        "extra: Unknown field",
    ]
    for want in expected:
        assert any(e.startswith(want) for e in errs), f"missing {want!r} in:\n" + "\n".join(errs)


def test_duplicates_and_empty_sections() -> None:
    errs = errors_of(
        """
nodes: ["2 nodes", {kind: Node, metadata: {name: node-01}, status: {capacity: {cpu: "1"}}}]
pods: ["1 pod", {kind: Pod, metadata: {name: pod-00}}]
"""
    )
    assert any(e.startswith('nodes[1].metadata.name: Duplicate value: "node-01"') for e in errs)
    assert any(e.startswith('pods[1].metadata.name: Duplicate value: "default/pod-00"') for e in errs)
    assert errors_of("{}")[0].startswith("nodes: Required value")
    assert errors_of('nodes: "1 node"')[0].startswith("pods: Required value")
    assert errors_of("nodes: [")[0].startswith("<string>:1:9: Invalid YAML")
