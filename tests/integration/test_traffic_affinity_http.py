"""TrafficAffinity end to end: fake API server over HTTP, a real Prometheus scraping Istio pair
counters from the synthetic exporter, the scheduler placing a pod next to its measured peer.

The exporter's pair counter grows only while both workloads have pods (it reads where they
are from the fake API server), so the graph the scheduler polls is the one its own placements
make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from netsched.app import SchedulerApp
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE_FAST_BACKOFF, NETWORK_LOAD_ARGS
from netsched.testing.exporter import fake_nodes
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.prometheus import PrometheusServer
from netsched.testing.traffic_exporter import REQUEST_SHARE, PairTrafficExporter
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

WINDOW = "4s"
NAME = "app.kubernetes.io/name"
RATE = 40e6  # bytes/s between web and db
CONFIG = (
    NETSCHED_PROFILE_FAST_BACKOFF
    + """\
  plugins:
    multiPoint:
      enabled:
      - name: NetworkTraffic
        weight: 3
      - name: LoadThreshold
      - name: TrafficAffinity
        weight: 5
"""
    + NETWORK_LOAD_ARGS
    + """\
  - name: TrafficAffinity
    args:
      levels: [example.com/rack]
      workloadLabel: app.kubernetes.io/name
      prometheus: *prom
"""
)


def placement(server: FakeAPIServer) -> dict[str, list[str]]:
    """Workload key -> nodes of its bound pods, read from the API server."""
    out: dict[str, list[str]] = {}
    for pod in server.list("pods"):
        node = pod["spec"].get("nodeName")
        name = (pod["metadata"].get("labels") or {}).get(NAME)
        if node and name:
            out.setdefault(f"{pod['metadata'].get('namespace', 'default')}/{name}", []).append(node)
    return out


@pytest.fixture
def stack(
    server: FakeAPIServer,
    prometheus: Callable[..., PrometheusServer],
    scheduler_app: Callable[..., SchedulerApp],
) -> Iterator[tuple[FakeAPIServer, PrometheusServer, SchedulerApp]]:
    nodes = fake_nodes(4)
    exporter = PairTrafficExporter(nodes)
    with exporter:
        exporter.set_pairs({("default/web", "default/db"): RATE}, lambda: placement(server))
        for i, n in enumerate(nodes):
            node = make_node(n.name).capacity(cpu="8", memory="16Gi").address("InternalIP", n.ip)
            server.create("nodes", node.label("example.com/rack", f"rack-{i // 2}").obj())
        prom = prometheus([exporter.target])
        yield server, prom, scheduler_app(CONFIG.format(url=prom.url, window=WINDOW), start=True)


def create(server: FakeAPIServer, name: str, workload: str, node: str = "") -> None:
    pod = make_pod(name).scheduler("netsched").req(cpu="100m").label(NAME, workload)
    server.create("pods", (pod.node(node) if node else pod).obj())


def node_of(server: FakeAPIServer, name: str) -> str:
    got: str = wait_until(lambda: server.get("pods", name)["spec"].get("nodeName"), what=f"{name} placed")
    return got


def test_pod_follows_its_measured_peer(stack: tuple[FakeAPIServer, PrometheusServer, SchedulerApp]) -> None:
    server, prom, app = stack
    # Already running, on two nodes: their flows load both nodes' links (16 % each way), so
    # NetworkTraffic alone would send the next web pod to an idle node.
    create(server, "db-0", "db", "node-3")
    create(server, "web-0", "web", "node-0")
    # The mesh measures the pair (TCP and HTTP bytes, each reported by both proxies); wait for
    # a full rate window of it in Prometheus, through the scheduler's own query.
    source = app.hub.sources[0]
    query = source.query("traffic_pairs")
    prom.wait_for(
        query,
        lambda r: len(r) == 2 and abs(sum(float(x["value"][1]) for x in r) - RATE) < 0.05 * RATE,
        timeout=30,
    )
    link = f'rate(node_network_receive_bytes_total{{node="node-3",device="eth0"}}[{WINDOW}])'
    # db's node receives the request bytes web's pod sends it.
    prom.wait_for(
        link, lambda r: bool(r) and float(r[0]["value"][1]) > 0.9 * REQUEST_SHARE * RATE, timeout=30
    )
    assert app.hub.trigger(timeout=10)
    pairs = source.series("traffic_pairs")
    assert pairs is not None
    got = dict(zip(pairs.keys, pairs.values.tolist(), strict=True))
    # TCP and HTTP bytes add up to the pair's rate, kept per direction: request bytes (HTTP
    # request, TCP received by the server) from web to db, response bytes back; the
    # destination's duplicates are left out (counted, the graph would read 2x; without HTTP, 0.6x).
    request, response = got["default|web|default|db|request"], got["default|web|default|db|response"]
    assert abs(request - REQUEST_SHARE * RATE) < 0.05 * RATE, request
    assert abs(response - (1 - REQUEST_SHARE) * RATE) < 0.05 * RATE, response
    # The next web pod goes next to db, whatever the first one did.
    create(server, "web-1", "web")
    assert node_of(server, "web-1") == "node-3"
    # One query per poll for the whole graph, however many pods and pairs.
    polled = source.poller.keys()
    assert [k.name for k in polled].count("traffic_pairs") == 1
