"""Gang scheduling in process: Coscheduling over PodGroups, gangs placed whole in one rack, and
what a failed gang leaves behind.

    python -m benchmarks.bench_gang [--nodes 500] [--gangs 100] [--size 8] [--failing 10] [--timing-out 10]
                                    [--profile coscheduling|topology] [--zones 5] [--racks 25]

`--gangs` PodGroups of `--size` members (minMember = size) arrive one after
the other, member by member, on `--nodes` nodes (netsched.inmemory: the real
queue, cache, frameworks and plugins; binding applied at once, pods held at
Permit parked until their gang is decided).  The nodes sit in a 3-level
topology: `--zones` zones of `--racks` racks in all (contiguous blocks), each
node its own host.  Of the gangs, `--failing` have one member that fits no
node (PostFilter releases the gang) and `--timing-out` miss a member (it is
gated), so they wait at Permit until `scheduleTimeoutSeconds` pass on the
simulated clock.  `topology` adds GangTopology (weight 2; levels zone and
rack, so every gang is placed whole in one rack, the one with the most link
headroom: preferred, falling back to a zone) fed static link load through
the real metrics hub.

Prints pods/s (members bound over the wall time of the scheduling calls),
the scheduling attempts (every member's tries, retries included), the time
from a gang's last member arriving to all its members bound (p50/p99/max
over the gangs that started), how many gangs that started ended whole in one
rack, and checks that after every failed or timed-out gang nothing is held:
no assumed pod in the cache, no pod waiting at Permit, no member bound.
Exits 1 when that check fails (the figures are printed either way).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.bench_inprocess import static_metrics_hub
from benchmarks.common import config, nodes, out, peak_rss_mib
from netsched.clock import ManualClock
from netsched.inmemory import InMemoryCluster
from netsched.objects import make_pod

PODGROUPS = "scheduling.x-k8s.io/podgroups"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
TIMEOUT_S = 5
COSCHEDULING = """\
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
{more}
    queueSort:
      enabled: [{{name: Coscheduling}}]
      disabled: [{{name: "*"}}]
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 30
      podGroupBackoffSeconds: 10
"""
TOPOLOGY = "      - name: GangTopology\n        weight: 2"
ZONE, RACK = "topology.kubernetes.io/zone", "example.com/rack"
GANG_TOPOLOGY_ARGS = f"""\
  - name: GangTopology
    args:
      levels: [{ZONE}, {RACK}]
"""


@dataclass
class Result:
    nodes: int
    gangs: int
    size: int
    profile: str
    started: int = 0
    one_rack: int = 0  # gangs that started with every member in one rack
    failed: int = 0
    timed_out: int = 0
    bound: int = 0
    attempts: int = 0  # scheduling cycles run (each pod tried, retries included)
    seconds: float = 0.0  # wall time inside the scheduler's calls
    to_full_ms: list[float] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def pods_per_s(self) -> float:
        return self.bound / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.to_full_ms:
            return 0.0
        if len(self.to_full_ms) == 1:
            return self.to_full_ms[0]
        return statistics.quantiles(self.to_full_ms, n=100, method="inclusive")[int(q) - 1]


def podgroup(i: int, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "namespace": "default",
            "name": f"gang-{i:04d}",
            "uid": f"pg-{i}",
            "resourceVersion": "1",
            "creationTimestamp": f"2024-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
        },
        "spec": {"minMember": size, "scheduleTimeoutSeconds": TIMEOUT_S},
    }


def member(group: str, j: int, cpu: str = "2", gated: bool = False) -> dict[str, Any]:
    b = (
        make_pod(f"{group}-{j:02d}")
        .scheduler("netsched")
        .label(GROUP_LABEL, group)
        .req(cpu=cpu, memory="1Gi")
    )
    b.annotation("kubernetes.io/ingress-bandwidth", "200M").annotation(
        "kubernetes.io/egress-bandwidth", "200M"
    )
    return (b.gate("never") if gated else b).obj()


def kinds(gangs: int, failing: int, timing_out: int) -> list[str]:
    """Each gang's fate, the failing and timing-out ones spread evenly among the rest."""
    out = ["ok"] * gangs
    bad = ["fail"] * failing + ["timeout"] * timing_out
    if bad:
        step = gangs / len(bad)
        for k, kind in enumerate(bad):
            out[min(gangs - 1, int(k * step + step / 2))] = kind
    return out


def racked(n_nodes: int, zones: int, racks: int) -> list[dict[str, Any]]:
    """common.nodes with a zone and a rack label each, in contiguous blocks (a rack in one zone)."""
    out = nodes(n_nodes)
    for i, node in enumerate(out):
        labels = node["metadata"]["labels"]
        labels[ZONE] = f"zone-{i * zones // n_nodes}"
        labels[RACK] = f"rack-{i * racks // n_nodes:03d}"
    return out


