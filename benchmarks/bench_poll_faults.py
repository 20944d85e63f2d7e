"""A misbehaving Prometheus: poll durations against a hung server, memory for a 50 MB answer.

    python -m benchmarks.bench_poll_faults [--polls 20] [--interval 3] [--timeout 1] [--mib 50]

1. Hung Prometheus (accepts connections, never answers): the real MetricsHub
   polls it on its APScheduler job, `--polls` times; prints each poll's
   duration against the interval and the runs APScheduler skipped or missed
   (counted from its own warnings). The issue's case is interval 15 s /
   timeout 5 s; the default here keeps the same 3:1 ratio and takes a minute.
2. A `--mib` MB answer, with and without Content-Length, at the default
   maxResponseBytes: each in a fresh process, so resident memory is the
   query's alone; prints the error and the growth of current and peak RSS.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import resource
import threading
import time
from typing import Any

from benchmarks.common import out, table


class _SkipCounter(logging.Handler):
    """Counts APScheduler's "skipped: maximum number of running instances" and "missed" warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.skipped = 0

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "maximum number of running instances" in msg or "was missed by" in msg:
            self.skipped += 1


def hung(polls: int, interval: float, timeout: float) -> dict[str, Any]:
    from prometheus_client import CollectorRegistry

    from netsched.metrics import CPU, MEMORY, NETWORK_RX, MetricsHub, PrometheusArgs
    from netsched.testing.prometheus import FaultyPrometheus

    counter = _SkipCounter()
    logging.getLogger("apscheduler").addHandler(counter)
    durations: list[float] = []
    done = threading.Event()
    with FaultyPrometheus("hang") as prom:
        hub = MetricsHub(registry=CollectorRegistry())
        src = hub.source(
            PrometheusArgs(
                prometheus_address=prom.url, poll_interval_seconds=interval, timeout_seconds=timeout
            )
        )
        src.require(CPU, MEMORY, NETWORK_RX)
        poller = src.poller
        poll_once = poller.poll_once

        def timed() -> Any:
            outcome = poll_once()
            durations.append(outcome.seconds)
            if len(durations) >= polls:
                done.set()
            return outcome

        poller.poll_once = timed  # type: ignore[method-assign]
        t0 = time.monotonic()
        hub.start(first_poll_timeout=None)
        done.wait(polls * interval * 3 + 30)
        elapsed = time.monotonic() - t0
        hub.stop()
        fallback = src.in_fallback
    logging.getLogger("apscheduler").removeHandler(counter)
    return {
        "durations": durations[:polls],
        "skipped": counter.skipped,
        "elapsed": elapsed,
        "fallback": fallback,
    }


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def _huge_child(mode: str, mib: int, result: Any) -> None:
    from netsched.metrics import PrometheusArgs, QueryError
    from netsched.metrics.client import PrometheusHTTPClient
    from netsched.testing.prometheus import FaultyPrometheus

    with FaultyPrometheus("ok", huge_bytes=mib * 2**20) as prom:
        client = PrometheusHTTPClient(PrometheusArgs(prometheus_address=prom.url).connection)
        client.query("up", 5.0)  # a normal answer first: imports and buffers are not the growth
        prom.mode = mode
        rss0 = _rss_mib()
        peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.perf_counter()
        try:
            client.query("sum by (node) (rate(node_network_receive_bytes_total[1m]))", 30.0)
            err = "accepted"
        except QueryError as e:
            err = str(e)
        seconds = time.perf_counter() - t0
        rss1 = _rss_mib()
        peak1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result.put({"error": err, "rss_growth": rss1 - rss0, "peak_growth": peak1 - peak0, "seconds": seconds})


def huge(mode: str, mib: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_huge_child, args=(mode, mib, q))
    proc.start()
    result: dict[str, Any] = q.get(timeout=120)
    proc.join(10)
    return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--polls", type=int, default=20)
    p.add_argument("--interval", type=float, default=3.0)
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("--mib", type=int, default=50)
    a = p.parse_args()

    r = hung(a.polls, a.interval, a.timeout)
    d = r["durations"]
    budget = 0.8 * a.interval
    out(
        f"hung Prometheus, interval {a.interval:g}s, timeoutSeconds {a.timeout:g}s, 3 metrics: "
        f"{len(d)} polls in {r['elapsed']:.1f}s"
    )
    out(
        f"  poll seconds: min {min(d):.2f}, median {sorted(d)[len(d) // 2]:.2f}, max {max(d):.2f} "
        f"(budget {budget:.2f}, interval {a.interval:g}); polls above the interval: "
        f"{sum(x > a.interval for x in d)}; skipped/missed runs: {r['skipped']}; in fallback: {r['fallback']}"
    )
    out("  " + " ".join(f"{x:.2f}" for x in d))

    rows = []
    for mode in ("huge", "huge_chunked"):
        h = huge(mode, a.mib)
        rows.append(
            [
                f"{a.mib} MB, {'Content-Length' if mode == 'huge' else 'chunked, no length'}",
                f"{h['rss_growth']:.1f}",
                f"{h['peak_growth']:.1f}",
                f"{h['seconds']:.2f}",
                h["error"][:150],
            ]
        )
    out(table(rows, ["answer", "RSS growth MiB", "peak RSS growth MiB", "seconds", "outcome"]))


if __name__ == "__main__":
    main()
