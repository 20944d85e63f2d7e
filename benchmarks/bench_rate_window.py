"""What a real Prometheus' rate() holds of a pod that left, or one that started, beside the
ledger's model of it (issue 39's time model).

    python -m benchmarks.bench_rate_window [--window 60] [--scrape 15] [--step 3]

A tiny exporter serves two counters to a real Prometheus (Debian's package, scraping every
`--scrape` seconds): `gone_total` grows at 1000/s and stops at e (a pod that left), `new_total`
(far from zero, as a node's counters are) is flat and grows at 1000/s from e (a pod that started).  After the run, instant queries of
rate(x[W]) evaluated every `--step` seconds from e to e + W + 15 give the share of the pod the
reading holds; beside it, what netsched.metrics.ledger.held assumes (the average over
[ts - W, ts]) and what simulate assumes (the average over the W before the last scrape, its
time read with timestamp()).  Prometheus divides the increase between the first and last
samples inside the window by the time between them, so its reading is the average over
about W - scrape seconds ending at the last scrape: the ledger's figure is off by up to about
a scrape over that span, either way, depending on where the scrapes fall.  A positive
"ledger - real" on a departure is load the ledger takes out that the reading no longer holds
(the node reads low); a positive one on an arrival is load it fails to add back (low again).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from netsched.fakemetrics.prometheus import PrometheusServer
from netsched.metrics.ledger import held
from netsched.testing.prometheus import require_prometheus

RATE = 1000.0
BASE = 1e12  # a node counter's value before the pod came
NEVER = float("inf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--window", type=float, default=60.0, help="the rate window W, seconds")
    ap.add_argument("--scrape", type=int, default=15, help="Prometheus' scrape interval, seconds")
    ap.add_argument("--step", type=float, default=3.0, help="seconds between two evaluations")
    a = ap.parse_args()
    binary = require_prometheus()
    w = float(a.window)
    scrape = int(a.scrape)
    t0 = time.time()
    e = t0 + w + 2 * scrape  # both series have a full window of samples before e

    def gone(now: float) -> float:
        return RATE * (min(now, e) - t0)

    def new(now: float) -> float:  # a node's counter: far from zero (rate() would not extrapolate)
        return BASE + RATE * max(0.0, now - e)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
            now = time.time()
            body = f"gone_total {gone(now):.3f}\nnew_total {new(now):.3f}\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    prom = PrometheusServer([f"127.0.0.1:{server.server_port}"], binary=binary, scrape_interval=f"{scrape}s")
    prom.start()
    try:
        end = e + w + scrape + 2
        print(
            f"scraping every {scrape} s, window {w:g} s; the change at e, readings until e + {end - e:.0f} s"
        )
        while time.time() < end:
            time.sleep(min(5.0, end - time.time() + 0.01))

        def query(expr: str, at: float) -> float:
            url = f"{prom.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
            with urllib.request.urlopen(url, timeout=10) as r:
                got = json.load(r)["data"]["result"]
            return float(got[0]["value"][1]) if got else 0.0

        for name, series, start, stop in (
            ("a pod that left at e", "gone_total", -NEVER, e),
            ("a pod that started at e", "new_total", e, NEVER),
        ):
            print(f"\n{name} (share of its rate in rate({series}[{w:g}s]))")
            print("| T - e (s) | real Prometheus | ledger | simulate | ledger - real |")
            print("|---|---|---|---|---|")
            worst = (0.0, 0.0)
            d = 0.0
            while d <= w + scrape:
                at = e + d
                real = query(f"rate({series}[{w:g}s])", at) / RATE
                last = query(f"timestamp({series})", at)
                ledger = held(start, stop, at, w)
                sim = held(start, stop, last, w)
                diff = ledger - real
                worst = (min(worst[0], diff), max(worst[1], diff))
                print(f"| {d:.0f} | {real:.3f} | {ledger:.3f} | {sim:.3f} | {diff:+.3f} |")
                d += a.step
            print(f"ledger - real from {worst[0]:+.3f} to {worst[1]:+.3f} of the pod's rate")
    finally:
        prom.close()
        server.shutdown()


if __name__ == "__main__":
    main()
