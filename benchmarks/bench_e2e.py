"""End to end over HTTP: the real scheduler against the fake API server in another process.

    python -m benchmarks.bench_e2e [--nodes 1000] [--pods 2000] [--qps 500] [--burst 1000]
                                   [--plain] [--profile FILE]

By default the fake speaks HTTPS (self-signed; the scheduler verifies it with
the CA in the kubeconfig) and returns realistic pods and nodes (managedFields,
full status and conditions: ~3.5 KB a pod, ~5.5 KB a node), as a real API
server does; --plain gives the old plain-HTTP, small-object mode.

The API server runs in a child process so the figures are the scheduler's
alone (all its threads: reflectors, scheduling loop, binding pool, event
writers).  Start-up (client construction, list+watch sync, until the first
bind) is reported apart from the steady state: CPU per bound pod counts only
from the first bind to the last.  The fake records every request, reported per
bound pod by verb and resource, and the steady CPU per bound pod split by
thread (scheduling loop, binding pool, event writer, reflectors: the kernel's
per-thread run time), with each thread group's waits per pod (voluntary
context switches: for I/O, a queue, a lock or the GIL; each wake-up costs CPU).
--profile FILE runs every scheduler thread under cProfile timed by thread CPU
(waits for the GIL or the network cost nothing) and writes the merged stats
(top costs printed) to FILE and each thread group's to FILE.<group>.  The API
server also notes when it stored each binding and each pod's `Scheduled` event: their difference is
the binding -> event latency (p50/p99/max over every bound pod; kube-scheduler
keeps it under a second), and events missing after shutdown's flush are counted.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import multiprocessing as mp
import pstats
import re
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import config, fill, out, peak_rss_mib, pods, server_timestamps, thread_cpu


def _serve(
    n_nodes: int, n_pods: int, realistic: bool, kubeconfig: str, ready: Any, stop: Any, result: Any
) -> None:
    from netsched.testing.fakeapi import FakeAPIServer

    with FakeAPIServer(watch_timeout=300, tls=realistic, realistic=realistic) as srv:
        bound, scheduled = server_timestamps(srv)
        fill(srv, n_nodes, pods(n_pods))
        srv.write_kubeconfig(kubeconfig)
        srv.clear_requests()
        ready.set()
        stop.wait()
        lags = sorted(scheduled[k] - t for k, t in bound.items() if k in scheduled)
        calls = Counter(
            f"{r.verb} {r.resource}{'/' + r.subresource if r.subresource else ''}" for r in srv.requests
        )
        result.put({"bound": len(bound), "lags": lags, "requests": dict(calls)})


class _ThreadProfiles:
    """cProfile covers one thread: run every thread started from now on under its own profiler."""

    def __init__(self) -> None:
        self.profiles: list[tuple[str, cProfile.Profile]] = []
        self._run = threading.Thread.run

    def __enter__(self) -> _ThreadProfiles:
        profiles, run = self.profiles, self._run

        def profiled(thread: threading.Thread) -> None:
            prof = cProfile.Profile(time.thread_time)
            profiles.append((re.sub(r"[-_]\d+(_\d+)?$", "", thread.name), prof))
            prof.runcall(run, thread)

        threading.Thread.run = profiled  # type: ignore[method-assign,assignment]
        main = cProfile.Profile(time.thread_time)
        self.profiles.append(("MainThread", main))
        main.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        self.profiles[0][1].disable()
        threading.Thread.run = self._run  # type: ignore[method-assign]

    def dump(self, path: str) -> pstats.Stats:
        """Write the merged stats to `path` and each thread group's to `path.<group>`."""
        merged: pstats.Stats | None = None
        groups: dict[str, pstats.Stats] = {}
        for group, prof in self.profiles:
            with contextlib.suppress(TypeError):  # a thread still running has no stats yet
                one = pstats.Stats(prof)
                merged = one if merged is None else merged.add(prof)
                if group in groups:
                    groups[group].add(prof)
                else:
                    groups[group] = pstats.Stats(prof)
        assert merged is not None
        merged.dump_stats(path)
        for group, stats in groups.items():
            stats.dump_stats(f"{path}.{group}")
        return merged


