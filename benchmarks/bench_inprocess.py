"""In-process scheduling throughput: queue + cache + frameworks + plugins, no API server.

    python -m benchmarks.bench_inprocess [--nodes 5000] [--pods 10000] [--profile default|metrics|both]
                                         [--rounds 1] [--kind plain|spread] [--shapes 1]

Binding is applied synchronously (the pod is confirmed on its node at once),
so the figure is the scheduling cycle's own rate, as kube's scheduler_perf
SchedulingBasic measures it.  Also prints peak RSS.

`--profile metrics` adds NetworkTraffic, LoadAware and LoadThreshold, fed
static per-node metrics by netsched.testing's FakePrometheus through the real
metrics hub (one poll before scheduling); the queries the fake answered while
pods were being scheduled are counted (`queries_while_scheduling`, always 0).
"""

from __future__ import annotations

import argparse
import gc
import re
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks.common import config, nodes, out, peak_rss_mib, pods
from netsched.demo import LOAD_AWARE_PLUGINS
from netsched.inmemory import InMemoryCluster

# The three metrics plugins on top of kube's defaults (deploy/configmap.yaml's weights): the
# demo's load-aware profile.
METRICS_PROFILE = LOAD_AWARE_PLUGINS
GBIT_BYTES = 125_000_000.0


def static_metrics_hub(n_nodes: int) -> tuple[Any, Any]:
    """(MetricsHub, FakePrometheus) serving fixed, varied load for the nodes of common.nodes(n)."""
    from netsched.metrics import BUILTIN_METRICS, CPU, LINK_SPEED, MEMORY, PrometheusArgs
    from netsched.metrics.queries import builtin_query
    from netsched.testing.prometheus import fake_hub

    hub, fake = fake_hub()
    names = [f"node-{i:05d}" for i in range(n_nodes)]
    # Every plugin uses the default `prometheus:` block, so these are the queries polled.
    args = PrometheusArgs()
    for metric in BUILTIN_METRICS:
        if metric == LINK_SPEED:
            values = dict.fromkeys(names, 10 * GBIT_BYTES)
        elif metric in (CPU, MEMORY):
            values = {n: 0.1 + 0.5 * ((i * 7) % 10) / 10 for i, n in enumerate(names)}
        else:
            values = {n: GBIT_BYTES * ((i * 13) % 10) for i, n in enumerate(names)}
        fake.set(builtin_query(metric, args), values)
    return hub, fake


def run(
    n_nodes: int,
    n_pods: int,
    kind: str = "plain",
    extra_config: str = "",
    hub: Any = None,
    fake: Any = None,
    apps: int = 50,
    shapes: int = 1,
) -> dict[str, float]:
    """`fake`: the FakePrometheus behind `hub`, to count queries made while scheduling;
    `apps`: how many values the pods' `app` label takes (workloads); `shapes`: how many
    CPU requests the pods take in turn (1: every pod alike; n_pods: every pod its own)."""
    cfg, reg = config(extra_config)
    cluster = InMemoryCluster(cfg, reg, metrics_hub=hub)
    cluster.add_nodes(nodes(n_nodes))
    objs = pods(n_pods, spread=kind == "spread", anti_affinity=kind == "spread", apps=apps)
    if shapes > 1:
        for i, pod in enumerate(objs):
            pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = f"{250 + i % shapes}m"
    cluster.add_pods(objs)
    if hub is not None:
        hub.poll_now()
    calls = len(fake.calls) if fake is not None else 0
    gc.collect()
    started = time.perf_counter()
    cpu0 = time.process_time()
    attempts = cluster.schedule_pending()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    return {
        "queries_while_scheduling": (len(fake.calls) - calls) if fake is not None else 0,
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
    p.add_argument(
        "--profile",
        choices=("default", "metrics", "both"),
        default="default",
        help="both: default then metrics, each in a process of its own, --rounds times (interleaved, "
        "so a busy moment hits both alike), then each round's ratio, their median and the best-of "
        "ratio (issue 31's target: <= 1.3)",
    )
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument(
        "--shapes",
        type=int,
        default=1,
        help="CPU requests the pods take in turn (default 1: alike, as a ReplicaSet's). LoadAware "
        "keeps the scores of the first 4 repeated loads per poll; the others (--shapes 7), or "
        "every pod different (--shapes N with N = --pods), take the per-pod path",
    )
    a = p.parse_args()
    if a.profile == "both":
        compare(a.nodes, a.pods, a.kind, a.shapes, a.rounds)
        return
    for _ in range(a.rounds):
        r = run_profile(a.profile, a.nodes, a.pods, a.kind, a.shapes)
        shapes = f" shapes={a.shapes}" if a.shapes > 1 else ""
        out(
            f"in-process {a.profile} profile kind={a.kind}{shapes}: {r['bound']:.0f}/{r['pods']:.0f} pods on "
            f"{r['nodes']:.0f} nodes in {r['seconds']:.2f}s = {r['pods_per_s']:.0f} pods/s, "
            f"{r['cpu_ms_per_pod']:.3f} CPU ms/pod, peak RSS {r['peak_rss_mib']:.0f} MiB"
        )


def compare(n_nodes: int, n_pods: int, kind: str, shapes: int, rounds: int) -> None:
    """Each profile in a process of its own (a second run in one process is slowed by the first's
    heap), alternating, `rounds` times; then each round's ratio, their median and the best-of
    ratio."""
    best: dict[str, float] = {}
    ratios = []  # each round's metrics over the default run just before it
    last_default = 0.0
    for _ in range(rounds):
        for profile in ("default", "metrics"):
            args = ["--nodes", str(n_nodes), "--pods", str(n_pods), "--kind", kind, "--shapes", str(shapes)]
            cmd = [sys.executable, "-m", "benchmarks.bench_inprocess", "--profile", profile, *args]
            line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
            out(line)
            got = re.search(r"([0-9.]+) CPU ms/pod", line)
            if got is None:
                raise RuntimeError(f"no CPU figure in {line!r}")
            cpu = float(got[1])
            best[profile] = min(best.get(profile, cpu), cpu)
            if profile == "default":
                last_default = cpu
            else:
                ratios.append(cpu / last_default)
    out(
        f"per-round ratios (metrics / the default run before it): {' '.join(f'{r:.2f}' for r in ratios)}, "
        f"median {statistics.median(ratios):.2f}"
    )
    out(
        f"metrics / default CPU per pod (best of {rounds}, interleaved): "
        f"{best['metrics']:.3f} / {best['default']:.3f} = {best['metrics'] / best['default']:.2f}x"
    )


def run_profile(profile: str, n_nodes: int, n_pods: int, kind: str, shapes: int) -> dict[str, float]:
    if profile == "default":
        return run(n_nodes, n_pods, kind, shapes=shapes)
    hub, fake = static_metrics_hub(n_nodes)
    try:
        return run(n_nodes, n_pods, kind, METRICS_PROFILE, hub, fake, shapes=shapes)
    finally:
        hub.stop()


if __name__ == "__main__":
    main()
