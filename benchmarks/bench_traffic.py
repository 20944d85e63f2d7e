"""TrafficAffinity's cost per pod: the load-aware profile with and without it, interleaved.

    python -m benchmarks.bench_traffic [--nodes 5000] [--pods 10000] [--pairs 1000] [--workloads 500] [--rounds 2]

Both runs use bench_inprocess's cluster (pods labelled app=app-0..app-<workloads - 1>,
the workload label here) and static metrics; the TrafficAffinity run also polls
`--pairs` pair series between those workloads from the fake Prometheus (one
query per poll whatever the node count).  1000 pairs among 500 workloads is
about 4 peers per workload, a mesh's usual shape; among 50 workloads (bench_inprocess's
default) every workload talks to 40 others: the worst case.  Prints CPU ms per pod of each and
their ratio (target <= 1.25), and the queries per poll at 100 nodes and at
`--nodes` nodes (target: equal).  Figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.bench_inprocess import METRICS_PROFILE, run, static_metrics_hub
from benchmarks.common import out

TRAFFIC_PROFILE = (
    METRICS_PROFILE
    + """\
      - name: TrafficAffinity
        weight: 5
  pluginConfig:
  - name: TrafficAffinity
    args:
      workloadLabel: app
"""
)


def pair_series(n_pairs: int, workloads: int) -> dict[str, float]:
    """`n_pairs` directed pairs among the bench's workloads, 1-10 MB/s each."""
    out: dict[str, float] = {}
    k = 0
    while len(out) < n_pairs:
        a, b = k % workloads, (k // workloads + 1 + k) % workloads
        if a != b:
            out.setdefault(f"default|app-{a}|default|app-{b}", 1e6 * (1 + k % 10))
        k += 1
    return out


def traffic_hub(n_nodes: int, n_pairs: int, workloads: int) -> tuple[Any, Any]:
    from netsched.metrics import PrometheusArgs
    from netsched.metrics.plugin_api import PAIR_LABEL, TrafficArgs
    from netsched.metrics.queries import render

    hub, fake = static_metrics_hub(n_nodes)
    fake.set(
        render(TrafficArgs().promql(), PrometheusArgs()), pair_series(n_pairs, workloads), label=PAIR_LABEL
    )
    return hub, fake


def queries_per_poll(n_nodes: int, n_pairs: int) -> int:
    hub, fake = traffic_hub(n_nodes, n_pairs, 50)
    # Building the profile is what makes the plugins require their queries.
    run(n_nodes, 1, "plain", TRAFFIC_PROFILE, hub, fake)
    before = len(fake.calls)
    hub.poll_now()
    hub.stop()
    return len(fake.calls) - before


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--pairs", type=int, default=1000)
    p.add_argument("--workloads", type=int, default=500)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    base: list[float] = []
    ours: list[float] = []
    for _ in range(a.rounds):  # interleaved, so a busy moment hits both alike
        hub, fake = static_metrics_hub(a.nodes)
        base.append(run(a.nodes, a.pods, "plain", METRICS_PROFILE, hub, fake, a.workloads)["cpu_ms_per_pod"])
        hub.stop()
        hub, fake = traffic_hub(a.nodes, a.pairs, a.workloads)
        r = run(a.nodes, a.pods, "plain", TRAFFIC_PROFILE, hub, fake, a.workloads)
        assert r["queries_while_scheduling"] == 0
        ours.append(r["cpu_ms_per_pod"])
        hub.stop()
    b, o = min(base), min(ours)
    out(
        f"TrafficAffinity at {a.nodes} nodes, {a.pods} pods, {a.pairs} pair series among {a.workloads} workloads: load-aware {b:.3f} CPU ms/pod, "
        f"+TrafficAffinity {o:.3f} CPU ms/pod = {o / b:.2f}x (best of {a.rounds}, interleaved)"
    )
    small, large = queries_per_poll(100, a.pairs), queries_per_poll(a.nodes, a.pairs)
    out(f"Prometheus queries per poll: {small} at 100 nodes, {large} at {a.nodes} nodes")


if __name__ == "__main__":
    main()