def run(
    n_nodes: int,
    n_pods: int,
    qps: float,
    burst: int,
    realistic: bool = True,
    profile: str = "",
    extra_config: str = "",
) -> dict[str, Any]:
    """`extra_config`: the profile's lines under `- schedulerName: netsched` (benchmarks.common.PROFILE)."""
    from netsched.app import AppOptions, SchedulerApp
    from netsched.kube import KubeAPI, build_api_client

    ctx = mp.get_context("spawn")
    ready, stop, result = ctx.Event(), ctx.Event(), ctx.Queue()
    profiles = _ThreadProfiles() if profile else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        proc = ctx.Process(
            target=_serve, args=(n_nodes, n_pods, realistic, kubeconfig, ready, stop, result), daemon=True
        )
        proc.start()
        try:
            if not ready.wait(300):
                raise RuntimeError("fake API server did not start")
            with profiles:
                cfg, reg = config(extra_config)
                # Launch: the process has imported netsched already; what follows is the start-up.
                cpu_launch, t_launch = time.process_time(), time.perf_counter()
                client = build_api_client(kubeconfig, qps=qps, burst=burst, pool_size=cfg.parallelism + 8)
                app = SchedulerApp(
                    cfg, reg, KubeAPI(client), options=AppOptions(metrics_bind_address="127.0.0.1:0")
                )
                app.start_informers(sync_timeout=300, freeze_heap=True)  # as the CLI does
                t_synced = time.perf_counter()
                app.start_background()
                t0 = time.perf_counter()
                app.start_scheduling()
                deadline = time.monotonic() + 600
                while app.scheduler.scheduled < 1 and time.monotonic() < deadline:
                    time.sleep(0.001)
                cpu_first, t_first = time.process_time(), time.perf_counter()
                threads_first = thread_cpu()
                while app.scheduler.scheduled < n_pods and time.monotonic() < deadline:
                    time.sleep(0.01)
                t_end, cpu_end = time.perf_counter(), time.process_time()
                threads_end = thread_cpu()
                bound = app.scheduler.scheduled
                pollers = app.hub.pollers
                app.shutdown(timeout=10)
                polls = sum(p.polls for p in pollers)  # after shutdown: a poll under way has finished
                dropped = app.broadcaster.dropped
        finally:
            stop.set()
        served = result.get(timeout=60)
        proc.join(10)
    if isinstance(profiles, _ThreadProfiles):
        stats = profiles.dump(profile)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
    lags = served["lags"]
    elapsed = t_end - t0
    steady = max(1, bound - 1)  # pods bound after the first one
    per_pod = {k: v / max(1, bound) for k, v in sorted(served["requests"].items(), key=lambda kv: -kv[1])}
    return {
        "mode": "https+realistic" if realistic else "plain",
        "requests_per_pod": per_pod,
        "startup_cpu_s": cpu_first - cpu_launch,
        "first_bind_s": t_first - t_launch,
        "sync_s": t_synced - t_launch,
        "steady_pods_per_s": steady / (t_end - t_first) if t_end > t_first else 0.0,
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
        "cpu_ms_per_pod": 1000 * (cpu_end - cpu_first) / steady,
        "thread_ms_per_pod": {  # by thread group, the costliest first
            name: 1000 * used / steady
            for name, used in sorted(
                ((k, v[0] - threads_first.get(k, (0.0, 0))[0]) for k, v in threads_end.items()),
                key=lambda kv: -kv[1],
            )
        },
        "thread_waits_per_pod": {  # voluntary context switches by thread group
            k: (v[1] - threads_first.get(k, (0.0, 0))[1]) / steady for k, v in threads_end.items()
        },
        "peak_rss_mib": peak_rss_mib(),
        "metrics_polls": polls,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--qps", type=float, default=500)
    p.add_argument("--burst", type=int, default=1000)
    p.add_argument("--plain", action="store_true", help="plain HTTP and small objects (the old mode)")
    p.add_argument("--profile", default="", metavar="FILE", help="cProfile every thread, write stats")
    a = p.parse_args()
    r = run(a.nodes, a.pods, a.qps, a.burst, realistic=not a.plain, profile=a.profile)
    out(
        f"end-to-end over {r['mode']} qps={a.qps:g} burst={a.burst}: {r['bound']:.0f}/{r['pods']:.0f} pods on "
        f"{r['nodes']:.0f} nodes in {r['seconds']:.2f}s = {r['pods_per_s']:.0f} pods/s "
        f"({r['steady_pods_per_s']:.0f} after the first bind), peak RSS {r['peak_rss_mib']:.0f} MiB"
    )
    out(f"scheduler CPU per bound pod, first -> last bind (start-up excluded): {r['cpu_ms_per_pod']:.2f} ms")
    waits = r["thread_waits_per_pod"]
    by_thread = ", ".join(
        f"{k} {v:.2f} ({waits.get(k, 0.0):.1f})" for k, v in r["thread_ms_per_pod"].items() if v >= 0.005
    )
    out(f"  by thread (ms per pod, and in brackets waits per pod: voluntary context switches): {by_thread}")
    out(
        f"start-up: CPU {r['startup_cpu_s']:.2f} s, caches synced after {r['sync_s']:.2f} s, "
        f"first bind {r['first_bind_s']:.2f} s after launch (client construction)"
    )
    calls = ", ".join(f"{k} {v:.3f}" for k, v in r["requests_per_pod"].items())
    out(f"API requests per bound pod (verb resource): {calls}")
    out(
        f"binding -> Scheduled event (server side): p50 {r['event_p50_ms']:.0f} ms, p99 {r['event_p99_ms']:.0f} ms, "
        f"max {r['event_max_ms']:.0f} ms over {r['events']:.0f} events; missing {r['events_missing']:.0f}, "
        f"dropped {r['events_dropped']:.0f}"
    )


if __name__ == "__main__":
    main()
