"""Churn with queueing hints: parked pods retried only when an event could help them.

    python -m benchmarks.bench_churn [--nodes 5000] [--parked 2000] [--pods 10000]
                                     [--batch 100] [--heartbeats 500] [--no-hints]

Like kube's scheduler_perf churn workloads, in process (InMemoryCluster, a
manual clock): `parked` pods that fit no node (64 CPUs on 32-CPU nodes) are
parked as unschedulable first; then `pods` schedulable pods arrive in batches,
and between batches one simulated second passes, during which `heartbeats`
nodes post a status update (new heartbeat times only, as a kubelet does every
10 s) and one node is relabelled.  Neither can help a pod NodeResourcesFit
rejected: with hints none of them moves a parked pod; without (--no-hints,
every event moves every parked pod, as before hints) the parked pods are
retried whenever their backoff has expired.  Prints pods/s (arriving pods
bound per second of scheduling, heartbeats' handling included) and the
scheduling attempts spent on parked pods.  Run both modes with --compare.
"""

from __future__ import annotations

import argparse
import copy
import gc
import time
from typing import Any

from benchmarks.common import config, nodes, out, pods
from netsched.clock import ManualClock
from netsched.inmemory import InMemoryCluster


def _heartbeat(raw: dict[str, Any], second: int) -> dict[str, Any]:
    beat = copy.copy(raw)
    status = dict(raw.get("status") or {})
    stamp = f"2024-05-01T{10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"
    status["conditions"] = [
        dict(c, lastHeartbeatTime=stamp)
        for c in status.get("conditions") or [{"type": "Ready", "status": "True"}]
    ]
    beat["status"] = status
    meta = dict(raw.get("metadata") or {})
    meta["resourceVersion"] = str(second)
    beat["metadata"] = meta
    return beat


def run(
    n_nodes: int, n_parked: int, n_pods: int, batch: int, heartbeats: int, hints: bool = True
) -> dict[str, float]:
    cfg, reg = config()
    clock = ManualClock()
    cluster = InMemoryCluster(cfg, reg, clock=clock)
    cluster.queue.queueing_hints = hints
    node_objs = nodes(n_nodes)
    cluster.add_nodes(node_objs)
    cluster.add_pods(pods(n_parked, cpu="64", prefix="parked"))
    parked_attempts = cluster.schedule_pending()
    assert cluster.pending()["unschedulable"] == n_parked, cluster.pending()
    arriving = pods(n_pods, prefix="arrive")
    gc.collect()
    attempts = bound_before = 0
    bound_before = len(cluster.placements)
    cpu0, t0 = time.process_time(), time.perf_counter()
    beat_at = 0
    for second, start in enumerate(range(0, n_pods, batch), start=1):
        cluster.add_pods(arriving[start : start + batch])
        attempts += cluster.schedule_pending()
        clock.step(1.0)
        for _ in range(heartbeats):
            cluster.handlers.on_node_event("MODIFIED", _heartbeat(node_objs[beat_at], second))
            beat_at = (beat_at + 1) % n_nodes
        relabelled = copy.deepcopy(node_objs[second % n_nodes])
        relabelled["metadata"]["labels"]["churn"] = str(second)
        cluster.handlers.on_node_event("MODIFIED", relabelled)
        node_objs[second % n_nodes] = relabelled
        cluster.queue.flush_backoff_completed()
    attempts += cluster.schedule_pending()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    bound = len(cluster.placements) - bound_before
    return {
        "hints": float(hints),
        "nodes": n_nodes,
        "parked": n_parked,
        "pods": n_pods,
        "bound": bound,
        "seconds": elapsed,
        "pods_per_s": bound / elapsed if elapsed else 0.0,
        "cpu_ms_per_pod": 1000 * cpu / max(1, bound),
        "parked_attempts": attempts - bound,
        "initial_parked_attempts": parked_attempts,
        "still_parked": cluster.pending()["unschedulable"],
    }


def _print(r: dict[str, float], heartbeats: int) -> None:
    mode = "with hints" if r["hints"] else "WITHOUT hints"
    out(
        f"churn {mode}: {r['bound']:.0f}/{r['pods']:.0f} arriving pods bound on {r['nodes']:.0f} nodes "
        f"in {r['seconds']:.2f}s = {r['pods_per_s']:.0f} pods/s ({r['cpu_ms_per_pod']:.2f} ms CPU/pod), "
        f"{heartbeats} heartbeats + 1 relabel per simulated second; attempts of the {r['parked']:.0f} parked "
        f"pods while they arrived: {r['parked_attempts']:.0f}"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--parked", type=int, default=2000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--batch", type=int, default=100, help="pods arriving per simulated second")
    p.add_argument("--heartbeats", type=int, default=500, help="node status updates per simulated second")
    p.add_argument("--no-hints", action="store_true", help="every event moves every parked pod")
    p.add_argument("--compare", action="store_true", help="run with and without hints")
    a = p.parse_args()
    modes = [True, False] if a.compare else [not a.no_hints]
    results = [run(a.nodes, a.parked, a.pods, a.batch, a.heartbeats, hints) for hints in modes]
    for r in results:
        _print(r, a.heartbeats)
    if len(results) == 2 and results[1]["pods_per_s"]:
        out(f"speed-up with hints: {results[0]['pods_per_s'] / results[1]['pods_per_s']:.1f}x")


if __name__ == "__main__":
    main()
