"""The placement-coupled exporter (netsched.testing.traffic_exporter): what each node's eth0
counters and each pod's cAdvisor series grow by, for the pods running at a scrape."""

from __future__ import annotations

import re

import pytest

from netsched.testing.exporter import fake_nodes
from netsched.testing.traffic_exporter import PairTrafficExporter, RunningPod


def counters(text: str) -> dict[str, float]:
    """series (name and labels, timestamp dropped) -> value."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+\{[^}]*\}) ([0-9.e+-]+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def rates(exporter: PairTrafficExporter, now: list[float], seconds: float) -> dict[str, float]:
    before = counters(exporter.render())
    now[0] += seconds
    after = counters(exporter.render())
    return {k: (after[k] - before.get(k, 0.0)) / seconds for k in after}


def node_rate(got: dict[str, float], metric: str, node: str) -> float:
    (value,) = [
        v
        for k, v in got.items()
        if k.startswith(metric + "{") and f'node="{node}"' in k and 'device="eth0"' in k
    ]
    return value


def test_flows_between_nodes_and_a_pods_own_traffic_cross_the_links() -> None:
    now = [1000.0]
    exporter = PairTrafficExporter(fake_nodes(2), clock=lambda: now[0])
    pods = [
        RunningPod("default/a-0", "default/a", "node-0", cpu=0.5),
        RunningPod("default/b-0", "default/b", "node-1", cpu=0.5, tx=30.0, rx=5.0),
    ]
    exporter.follow(lambda: pods, cpu_of_requests=1.0, per_pod=True)
    exporter.set_pairs({("default/a", "default/b"): (0.0, 100.0)})  # b answers a: 100 B/s b -> a
    got = rates(exporter, now, 10.0)
    assert node_rate(got, "node_network_transmit_bytes_total", "node-1") == pytest.approx(130.0)
    assert node_rate(got, "node_network_receive_bytes_total", "node-1") == pytest.approx(5.0)
    assert node_rate(got, "node_network_receive_bytes_total", "node-0") == pytest.approx(100.0)
    pod_tx = [
        v
        for k, v in got.items()
        if k.startswith("container_network_transmit_bytes_total{") and 'pod="b-0"' in k
    ]
    assert pod_tx == [pytest.approx(130.0)]
    # On one node the pair's flow crosses no link; the pod's own traffic still does.
    pods[1] = RunningPod("default/b-0", "default/b", "node-0", cpu=0.5, tx=30.0, rx=5.0)
    got = rates(exporter, now, 10.0)
    assert node_rate(got, "node_network_transmit_bytes_total", "node-0") == pytest.approx(30.0)
    assert node_rate(got, "node_network_receive_bytes_total", "node-0") == pytest.approx(5.0)


def test_a_pod_that_started_between_scrapes_counts_from_its_start() -> None:
    # A real node's counters grow from the moment a pod starts, not from the next scrape: with
    # `changed_at`, the first scrape that sees the pod backdates its rate to then.
    now = [1000.0]
    started: list[float] = [-1e9]
    exporter = PairTrafficExporter(fake_nodes(1), clock=lambda: now[0])
    pods: list[RunningPod] = []
    exporter.follow(lambda: pods, cpu_of_requests=1.0, per_pod=True, changed_at=lambda: started[0])
    before = counters(exporter.render())
    now[0] += 15.0
    pods.append(RunningPod("default/a-0", "default/a", "node-0", cpu=0.5, tx=100.0))
    started[0] = now[0] - 5.0  # it started 5 s before this scrape
    after = counters(exporter.render())
    tx = [k for k in after if k.startswith("node_network_transmit_bytes_total{") and 'device="eth0"' in k]
    assert after[tx[0]] - before[tx[0]] == pytest.approx(100.0 * 5)
    pod_tx = [k for k in after if k.startswith("container_network_transmit_bytes_total{")]
    assert after[pod_tx[0]] == pytest.approx(100.0 * 5)
    # A pod that left between two scrapes stops counting when it left.
    now[0] += 15.0
    started[0] = now[0] - 5.0
    pods.clear()
    gone = counters(exporter.render())
    assert gone[tx[0]] - after[tx[0]] == pytest.approx(100.0 * 10)  # ran until 5 s before this scrape
