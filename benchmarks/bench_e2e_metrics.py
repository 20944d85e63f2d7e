"""The load-aware profile end to end over HTTP with a real Prometheus, beside kube's default profile.

    python -m benchmarks.bench_e2e_metrics [--nodes 5000] [--pods 10000] [--rounds 1]
                                           [--scrape 5s] [--window 30s] [--poll 15]

The same harness as bench_e2e (the real SchedulerApp against the fake API
server in a child process, HTTPS and realistic objects), run once with kube's
default profile and once with deploy/'s load-aware one (NetworkTraffic,
LoadAware, LoadThreshold, TrafficAffinity with no traffic series) reading a real
Prometheus (the Debian binary, as the
integration fixture starts it) that scrapes netsched.testing's synthetic
exporter with series for every node (varied network, CPU and memory load).
Prometheus and the exporter run in a process of their own, and each scheduler
run in a fresh process, so the CPU figures are the scheduler's alone.  The
runs alternate (default, load-aware, default, ... for --rounds), as the
machine may be shared.

Printed per run: pods/s, scheduler CPU per bound pod (first to last bind),
time from launch to the first bind, and for the load-aware runs the
Prometheus instant queries per poll (the server's own request counter over
the polls the scheduler made: a constant, whatever the node count); then the
ratio of the load-aware CPU per pod to the default one's.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
from typing import Any

from benchmarks.bench_e2e import run as run_e2e
from benchmarks.bench_inprocess import GBIT_BYTES, METRICS_PROFILE
from benchmarks.common import isolated, out

# deploy/configmap.yaml's load-aware profile: bench_inprocess's plugins and weights and
# TrafficAffinity (weight 10, Istio preset, zone level), all on one `prometheus:` block. The
# synthetic exporter has no Istio series: TrafficAffinity runs with an empty traffic graph.
LOAD_AWARE = (
    METRICS_PROFILE
    + """\
      - name: TrafficAffinity
        weight: 10
  pluginConfig:
  - name: NetworkTraffic
    args:
      prometheus: &prom
        prometheusAddress: "{url}"
        pollIntervalSeconds: {interval}
        rateWindow: {window}
  - name: LoadAware
    args:
      prometheus: *prom
  - name: LoadThreshold
    args:
      prometheus: *prom
  - name: TrafficAffinity
    args:
      traffic:
        preset: istio
      levels: [topology.kubernetes.io/zone]
      prometheus: *prom
"""
)


def _load(i: int) -> tuple[float, float, float]:
    """(rx, tx bytes/s, CPU utilisation) of node i: varied, a tenth over LoadThreshold's 80 % network."""
    k = i * 7 % 10
    return GBIT_BYTES * k, GBIT_BYTES * (9 - k), 0.05 * k


def _serve_prometheus(n_nodes: int, scrape: str, window: str, conn: Any) -> None:
    """Exporter + Prometheus for nodes node-00000..: sends the URL once every node has series,
    then answers "count" with the instant queries served so far, until "stop"."""
    from netsched.testing.exporter import FakeNode, SyntheticExporter
    from netsched.testing.prometheus import PrometheusServer, require_prometheus

    nodes = [
        FakeNode(f"node-{i:05d}", f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", link_speed=10 * GBIT_BYTES)
        for i in range(n_nodes)
    ]
    with SyntheticExporter(nodes, instance_port=None) as exporter:
        for i, n in enumerate(nodes):
            rx, tx, cpu = _load(i)
            exporter.set_load(n.name, rx=rx, tx=tx, cpu=cpu, memory=0.3)
        prom = PrometheusServer([exporter.target], binary=require_prometheus(), scrape_interval=scrape)
        try:
            prom.start()
            # rate() reads what was set only once its window holds a window's worth of scrapes.
            expected = 1.0 - _load(1)[2]
            prom.wait_for(
                f"rate(node_cpu_seconds_total{{node='node-00001',mode='idle',cpu='0'}}[{window}])",
                lambda r: bool(r) and abs(float(r[0]["value"][1]) - expected) < 0.02 * expected,
                timeout=600,
            )
            prom.wait_for(
                f"count(rate(node_cpu_seconds_total{{mode='idle',cpu='0'}}[{window}]))",
                lambda r: bool(r) and int(float(r[0]["value"][1])) >= n_nodes,
                timeout=600,
            )
            conn.send(prom.url)
            while conn.recv() == "count":
                conn.send(prom.api_query_count())
        finally:
            prom.close()


def _run(n_nodes: int, n_pods: int, extra: str) -> dict[str, Any]:
    return run_e2e(n_nodes, n_pods, qps=5000, burst=10000, extra_config=extra)


def _report(name: str, r: dict[str, Any], queries_per_poll: str = "") -> None:
    out(
        f"{name:>10}: {r['bound']:.0f}/{r['pods']:.0f} pods on {r['nodes']:.0f} nodes, "
        f"{r['steady_pods_per_s']:.0f} pods/s after the first bind, {r['cpu_ms_per_pod']:.3f} CPU ms/pod, "
        f"first bind {r['first_bind_s']:.2f} s after launch (caches synced {r['sync_s']:.2f} s)"
        + queries_per_poll
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=1, help="default / load-aware pairs, interleaved")
    p.add_argument("--scrape", default="5s", help="Prometheus scrape interval")
    p.add_argument("--window", default="30s", help="rateWindow (at least 4 scrapes)")
    p.add_argument("--poll", type=int, default=15, help="pollIntervalSeconds")
    a = p.parse_args()
    ctx = mp.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=_serve_prometheus, args=(a.nodes, a.scrape, a.window, child), daemon=True)
    proc.start()
    try:
        if not conn.poll(900):
            raise RuntimeError("Prometheus did not see every node's series")
        url = conn.recv()
        extra = LOAD_AWARE.format(url=url, interval=a.poll, window=a.window)
        cpu: dict[str, list[float]] = {"default": [], "load-aware": []}
        for _ in range(a.rounds):
            d = isolated(_run, a.nodes, a.pods, "")
            _report("default", d)
            cpu["default"].append(d["cpu_ms_per_pod"])
            conn.send("count")
            before = conn.recv()
            m = isolated(_run, a.nodes, a.pods, extra)
            conn.send("count")
            queries = conn.recv() - before
            polls = m["metrics_polls"]
            per_poll = f", {queries / polls:.1f} Prometheus queries per poll ({polls} polls)" if polls else ""
            _report("load-aware", m, per_poll)
            cpu["load-aware"].append(m["cpu_ms_per_pod"])
        ratio = min(cpu["load-aware"]) / min(cpu["default"])
        out(f"load-aware / default CPU per pod (best of {a.rounds}): {ratio:.2f}x")
    finally:
        conn.send("stop")
        proc.join(30)
        if proc.is_alive():
            proc.terminate()


if __name__ == "__main__":
    main()