def run(
    n_nodes: int = 500,
    gangs: int = 100,
    size: int = 8,
    failing: int = 10,
    timing_out: int = 10,
    profile: str = "coscheduling",
    zones: int = 5,
    racks: int = 25,
) -> Result:
    hub = None
    topology = profile == "topology"
    if topology:
        hub, _fake = static_metrics_hub(n_nodes)
    cfg, reg = config(
        COSCHEDULING.format(more=TOPOLOGY if topology else "") + (GANG_TOPOLOGY_ARGS if topology else "")
    )
    clock = ManualClock()
    cluster = InMemoryCluster(cfg, reg, metrics_hub=hub, clock=clock)
    node_objects = racked(n_nodes, zones, racks)
    cluster.add_nodes(node_objects)
    rack_of = {n["metadata"]["name"]: n["metadata"]["labels"][RACK] for n in node_objects}
    if hub is not None:
        hub.poll_now()
    fwk = cluster.frameworks["netsched"]
    bound_at: dict[str, float] = {}
    cluster.on_bound.append(lambda pod, _node: bound_at.__setitem__(pod.key, time.perf_counter()))
    res = Result(n_nodes, gangs, size, profile)

    def schedule() -> None:
        t0 = time.perf_counter()
        res.attempts += cluster.schedule_pending()
        res.seconds += time.perf_counter() - t0

    def held(group: str, keys: list[str]) -> None:
        assumed = cluster.cache.assumed_count()
        waiting = sum(1 for _ in fwk.iterate_waiting_pods())
        placed = [k for k in keys if k in cluster.placements]
        if assumed or waiting or placed:
            res.violations.append(
                f"{group}: {assumed} assumed, {waiting} waiting, {len(placed)} bound after release"
            )

    gc.collect()
    for i, kind in enumerate(kinds(gangs, failing, timing_out)):
        pg = podgroup(i, size)
        group = pg["metadata"]["name"]
        cluster.add_object(PODGROUPS, pg)
        pods = [member(group, j) for j in range(size)]
        if kind == "fail":
            pods[-1] = member(group, size - 1, cpu="64")  # fits no node (32 cpu each)
        elif kind == "timeout":
            pods[-1] = member(group, size - 1, gated=True)
        keys = [f"default/{p['metadata']['name']}" for p in pods]
        for p in pods[:-1]:
            cluster.add_pod(p)
            schedule()
        arrived = time.perf_counter()
        cluster.add_pod(pods[-1])
        schedule()
        if kind == "timeout":
            clock.step(TIMEOUT_S + 0.5)  # the wait at Permit ends on the clock ...
            t0 = time.perf_counter()
            cluster.scheduler.binder.drain()  # ... and the binding cycles of the waiting members end
            res.seconds += time.perf_counter() - t0
        if kind == "ok":
            done = [bound_at[k] for k in keys if k in bound_at]
            if len(done) == size:
                res.started += 1
                res.to_full_ms.append(1000 * (max(done) - arrived))
                res.one_rack += len({rack_of[cluster.placements[k]] for k in keys}) == 1
            else:
                res.violations.append(f"{group}: only {len(done)} of {size} bound")
        else:
            res.failed += kind == "fail"
            res.timed_out += kind == "timeout"
            held(group, keys)
            # The job gives up (its controller deletes the pods), so later gangs run on a clean queue.
            for k in keys:
                pending = cluster.handlers.pending_pod_by_key(k)
                if pending is not None:
                    cluster.delete_pod(pending)
    res.bound = len(cluster.placements)
    if hub is not None:
        hub.stop()
    return res


def render(r: Result) -> str:
    lines = [
        f"gangs in-process, profile {r.profile}: {r.gangs} gangs of {r.size} on {r.nodes} nodes: "
        f"{r.started} started whole, {r.failed} failed (a member fits nowhere), {r.timed_out} timed out",
        f"  gangs whole in one rack: {r.one_rack} of {r.started} started",
        f"  {r.bound} pods bound in {r.seconds:.2f} s of scheduling = {r.pods_per_s:.0f} pods/s; "
        f"peak RSS {peak_rss_mib():.0f} MiB",
        f"  scheduling attempts: {r.attempts} ({r.attempts / r.bound if r.bound else 0.0:.2f} per bound pod)",
        f"  last member arriving -> all members bound: p50 {r.percentile(50):.2f} ms, "
        f"p99 {r.percentile(99):.2f} ms, max {max(r.to_full_ms, default=0.0):.2f} ms",
        "  reservations held after failed / timed-out gangs: "
        + ("none (checked after each)" if not r.violations else f"{len(r.violations)} VIOLATION(S)"),
    ]
    lines += [f"    {v}" for v in r.violations]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--gangs", type=int, default=100)
    p.add_argument("--size", type=int, default=8)
    p.add_argument("--failing", type=int, default=10)
    p.add_argument("--timing-out", type=int, default=10)
    p.add_argument("--profile", choices=("coscheduling", "topology"), default="coscheduling")
    p.add_argument("--zones", type=int, default=5)
    p.add_argument("--racks", type=int, default=25, help="in all; a multiple of --zones")
    a = p.parse_args()
    if a.failing + a.timing_out > a.gangs:
        p.error("--failing + --timing-out must not exceed --gangs")
    if a.racks % a.zones or not 0 < a.racks <= a.nodes:
        p.error("--racks must be a multiple of --zones and at most --nodes")
    r = run(a.nodes, a.gangs, a.size, a.failing, a.timing_out, a.profile, a.zones, a.racks)
    out(render(r))
    sys.exit(1 if r.violations else 0)


if __name__ == "__main__":
    main()
