"""The Prometheus client's three guarantees, measured: size cap, deadline, CPU per query.

    python -m benchmarks.bench_prom_client [--mib 50] [--trickle-timeout 1] [--queries 2000] [--rounds 3]
                                           [--cases huge,trickle,cpu]

Each case runs in a fresh process (spawned), against `FaultyPrometheus` on
127.0.0.1, through `PrometheusHTTPClient.query` (what the poller calls):

1. A `--mib` MB answer, with and without Content-Length, at the default
   maxResponseBytes (16 MiB): the outcome, and the growth of current and peak
   resident memory while it is refused.
2. A valid answer trickled a byte every 50 ms (~4 s in all) against a
   `--trickle-timeout` s deadline: seconds until the client gives up.
3. `--queries` small instant queries (one series) on one client, after a
   warm-up: CPU of the querying thread per query (the server's threads are
   not counted) and wall time per query; median of `--rounds` rounds.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import isolated, out, peak_rss_mib, table

PROMQL = "sum by (node) (rate(node_network_receive_bytes_total[1m]))"


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def _client(url: str, **kw: Any) -> Any:
    from netsched.metrics import PrometheusArgs
    from netsched.metrics.client import PrometheusHTTPClient

    return PrometheusHTTPClient(PrometheusArgs(prometheus_address=url, **kw).connection)


def _outcome(call: Callable[[], Any]) -> str:
    from netsched.metrics import QueryError

    try:
        call()
        return "accepted"
    except QueryError as e:
        return str(e)


def huge_case(mode: str, mib: int) -> dict[str, Any]:
    from netsched.testing.prometheus import FaultyPrometheus

    with FaultyPrometheus("ok", huge_bytes=mib * 2**20) as prom:
        client = _client(prom.url)
        client.query("up", 5.0)  # a normal answer first: imports and buffers are not the growth
        prom.mode = mode
        rss0, peak0 = _rss_mib(), peak_rss_mib()
        t0 = time.perf_counter()
        err = _outcome(lambda: client.query(PROMQL, 30.0))
        seconds = time.perf_counter() - t0
        rss1, peak1 = _rss_mib(), peak_rss_mib()
        client.close()
    return {"error": err, "rss_growth": rss1 - rss0, "peak_growth": peak1 - peak0, "seconds": seconds}


def trickle_case(timeout: float, rounds: int) -> dict[str, Any]:
    from netsched.testing.prometheus import FaultyPrometheus

    with FaultyPrometheus("trickle", trickle_interval=0.05, trickle_bytes=1) as prom:
        client = _client(prom.url)
        seconds = []
        err = ""
        for _ in range(rounds):
            t0 = time.perf_counter()
            err = _outcome(lambda: client.query("up", timeout))
            seconds.append(time.perf_counter() - t0)
        client.close()
    return {"seconds": seconds, "error": err}


def cpu_case(queries: int, rounds: int) -> dict[str, Any]:
    from netsched.testing.prometheus import FaultyPrometheus

    with FaultyPrometheus("ok") as prom:
        client = _client(prom.url)
        for _ in range(100):
            client.query("up", 5.0)
        cpu_us, wall_us = [], []
        for _ in range(rounds):
            c0, w0 = time.thread_time(), time.perf_counter()
            for _ in range(queries):
                client.query("up", 5.0)
            cpu_us.append((time.thread_time() - c0) / queries * 1e6)
            wall_us.append((time.perf_counter() - w0) / queries * 1e6)
        client.close()
    return {"cpu_us": cpu_us, "wall_us": wall_us}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=50)
    p.add_argument("--trickle-timeout", type=float, default=1.0)
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cases", default="huge,trickle,cpu", help="which of huge, trickle, cpu to run")
    a = p.parse_args()
    cases = set(a.cases.split(","))

    if "huge" in cases:
        huge(a.mib)
    if "trickle" in cases:
        t = isolated(trickle_case, a.trickle_timeout, a.rounds)
        out(
            f"answer trickled 1 byte / 50 ms (~4 s whole), deadline {a.trickle_timeout:g}s: given up after "
            + ", ".join(f"{s:.3f}" for s in t["seconds"])
            + f" s; {t['error'][:100]}"
        )
    if "cpu" in cases:
        c = isolated(cpu_case, a.queries, a.rounds)
        out(
            f"small query (one series), {a.queries} x {a.rounds} rounds on one client: "
            f"CPU {statistics.median(c['cpu_us']):.0f} us/query (rounds "
            + ", ".join(f"{x:.0f}" for x in c["cpu_us"])
            + f"); wall {statistics.median(c['wall_us']):.0f} us/query"
        )


def huge(mib: int) -> None:
    rows = []
    for mode in ("huge", "huge_chunked"):
        h = isolated(huge_case, mode, mib)
        rows.append(
            [
                f"{mib} MB, {'Content-Length' if mode == 'huge' else 'chunked, no length'}",
                f"{h['rss_growth']:.1f}",
                f"{h['peak_growth']:.1f}",
                f"{h['seconds']:.2f}",
                h["error"][:110],
            ]
        )
    out(table(rows, ["answer", "RSS growth MiB", "peak RSS growth MiB", "seconds", "outcome"]))


if __name__ == "__main__":
    main()
