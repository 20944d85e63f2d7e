"""Prometheus goes away and comes back, under the real APScheduler loop.

Killing the server puts the source in fallback (logged once, gauge 1, plugins
score by requests); restarting it on the same port and data dir brings the
measured values back (logged once, gauge 0).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo
from netsched.metrics import NETWORK_RX, MetricsHub, PrometheusArgs
from netsched.plugins.network_traffic import NetworkTraffic, NetworkTrafficArgs
from netsched.testing.builders import PodBuilder, make_node, make_pod, node_infos
from netsched.testing.exporter import SyntheticExporter, fake_nodes
from netsched.testing.framework import build_plugin
from netsched.testing.prometheus import PrometheusServer, require_prometheus

pytestmark = pytest.mark.integration

WINDOW = "4s"
RX = {"node-0": 1e6, "node-1": 50e6, "node-2": 100e6}


def wait_full_window(prom: PrometheusServer) -> None:
    """Until rate() over a full window of scrapes reads the busiest node's rate."""
    prom.wait_for(
        f'rate(node_network_receive_bytes_total{{node="node-2",device="eth0"}}[{WINDOW}])',
        lambda r: bool(r) and abs(float(r[0]["value"][1]) - RX["node-2"]) < 0.01 * RX["node-2"],
    )


@dataclass
class World:
    prom: PrometheusServer
    exporter: SyntheticExporter


@pytest.fixture
def world() -> Iterator[World]:
    binary = require_prometheus()
    with SyntheticExporter(fake_nodes(3)) as exporter:
        for name, rx in RX.items():
            exporter.set_load(name, rx=rx)
        prom = PrometheusServer([exporter.target], binary=binary)
        try:
            prom.start()
            wait_full_window(prom)
            yield World(prom, exporter)
        finally:
            prom.close()


def scores(plugin: NetworkTraffic, snap: Snapshot) -> list[int]:
    state = CycleState()
    pod = make_pod("p").info()
    return [int(v) for v in plugin.score_nodes(state, pod, snap, snap.all_rows)]


def test_outage_falls_back_once_and_recovers(world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="netsched.metrics")
    reg = CollectorRegistry()
    hub = MetricsHub(registry=reg)
    # Requests tell a different story than measurements: node-0 runs the annotated pods.
    pods: list[PodInfo | PodBuilder] = [
        make_pod(f"a{i}").node("node-0").annotation("kubernetes.io/ingress-bandwidth", "400M")
        for i in range(2)
    ]
    snap = Snapshot.of(node_infos([make_node(n) for n in RX], pods))
    args = PrometheusArgs(
        prometheus_address=world.prom.url,
        # Polls are triggered; the outage is a killed Prometheus (connection refused at once),
        # not a slow one, so the deadline is one a loaded machine's Prometheus always meets
        # (0.5 s, the most a 1 s interval allows, timed out on a busy CI machine).
        poll_interval_seconds=10,
        timeout_seconds=5,
        max_sample_age_seconds=10,
        rate_window=WINDOW,
    )
    plugin = build_plugin(NetworkTraffic, NetworkTrafficArgs(args), metrics=hub, snapshot=snap)
    src = plugin.source
    fallback = {"source": src.name}
    hub.start(first_poll_timeout=10)
    try:
        assert not src.in_fallback
        assert scores(plugin, snap) == [99, 60, 20]  # measured: 1, 50, 100 MB/s of 125 MB/s

        world.prom.kill()
        for _ in range(3):
            assert hub.trigger(timeout=10)
        assert src.in_fallback
        assert reg.get_sample_value("netsched_metrics_fallback", fallback) == 1
        # By requests: node-0 has 2 x 400 Mb/s = 100 MB/s of its link, the others nothing.
        assert scores(plugin, snap) == [20, 100, 100]

        world.prom.restart()  # same port, same data dir
        wait_full_window(world.prom)
        assert hub.trigger(timeout=10)
        assert not src.in_fallback
        assert reg.get_sample_value("netsched_metrics_fallback", fallback) == 0
        rx, age = src.values(NETWORK_RX, snap)
        np.testing.assert_allclose(rx, list(RX.values()), rtol=0.05)
        assert np.all(age < 4)
        assert scores(plugin, snap) == [99, 60, 20]
    finally:
        hub.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("Prometheus unreachable" in m for m in messages) == 1, messages
    assert sum("Prometheus answers again" in m for m in messages) == 1, messages
    assert not any("query failed" in m for m in messages)
