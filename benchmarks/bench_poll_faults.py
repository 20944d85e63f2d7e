"""A hung Prometheus: poll durations against the interval, under the real APScheduler loop.

    python -m benchmarks.bench_poll_faults [--polls 20] [--interval 3] [--timeout 1]

The server accepts connections and never answers: the real MetricsHub polls
it on its APScheduler job, `--polls` times; prints each poll's duration
against the interval and the runs APScheduler skipped or missed (counted from
its own warnings). The issue's case is interval 15 s / timeout 5 s; the
default here keeps the same 3:1 ratio and takes a minute.  A huge or
trickled answer to one query: benchmarks/bench_prom_client.py.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from typing import Any

from benchmarks.common import out


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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--polls", type=int, default=20)
    p.add_argument("--interval", type=float, default=3.0)
    p.add_argument("--timeout", type=float, default=1.0)
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


if __name__ == "__main__":
    main()
