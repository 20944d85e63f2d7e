"""The metrics pipeline against a real Prometheus scraping the synthetic exporter.

40 fake nodes, 1 s scrapes, 4 s rate windows.  Checks values per node
(rate() of the exporter's counters equals what was set), both mapping modes,
that lo/veth interfaces are excluded, one HTTP query per metric per poll
whatever the node count, the self-check, and the three plugins on top.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, MetricsHub, PrometheusArgs
from netsched.metrics.args import NodeMappingArgs
from netsched.plugins.load_aware import LoadAware, LoadAwareArgs
from netsched.plugins.load_threshold import LoadThreshold, LoadThresholdArgs
from netsched.plugins.network_traffic import NetworkTraffic, NetworkTrafficArgs
from netsched.testing.builders import make_node, make_pod
from netsched.testing.exporter import SyntheticExporter, fake_nodes
from netsched.testing.framework import build_framework, plugin_of
from netsched.testing.prometheus import PrometheusServer, require_prometheus

pytestmark = pytest.mark.integration

N = 40
ALL = (NETWORK_RX, NETWORK_TX, LINK_SPEED, CPU, MEMORY)
WINDOW = "4s"  # four 1 s scrapes


def expected(i: int) -> dict[str, float]:
    return {
        NETWORK_RX: 1e6 * (i + 1),
        NETWORK_TX: 0.5e6 * (i + 1),
        LINK_SPEED: 125e6,
        CPU: 0.02 * i,
        MEMORY: 0.3 + 0.01 * i,
    }


@dataclass
class World:
    prom: PrometheusServer
    exporter: SyntheticExporter
    snapshot: Snapshot

    def args(self, **kw: Any) -> PrometheusArgs:
        return PrometheusArgs(
            prometheus_address=self.prom.url,
            # Polls here are triggered (poll_now); the deadline is not under test (the fault
            # tests cover it), so it is one a loaded CI machine's real Prometheus always meets.
            poll_interval_seconds=10,
            timeout_seconds=5,
            max_sample_age_seconds=10,
            rate_window=WINDOW,
            **kw,
        )


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    binary = require_prometheus()
    nodes = fake_nodes(N)
    with SyntheticExporter(nodes, node_label="node", instance_port=9100) as exporter:
        for i, n in enumerate(nodes):
            e = expected(i)
            exporter.set_load(n.name, rx=e[NETWORK_RX], tx=e[NETWORK_TX], cpu=e[CPU], memory=e[MEMORY])
        prom = PrometheusServer([exporter.target], binary=binary)
        try:
            prom.start()
            # Wait until a full rate window of scrapes makes rate() exact for the busiest node.
            prom.wait_for(
                f'sum(rate(node_network_receive_bytes_total{{node="node-{N - 1}",device="eth0"}}[{WINDOW}]))',
                lambda r: (
                    bool(r) and abs(float(r[0]["value"][1]) - expected(N - 1)[NETWORK_RX]) < 0.01 * 40e6
                ),
            )
            snap = Snapshot.of(
                [make_node(n.name).address("InternalIP", n.ip).info() for n in nodes]
                + [make_node("ghost").info()]
            )
            yield World(prom, exporter, snap)
        finally:
            prom.close()


def assert_values(hub: MetricsHub, world: World, args: PrometheusArgs) -> None:
    src = hub.source(args)
    for metric in ALL:
        vals, age = src.values(metric, world.snapshot)
        want = np.array([expected(i)[metric] for i in range(N)])
        np.testing.assert_allclose(vals[:N], want, rtol=0.03, atol=0.005, err_msg=metric)
        assert np.isnan(vals[N])  # "ghost" has no series
        assert np.all(age[:N] < 5)


def test_poller_fills_the_cache_by_node_label(world: World) -> None:
    hub = MetricsHub()
    args = world.args()
    hub.source(args).require(*ALL)
    out = hub.poll_now()[0]
    assert out.table.errors == {}
    assert_values(hub, world, args)  # rx alone would be +1 GB/s if lo/veth were counted


def test_poller_maps_by_instance_address(world: World) -> None:
    hub = MetricsHub()
    args = world.args(node_mapping=NodeMappingArgs(by="instance"))
    src = hub.source(args)
    src.require(*ALL)
    assert "by (instance)" in src.query(CPU)
    hub.poll_now()
    assert_values(hub, world, args)


def test_one_query_per_metric_per_poll_for_all_nodes(world: World) -> None:
    hub = MetricsHub()
    src = hub.source(world.args())
    src.require(*ALL)
    hub.source(world.args(stale_policy="failClosed")).require(
        CPU, MEMORY
    )  # shares the poller and its queries
    before = world.prom.api_query_count()
    polls = 3
    for _ in range(polls):
        out = hub.poll_now()
        # One per metric, and one for every pod's usage (perPodUsage; this exporter has none).
        assert len(out) == 1 and out[0].queries == len(ALL) + 1
    assert world.prom.api_query_count() - before == polls * (len(ALL) + 1)  # counted by Prometheus itself
    # Scoring reads never query.
    before = world.prom.api_query_count()
    for _ in range(100):
        src.values(CPU, world.snapshot)
    assert world.prom.api_query_count() == before


def test_self_check_against_real_prometheus(world: World) -> None:
    reg = CollectorRegistry()
    hub = MetricsHub(registry=reg)
    src = hub.source(world.args())
    src.require(CPU)
    src.require_query("gpu", "avg by ($by) (DCGM_FI_DEV_GPU_UTIL)")  # no such metric: empty result
    hub.poll_now()
    hub.update_nodes(world.snapshot.nodes)
    report = src.self_check()
    by = {m.metric: m for m in report.metrics}
    assert by[CPU].nodes_without_series == ("ghost",) and by[CPU].unmapped_count == 0
    assert by["gpu"].empty and by["gpu"].nodes_without_series_count == N + 1
    assert reg.get_sample_value("netsched_metrics_query_empty", {"source": src.name, "metric": "gpu"}) == 1
    assert (
        reg.get_sample_value("netsched_metrics_nodes_without_series", {"source": src.name, "metric": CPU})
        == 1
    )
    text = "\n".join(report.problems())
    assert "avg by (node) (DCGM_FI_DEV_GPU_UTIL)" in text


def test_bad_promql_is_reported_and_others_still_poll(world: World) -> None:
    hub = MetricsHub()
    src = hub.source(world.args())
    src.require(CPU)
    src.require_query("broken", "sum by ($by) (")
    hub.poll_now()
    table = src.poller.table
    assert set(table.errors.values()) == {"bad_query"}
    assert not src.in_fallback
    assert np.isfinite(src.values(CPU, world.snapshot)[0][:N]).all()


def test_plugins_score_loaded_nodes_lower_and_filter_hot_ones(world: World) -> None:
    hub = MetricsHub()
    snap = world.snapshot
    prom = world.args()
    fwk = build_framework(
        [NetworkTraffic, LoadAware, LoadThreshold],
        args={
            NetworkTraffic.name: NetworkTrafficArgs(prom),
            LoadAware.name: LoadAwareArgs(prometheus=prom),
            LoadThreshold.name: LoadThresholdArgs(prometheus=prom),
        },
        metrics=hub,
        snapshot=snap,
    )
    network = plugin_of(fwk, NetworkTraffic)
    load_aware = plugin_of(fwk, LoadAware)
    threshold = plugin_of(fwk, LoadThreshold)
    assert network.source is load_aware.source is threshold.source
    hub.poll_now()
    pod = make_pod("web").req(cpu="100m", memory="128Mi").info()
    idx = np.arange(N, dtype=np.int64)  # the exported nodes
    state = CycleState()
    net = network.score_nodes(state, pod, snap, idx)
    load = load_aware.score_nodes(state, pod, snap, idx)
    # Node i carries (i + 1) MB/s and 2i % CPU: scores fall with i.
    assert np.all(np.diff(net) <= 0) and net[0] > net[-1]
    assert np.all(np.diff(load) <= 0) and load[0] > load[-1]
    assert net[0] == 99 and net[-1] == 68  # 1 MB/s and 40 MB/s of 125 MB/s
    rejected = threshold.filter_nodes(state, pod, snap, idx)
    assert len(rejected) == 1 and rejected[0].reasons == ("node(s) had cpu utilisation above 65%",)
    # 2i % plus the pod's 85m (0.85 x 100m) of the node's 4 cpu (2.1 %) > 65 %: from node 32 on.
    assert np.flatnonzero(rejected[0].mask).tolist() == list(range(32, N))
