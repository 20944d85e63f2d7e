"""`netsched demo`: the whole scheduler against an in-process fake cluster.

No Kubernetes needed: it starts the fake API server on 127.0.0.1, creates
nodes and pending pods, runs the real scheduler over HTTP until every pod is
placed (or cannot be), and prints where each pod went and what it cost.
It is the README's "run" command on a machine without a cluster.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from netsched import logutil
from netsched.flags import HelpFormatter
from netsched.framework.extension_points import PluginFactory
from netsched.framework.parse import parse_pod
from netsched.framework.quantity import to_canonical

log = logging.getLogger(__name__)

DEMO_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: netsched
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netsched demo", description=__doc__.split("\n\n")[0], formatter_class=HelpFormatter
    )
    p.add_argument("--nodes", type=int, default=12, help="fake nodes to create")
    p.add_argument("--pods", type=int, default=60, help="pending pods to create for netsched")
    p.add_argument("--seed", type=int, default=1, help="seed for the pods' sizes and the nodes' load")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for placements")
    p.add_argument("--config", default="", help="KubeSchedulerConfiguration (default: one netsched profile)")
    p.add_argument(
        "-v", "--v", dest="verbosity", type=int, default=0, metavar="Level", help="scheduler log verbosity"
    )
    return p


def main(argv: Sequence[str], plugins: Sequence[PluginFactory] = ()) -> int:
    opts = parser().parse_args(list(argv))
    logutil.setup(opts.verbosity)
    if opts.verbosity < 2:
        logging.getLogger().setLevel(logging.WARNING)
    from netsched.app import AppOptions, SchedulerApp, build_registry
    from netsched.config import ConfigError, load_config
    from netsched.fakeapi import FakeAPIServer
    from netsched.kube import KubeAPI, build_api_client
    from netsched.objects import make_node, make_pod

    rng = random.Random(opts.seed)
    registry = build_registry(plugins)
    try:
        cfg = load_config(Path(opts.config) if opts.config else DEMO_CONFIG, registry)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    cfg.leader_election.leader_elect = False
    with FakeAPIServer() as server, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        server.write_kubeconfig(kubeconfig)
        sizes = [("4", "8Gi"), ("8", "16Gi"), ("16", "32Gi")]
        for i in range(opts.nodes):
            cpu, mem = sizes[i % len(sizes)]
            server.create(
                "nodes", make_node(f"node-{i:02d}").capacity(cpu=cpu, memory=mem).zone(f"zone-{i % 3}").obj()
            )
        for i in range(opts.pods):
            cpu = rng.choice(["250m", "500m", "1", "2"])
            mem = rng.choice(["256Mi", "512Mi", "1Gi", "2Gi"])
            server.create(
                "pods",
                make_pod(f"web-{i:03d}")
                .scheduler(cfg.profiles[0].scheduler_name)
                .label("app", "web")
                .req(cpu=cpu, memory=mem)
                .obj(),
            )
        client = build_api_client(kubeconfig, qps=1000, burst=2000, pool_size=cfg.parallelism + 8)
        app = SchedulerApp(
            cfg, registry, KubeAPI(client), options=AppOptions(metrics_bind_address="127.0.0.1:0")
        )
        started = time.perf_counter()
        app.start_informers(sync_timeout=30)
        app.start_background()
        app.start_scheduling()
        deadline = time.monotonic() + opts.timeout
        while time.monotonic() < deadline:
            pods = server.list("pods", None)
            bound = sum(1 for p in pods if p["spec"].get("nodeName"))
            stuck = sum(app.queue.counts().get(q, 0) for q in ("unschedulable", "gated"))
            if bound + stuck >= len(pods) and app.scheduler.binder.inflight == 0:
                break
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        app.shutdown(timeout=5)
        _report(server.list("nodes", None), server.list("pods", None), elapsed)
    return 0


def _report(nodes: list[dict], pods: list[dict], elapsed: float) -> None:  # type: ignore[type-arg]
    by_node: dict[str, list[dict]] = {n["metadata"]["name"]: [] for n in nodes}  # type: ignore[type-arg]
    pending: list[dict] = []  # type: ignore[type-arg]
    for p in pods:
        n = p["spec"].get("nodeName")
        (by_node.get(n, pending)).append(p)
    print(f"{'NODE':<10} {'PODS':>4} {'CPU REQ/ALLOC':>16} {'MEM REQ/ALLOC (Gi)':>20}")
    for node in nodes:
        name = node["metadata"]["name"]
        alloc = node["status"]["allocatable"]
        cpu = sum(_req(p, "cpu") for p in by_node[name])
        mem = sum(_req(p, "memory") for p in by_node[name])
        print(
            f"{name:<10} {len(by_node[name]):>4} {cpu / 1000:>7.2f}/{to_canonical('cpu', alloc['cpu']) / 1000:<8.0f}"
            f" {mem / 2**30:>9.2f}/{to_canonical('memory', alloc['memory']) / 2**30:<10.0f}"
        )
    placed = len(pods) - len(pending)
    print(
        f"\nplaced {placed}/{len(pods)} pods on {len(nodes)} nodes in {elapsed:.2f}s (over HTTP to the fake API server)"
    )
    for p in pending:
        print(f"pending: {p['metadata']['namespace']}/{p['metadata']['name']}")


def _req(pod: dict, res: str) -> int:  # type: ignore[type-arg]
    """The pod's effective request, as the scheduler counts it."""
    return parse_pod(pod).requests.get(res, 0)
