"""Poll duration against a real Prometheus, at 10 and 5000 nodes.

    python -m benchmarks.bench_poll [--nodes 10 5000] [--polls 10]

Starts Debian's `prometheus` on 127.0.0.1 scraping the synthetic node
exporter (one set of node_exporter series per fake node), lets a rate window
fill, then times MetricsHub.poll_now() for the metrics the three load-aware
plugins need (network rx/tx, link speed, cpu, memory).  Queries per poll are
counted by Prometheus itself (prometheus_http_requests_total for
/api/v1/query) and must equal the number of distinct metrics at every size.
"""

from __future__ import annotations

import argparse
import statistics
import time

from prometheus_client import CollectorRegistry

from benchmarks.common import out, table
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, MetricsHub, PrometheusArgs
from netsched.testing.exporter import SyntheticExporter, fake_nodes
from netsched.testing.prometheus import PrometheusServer, require_prometheus

METRICS = (NETWORK_RX, NETWORK_TX, LINK_SPEED, CPU, MEMORY)
WINDOW = "20s"


def run(n_nodes: int, polls: int) -> dict[str, float]:
    binary = require_prometheus()
    nodes = fake_nodes(n_nodes)  # mapped by their node label, so the address text does not matter
    with SyntheticExporter(nodes) as exporter:
        for i, n in enumerate(nodes):
            exporter.set_load(n.name, rx=1e6 * (i % 100), tx=5e5, cpu=(i % 10) / 10)
        prom = PrometheusServer([exporter.target], binary=binary, scrape_interval="5s")
        try:
            prom.start()
            last = nodes[-1].name
            prom.wait_for(
                f'rate(node_network_receive_bytes_total{{node="{last}",device="eth0"}}[{WINDOW}])',
                lambda r: bool(r),
                timeout=120,
            )
            hub = MetricsHub(registry=CollectorRegistry())
            args = PrometheusArgs(
                prometheus_address=prom.url, timeout_seconds=30, poll_interval_seconds=60, rate_window=WINDOW
            )
            src = hub.source(args)
            src.require(*METRICS)
            hub.update_nodes((n.name, [("InternalIP", n.ip)], {}) for n in nodes)
            hub.poll_now()  # warm-up (connection, first alignment)
            before = prom.api_query_count()
            durations = []
            for _ in range(polls):
                t0 = time.perf_counter()
                hub.poll_now()
                durations.append(time.perf_counter() - t0)
            queries = prom.api_query_count() - before
            report = src.self_check()
            hub.stop()
        finally:
            prom.close()
    return {
        "nodes": n_nodes,
        "metrics": len(METRICS),
        "queries_per_poll": queries / polls,
        "median_ms": 1000 * statistics.median(durations),
        "max_ms": 1000 * max(durations),
        # Nodes missing from the busiest check: all nodes must resolve to a series.
        "nodes_without_series": float(max(m.nodes_without_series_count for m in report.metrics)),
        "mapped_nodes": float(report.nodes),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, nargs="+", default=[10, 5000])
    p.add_argument("--polls", type=int, default=10)
    a = p.parse_args()
    rows = []
    for n in a.nodes:
        r = run(n, a.polls)
        rows.append(
            [
                n,
                int(r["metrics"]),
                f"{r['queries_per_poll']:g}",
                f"{r['median_ms']:.1f}",
                f"{r['max_ms']:.1f}",
                f"{int(r['nodes_without_series'])} of {int(r['mapped_nodes'])}",
            ]
        )
    out("Poll against a real Prometheus (synthetic node exporter, 5 s scrapes)")
    out(
        table(
            rows,
            [
                "nodes",
                "distinct metrics",
                "queries/poll",
                "poll ms (median)",
                "poll ms (max)",
                "nodes without series",
            ],
        )
    )


if __name__ == "__main__":
    main()
