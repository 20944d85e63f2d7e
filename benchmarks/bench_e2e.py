"""End to end over HTTP: the real scheduler against the fake API server in another process.

    python -m benchmarks.bench_e2e [--nodes 1000] [--pods 2000] [--qps 500] [--burst 1000]

The API server runs in a child process so the figures are the scheduler's
alone: pods/s from the first pod popped to the last bind confirmed, and the
scheduler process's CPU seconds per bound pod (all its threads: reflectors,
scheduling loop, binding pool, event writers). The API server also notes when
it stored each binding and each pod's `Scheduled` event: their difference is
the binding -> event latency (p50/p99/max over every bound pod; kube-scheduler
keeps it under a second), and events missing after shutdown's flush are counted.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import config, nodes, out, peak_rss_mib, pods


def _serve(n_nodes: int, n_pods: int, kubeconfig: str, ready: Any, stop: Any, result: Any) -> None:
    from netsched.testing.fakeapi import FakeAPIServer

    with FakeAPIServer(watch_timeout=300) as srv:
        bound, scheduled = _timestamps(srv)
        for n in nodes(n_nodes):
            srv.create("nodes", n)
        for p in pods(n_pods):
            srv.create("pods", p)
        srv.write_kubeconfig(kubeconfig)
        ready.set()
        stop.wait()
        lags = sorted(scheduled[k] - t for k, t in bound.items() if k in scheduled)
        result.put({"bound": len(bound), "lags": lags})


def _timestamps(srv: Any) -> tuple[dict[str, float], dict[str, float]]:
    """Note, server side, when each pod was bound and when its Scheduled event was stored."""
    store = srv.store
    bound: dict[str, float] = {}
    scheduled: dict[str, float] = {}
    lock = threading.Lock()
    bind, create = store.bind, store.create

    def timed_bind(namespace: str, name: str, node: str, **kw: Any) -> Any:
        out = bind(namespace, name, node, **kw)
        with lock:
            bound[f"{namespace}/{name}"] = time.monotonic()
        return out

    def timed_create(rt: Any, namespace: str | None, body: Any) -> Any:
        out = create(rt, namespace, body)
        if body.get("reason") == "Scheduled":
            ref = body.get("regarding") or body.get("involvedObject") or {}
            with lock:
                scheduled.setdefault(f"{ref.get('namespace')}/{ref.get('name')}", time.monotonic())
        return out

    store.bind, store.create = timed_bind, timed_create
    return bound, scheduled


def run(n_nodes: int, n_pods: int, qps: float, burst: int) -> dict[str, float]:
    from netsched.app import AppOptions, SchedulerApp
    from netsched.kube import KubeAPI, build_api_client

    ctx = mp.get_context("spawn")
    ready, stop, result = ctx.Event(), ctx.Event(), ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        proc = ctx.Process(
            target=_serve, args=(n_nodes, n_pods, kubeconfig, ready, stop, result), daemon=True
        )
        proc.start()
        try:
            if not ready.wait(120):
                raise RuntimeError("fake API server did not start")
            cfg, reg = config()
            client = build_api_client(kubeconfig, qps=qps, burst=burst, pool_size=cfg.parallelism + 8)
            app = SchedulerApp(
                cfg, reg, KubeAPI(client), options=AppOptions(metrics_bind_address="127.0.0.1:0")
            )
            app.start_informers(sync_timeout=120)
            app.start_background()
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            app.start_scheduling()
            deadline = time.monotonic() + 600
            while app.scheduler.scheduled < n_pods and time.monotonic() < deadline:
                time.sleep(0.01)
            elapsed = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            bound = app.scheduler.scheduled
            app.shutdown(timeout=10)
            dropped = app.broadcaster.dropped
        finally:
            stop.set()
        served = result.get(timeout=60)
        proc.join(10)
    lags = served["lags"]
    return {
        "events": len(lags),
        "events_missing": served["bound"] - len(lags),
        "events_dropped": dropped,
        "event_p50_ms": 1000 * statistics.median(lags) if lags else float("nan"),
        "event_p99_ms": 1000 * lags[min(len(lags) - 1, int(0.99 * len(lags)))] if lags else float("nan"),
        "event_max_ms": 1000 * lags[-1] if lags else float("nan"),
        "nodes": n_nodes,
        "pods": n_pods,
        "bound": bound,
        "seconds": elapsed,
        "pods_per_s": bound / elapsed if elapsed else 0.0,
        "cpu_ms_per_pod": 1000 * cpu / max(1, bound),
        "peak_rss_mib": peak_rss_mib(),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--qps", type=float, default=500)
    p.add_argument("--burst", type=int, default=1000)
    a = p.parse_args()
    r = run(a.nodes, a.pods, a.qps, a.burst)
    out(
        f"end-to-end over HTTP qps={a.qps:g} burst={a.burst}: {r['bound']:.0f}/{r['pods']:.0f} pods on {r['nodes']:.0f} nodes "
        f"in {r['seconds']:.2f}s = {r['pods_per_s']:.0f} pods/s, scheduler CPU {r['cpu_ms_per_pod']:.2f} ms/pod, "
        f"peak RSS {r['peak_rss_mib']:.0f} MiB"
    )
    out(
        f"binding -> Scheduled event (server side): p50 {r['event_p50_ms']:.0f} ms, p99 {r['event_p99_ms']:.0f} ms, "
        f"max {r['event_max_ms']:.0f} ms over {r['events']:.0f} events; missing {r['events_missing']:.0f}, "
        f"dropped {r['events_dropped']:.0f}"
    )


if __name__ == "__main__":
    main()
