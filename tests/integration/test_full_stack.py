"""The whole thing: fake API server + real Prometheus + synthetic exporter + netsched.

Pods land on the least-loaded nodes by measured bandwidth; killing Prometheus
keeps pods being placed (fallback to requests); restarting it brings the
measured scores back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from netsched.app import SchedulerApp
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE_FAST_BACKOFF, NETWORK_LOAD_ARGS
from netsched.testing.exporter import SyntheticExporter, fake_nodes
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.prometheus import PrometheusServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

WINDOW = "4s"
# bytes/s received per node; links are 1 Gb/s (125 MB/s) in the synthetic exporter.
RX = {"node-0": 110e6, "node-1": 90e6, "node-2": 2e6, "node-3": 1e6}

CONFIG = (
    NETSCHED_PROFILE_FAST_BACKOFF
    + """\
  plugins:
    multiPoint:
      enabled:
      - name: NetworkTraffic
        weight: 10
      - name: LoadThreshold
"""
    + NETWORK_LOAD_ARGS
)


def full_window(prom: PrometheusServer) -> None:
    prom.wait_for(
        f'rate(node_network_receive_bytes_total{{node="node-0",device="eth0"}}[{WINDOW}])',
        lambda r: bool(r) and abs(float(r[0]["value"][1]) - RX["node-0"]) < 0.02 * RX["node-0"],
        timeout=30,
    )


@pytest.fixture
def stack(
    server: FakeAPIServer,
    prometheus: Callable[..., PrometheusServer],
    scheduler_app: Callable[..., SchedulerApp],
) -> Iterator[tuple[FakeAPIServer, PrometheusServer, SchedulerApp]]:
    nodes = fake_nodes(4)
    with SyntheticExporter(nodes) as exporter:
        for name, rx in RX.items():
            exporter.set_load(name, rx=rx)
        for n in nodes:
            server.create(
                "nodes", make_node(n.name).capacity(cpu="8", memory="16Gi").address("InternalIP", n.ip).obj()
            )
        prom = prometheus([exporter.target])
        full_window(prom)
        app = scheduler_app(CONFIG.format(url=prom.url, window=WINDOW), start=True)
        assert app.hub.wait_polled(timeout=10)  # the first poll runs beside the loop
        yield server, prom, app


def placed(server: FakeAPIServer, names: list[str]) -> dict[str, str]:
    out = {}
    for n in names:
        node = server.get("pods", n)["spec"].get("nodeName")
        if node:
            out[n] = node
    return out


def create(server: FakeAPIServer, names: list[str]) -> None:
    for n in names:
        server.create("pods", make_pod(n).scheduler("netsched").req(cpu="100m").obj())


def test_least_loaded_then_outage_then_recovery(
    stack: tuple[FakeAPIServer, PrometheusServer, SchedulerApp],
) -> None:
    server, prom, app = stack
    source = app.hub.sources[0]
    assert not source.in_fallback

    first = [f"a-{i}" for i in range(6)]
    create(server, first)
    got = wait_until(
        lambda: len(placed(server, first)) == 6 and placed(server, first), what="first pods placed"
    )
    # node-0 is above the 80% threshold (filtered); node-1 is busy: both stay empty.
    assert set(got.values()) <= {"node-2", "node-3"}, got

    prom.kill()
    assert app.hub.trigger(timeout=10)  # a poll started after the kill: refused, so fallback
    assert source.in_fallback
    during = [f"b-{i}" for i in range(4)]
    create(server, during)
    got = wait_until(
        lambda: len(placed(server, during)) == 4 and placed(server, during), what="pods placed during outage"
    )
    assert len(got) == 4  # scheduling degrades, never stops

    prom.restart()
    full_window(prom)
    assert app.hub.trigger(timeout=10)
    assert not source.in_fallback
    after = [f"c-{i}" for i in range(4)]
    create(server, after)
    got = wait_until(
        lambda: len(placed(server, after)) == 4 and placed(server, after), what="pods placed after recovery"
    )
    assert set(got.values()) <= {"node-2", "node-3"}, got
