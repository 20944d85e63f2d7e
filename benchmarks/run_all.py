"""Every benchmark, one command, one table each.

    python -m benchmarks.run_all            # full sizes (about a minute on 2 cores)
    python -m benchmarks.run_all --quick    # smaller sizes (well under a minute)

1. In-process throughput (benchmarks.bench_inprocess): the scheduling cycle
   alone, at 500, 1000 and 5000 nodes, kube's default profile and the same with
   NetworkTraffic + LoadAware + LoadThreshold fed static metrics through the
   real metrics hub.  Each case runs in a fresh process (clean heap, honest RSS).
2. End to end (benchmarks.bench_e2e): the whole scheduler over HTTP against
   the fake API server in another process.
3. Metrics polling: poll duration and queries per poll at 10 and 5000 nodes
   through netsched.testing's FakePrometheus (the pipeline's own cost: no
   HTTP), and the queries made while scheduling pods (must be 0).
4. Placement quality (benchmarks.quality).
5. Gang scheduling (benchmarks.bench_gang): 100 gangs of 8 on 500 nodes in zones
   and racks with Coscheduling (and with GangTopology: each gang whole in one
   rack), pods/s, gangs whole in one rack, last member -> gang bound p50/p99, and
   reservations held after failed / timed-out gangs (must be none).
6. Rebalancing (benchmarks.bench_rebalance): the shipped rebalance scenarios through
   `netsched simulate`, each issue 40 target next to its measured figure.

Figures are printed, never asserted: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from dataclasses import dataclass

from benchmarks import bench_e2e, bench_gang, bench_rebalance, quality
from benchmarks.bench_inprocess import METRICS_PROFILE, static_metrics_hub
from benchmarks.bench_inprocess import run as inprocess_run
from benchmarks.common import config, isolated, nodes, out, pods, table


@dataclass(frozen=True)
class Sizes:
    inprocess: tuple[tuple[int, int], ...]  # (nodes, pods)
    e2e: tuple[int, int]


FULL = Sizes(((500, 1000), (1000, 2000), (5000, 10000)), (1000, 2000))
QUICK = Sizes(((500, 500), (1000, 1000), (5000, 1000)), (200, 400))
POLL_NODES = (10, 5000)


def inprocess_case(n_nodes: int, n_pods: int, profile: str) -> dict[str, float]:
    """One in-process run (called in a fresh process)."""
    if profile == "metrics":
        hub, fake = static_metrics_hub(n_nodes)
        return inprocess_run(n_nodes, n_pods, "plain", METRICS_PROFILE, hub, fake)
    return inprocess_run(n_nodes, n_pods)


def poll_case(n_nodes: int, polls: int = 7, n_pods: int = 200) -> dict[str, float]:
    """Poll duration and query counts for the three metrics plugins over n_nodes."""
    from netsched.inmemory import InMemoryCluster

    cfg, reg = config(METRICS_PROFILE)
    hub, fake = static_metrics_hub(n_nodes)
    cluster = InMemoryCluster(cfg, reg, metrics_hub=hub)
    cluster.add_nodes(nodes(n_nodes))
    # Poller.keys() is the poller's list of queries (a method, not a dict view).
    distinct = len({key.promql for poller in hub.pollers for key in poller.keys()})  # noqa: SIM118
    queries, seconds = [], []
    for _ in range(polls):
        outcomes = hub.poll_now()
        queries.append(sum(o.queries for o in outcomes))
        seconds.append(sum(o.seconds for o in outcomes))
    before = len(fake.calls)
    cluster.add_pods(pods(n_pods))
    cluster.schedule_pending()
    bound = len(cluster.placements)
    return {
        "nodes": n_nodes,
        "distinct_metrics": distinct,
        "queries_per_poll": max(queries),
        "poll_ms_median": 1000 * statistics.median(seconds),
        "poll_ms_max": 1000 * max(seconds),
        "pods": bound,
        "queries_per_pod": (len(fake.calls) - before) / max(1, bound),
    }


def main() -> None:
    p = argparse.ArgumentParser(description="Run every netsched benchmark and print the figures")
    p.add_argument("--quick", action="store_true", help="smaller sizes (under a minute)")
    a = p.parse_args()
    logging.basicConfig(level=logging.ERROR)
    sizes = QUICK if a.quick else FULL
    started = time.perf_counter()

    rows = []
    for n_nodes, n_pods in sizes.inprocess:
        for profile in ("default", "metrics"):
            r = isolated(inprocess_case, n_nodes, n_pods, profile)
            rows.append(
                [
                    n_nodes,
                    f"{r['bound']:.0f}/{n_pods}",
                    profile,
                    f"{r['pods_per_s']:.0f}",
                    f"{r['cpu_ms_per_pod']:.3f}",
                    f"{r['queries_while_scheduling']:.0f}",
                    f"{r['peak_rss_mib']:.0f}",
                ]
            )
    out("\n1. In-process throughput (scheduling cycle, synchronous binding)")
    out(table(rows, ["nodes", "pods bound", "profile", "pods/s", "CPU ms/pod", "queries", "peak RSS MiB"]))

    n_nodes, n_pods = sizes.e2e
    r = bench_e2e.run(n_nodes, n_pods, qps=500, burst=1000)
    out(
        "\n2. End to end over HTTPS, realistic objects (fake API server in another process, qps 500, burst 1000)"
    )
    out(
        table(
            [
                [
                    n_nodes,
                    f"{r['bound']:.0f}/{n_pods}",
                    f"{r['pods_per_s']:.0f}",
                    f"{r['cpu_ms_per_pod']:.2f}",
                    f"{r['peak_rss_mib']:.0f}",
                ]
            ],
            ["nodes", "pods bound", "pods/s", "scheduler CPU ms/pod", "peak RSS MiB"],
        )
    )

    polls = [isolated(poll_case, n) for n in POLL_NODES]
    out("\n3. Metrics polling (NetworkTraffic + LoadAware + LoadThreshold, FakePrometheus, no HTTP)")
    out(
        table(
            [
                [
                    f"{r['nodes']:.0f}",
                    f"{r['distinct_metrics']:.0f}",
                    f"{r['queries_per_poll']:.0f}",
                    f"{r['poll_ms_median']:.2f}",
                    f"{r['poll_ms_max']:.2f}",
                    f"{r['queries_per_pod']:g} ({r['pods']:.0f} pods)",
                ]
                for r in polls
            ],
            ["nodes", "distinct metrics", "queries/poll", "poll ms (median)", "poll ms (max)", "queries/pod"],
        )
    )

    out("\n4. Placement quality (netsched/examples/config.yaml vs kube's default profile)")
    out(quality.render(quality.run()))
    out("\n5. Gang scheduling (100 gangs of 8 on 500 nodes in 5 zones of 5 racks, 10 failing, 10 timing out)")
    for profile in ("coscheduling", "topology"):
        g = isolated(bench_gang.run, 500, 100, 8, 10, 10, profile)
        out(bench_gang.render(g))
    out("\n6. Rebalancing (netsched/examples/rebalance-*.yaml through netsched simulate)")
    bench_rebalance.report(None)
    out(f"\nall benchmarks: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
