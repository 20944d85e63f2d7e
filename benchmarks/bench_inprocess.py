"""In-process scheduling throughput: queue + cache + frameworks + plugins, no API server.

    python -m benchmarks.bench_inprocess [--nodes 5000] [--pods 10000] [--profile default|metrics] [--kind plain|spread]

Binding is applied synchronously (the pod is confirmed on its node at once),
so the figure is the scheduling cycle's own rate, as kube's scheduler_perf
SchedulingBasic measures it.  Also prints peak RSS.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from benchmarks.common import config, nodes, out, peak_rss_mib, pods
from netsched.inmemory import InMemoryCluster


def run(
    n_nodes: int, n_pods: int, kind: str = "plain", extra_config: str = "", hub: Any = None
) -> dict[str, float]:
    cfg, reg = config(extra_config)
    cluster = InMemoryCluster(cfg, reg, metrics_hub=hub)
    cluster.add_nodes(nodes(n_nodes))
    cluster.add_pods(pods(n_pods, spread=kind == "spread", anti_affinity=kind == "spread"))
    gc.collect()
    started = time.perf_counter()
    cpu0 = time.process_time()
    attempts = cluster.schedule_pending()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    return {
        "nodes": n_nodes,
        "pods": n_pods,
        "attempts": attempts,
        "bound": len(cluster.placements),
        "seconds": elapsed,
        "pods_per_s": len(cluster.placements) / elapsed if elapsed else 0.0,
        "cpu_ms_per_pod": 1000 * cpu / max(1, len(cluster.placements)),
        "peak_rss_mib": peak_rss_mib(),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--kind", choices=("plain", "spread"), default="plain")
    a = p.parse_args()
    r = run(a.nodes, a.pods, a.kind)
    out(
        f"in-process default profile kind={a.kind}: {r['bound']:.0f}/{r['pods']:.0f} pods on {r['nodes']:.0f} nodes "
        f"in {r['seconds']:.2f}s = {r['pods_per_s']:.0f} pods/s, {r['cpu_ms_per_pod']:.3f} CPU ms/pod, "
        f"peak RSS {r['peak_rss_mib']:.0f} MiB"
    )


if __name__ == "__main__":
    main()
