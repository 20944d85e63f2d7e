"""Volume scheduling figures: what the volume plugins cost pods without claims, and pods/s for
pods with one WaitForFirstConsumer claim each.

    python -m benchmarks.bench_volumes [--nodes 1000] [--pods 3000] [--rounds 5] [--skip-e2e]

1. Overhead on pods without claims: kube's default profile, with and without
   VolumeRestrictions, NodeVolumeLimits, VolumeBinding and VolumeZone, run in
   alternating rounds in one process (so load from other processes hits both
   alike); best round of each, and the difference.
2. Pods with one WaitForFirstConsumer claim each (a CSI class, provisioning in
   the node's zone), in process: InMemoryCluster with the simulation's PV
   controller, which binds each claim inside PreBind's write.
3. The same end to end over HTTP: the fake API server (and FakePVController,
   playing the PV controller and the provisioner) in a child process; from the
   first pod popped to the last binding confirmed.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import config, fill, nodes, out, pods
from netsched.inmemory import InMemoryCluster
from netsched.testing.builders import make_node

NO_VOLUME_PLUGINS = """\
  plugins:
    multiPoint:
      disabled:
      - name: VolumeRestrictions
      - name: NodeVolumeLimits
      - name: VolumeBinding
      - name: VolumeZone
"""
STORAGE_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "fast", "resourceVersion": "1"},
    "provisioner": "csi.example.com",
    "volumeBindingMode": "WaitForFirstConsumer",
}


def claimed_pods(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pods, claims): each pod with its own 10Gi claim of class "fast"."""
    from netsched.simulate.volumes import give_claims

    raw = pods(n)
    claims = give_claims(
        raw,
        {
            "storageClassName": "fast",
            "resources": {"requests": {"storage": "10Gi"}},
            "accessModes": ["ReadWriteOnce"],
        },
    )
    return raw, claims


def inprocess(n_nodes: int, n_pods: int, extra: str = "", with_claims: bool = False) -> tuple[float, float]:
    """(pods/s, pods per CPU second) of one in-process run."""
    from netsched.simulate.volumes import PVCS, STORAGECLASSES, SimulatedPVController

    cfg, reg = config(extra)
    cluster = InMemoryCluster(cfg, reg)
    node_objs = nodes(n_nodes)
    cluster.add_nodes(node_objs)
    if with_claims:
        raw, claims = claimed_pods(n_pods)
        SimulatedPVController(
            cluster.objects, {n["metadata"]["name"]: n["metadata"]["labels"] for n in node_objs}
        )
        cluster.add_object(STORAGECLASSES, dict(STORAGE_CLASS))
        for c in claims:
            cluster.add_object(PVCS, c)
    else:
        raw = pods(n_pods)
    cluster.add_pods(raw)
    gc.collect()
    started, cpu0 = time.perf_counter(), time.process_time()
    cluster.schedule_pending()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    assert len(cluster.placements) == n_pods, f"{len(cluster.placements)}/{n_pods} bound"
    return n_pods / elapsed, n_pods / cpu


def added_cost_us(n_nodes: int, rounds: int, per_round: int = 2000) -> tuple[float, float]:
    """(µs, µs): PreFilter + Reserve + PreBind for a pod without claims, default profile and
    without the volume plugins; best round of each (rounds interleaved)."""
    from netsched.framework import Snapshot
    from netsched.testing.builders import node_infos

    pod_raw = pods(1)[0]
    snap = Snapshot.of(
        node_infos(
            [make_node(f"node-{i:05d}").capacity(cpu="32", memory="128Gi").info() for i in range(n_nodes)]
        )
    )
    best = {}
    for label, extra in (("on", ""), ("off", NO_VOLUME_PLUGINS)):
        cfg, reg = config(extra)
        cluster = InMemoryCluster(cfg, reg)
        best[label] = (next(iter(cluster.frameworks.values())), float("inf"))
    from netsched.framework.parse import parse_pod

    pod = parse_pod(pod_raw)
    for _ in range(rounds):
        for label, (fwk, b) in list(best.items()):
            t0 = time.perf_counter()
            for _ in range(per_round):
                state = fwk.new_cycle_state()
                fwk.run_pre_filter(state, pod, snap)
                fwk.run_reserve(state, pod, "node-00000")
                fwk.run_pre_bind(state, pod, "node-00000")
            best[label] = (fwk, min(b, (time.perf_counter() - t0) / per_round * 1e6))
    return best["on"][1], best["off"][1]


def _serve(n_nodes: int, n_pods: int, kubeconfig: str, ready: Any, stop: Any) -> None:
    from netsched.testing.fakeapi import FakeAPIServer
    from netsched.testing.volumes import PVCS, STORAGECLASSES, FakePVController

    with FakeAPIServer(watch_timeout=300) as srv, FakePVController(srv):
        srv.create(STORAGECLASSES, STORAGE_CLASS)
        raw, claims = claimed_pods(n_pods)
        for c in claims:
            srv.create(PVCS, c)
        fill(srv, n_nodes, raw)
        srv.write_kubeconfig(kubeconfig)
        ready.set()
        stop.wait()


def end_to_end(n_nodes: int, n_pods: int) -> float:
    from netsched.app import AppOptions, SchedulerApp
    from netsched.kube import KubeAPI, build_api_client

    ctx = mp.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        proc = ctx.Process(target=_serve, args=(n_nodes, n_pods, kubeconfig, ready, stop), daemon=True)
        proc.start()
        try:
            if not ready.wait(180):
                raise RuntimeError("fake API server did not start")
            cfg, reg = config()
            client = build_api_client(kubeconfig, qps=1000, burst=2000, pool_size=cfg.parallelism + 8)
            app = SchedulerApp(
                cfg, reg, KubeAPI(client), options=AppOptions(metrics_bind_address="127.0.0.1:0")
            )
            app.start_informers(sync_timeout=180)
            app.start_background()
            t0 = time.perf_counter()
            app.start_scheduling()
            deadline = time.monotonic() + 600
            while app.scheduler.scheduled < n_pods and time.monotonic() < deadline:
                time.sleep(0.01)
            elapsed = time.perf_counter() - t0
            bound = app.scheduler.scheduled
            app.shutdown(timeout=10)
        finally:
            stop.set()
        proc.join(10)
    return bound / elapsed if elapsed else 0.0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--skip-e2e", action="store_true")
    a = p.parse_args()
    with_plugins, without = [], []
    for _ in range(a.rounds):
        without.append(inprocess(a.nodes, a.pods, NO_VOLUME_PLUGINS))
        with_plugins.append(inprocess(a.nodes, a.pods))
    for i, what in ((0, "pods/s"), (1, "pods per CPU second")):
        on, off = max(r[i] for r in with_plugins), max(r[i] for r in without)
        out(
            f"pods without claims, {a.pods} on {a.nodes} nodes, best of {a.rounds}, {what}: default profile "
            f"{on:.0f}, without the 4 volume plugins {off:.0f} ({100 * (on - off) / off:+.1f} %)"
        )
    on_us, off_us = added_cost_us(a.nodes, a.rounds)
    out(
        f"pods without claims, PreFilter + Reserve + PreBind per pod: {on_us:.1f} µs with the volume plugins, "
        f"{off_us:.1f} µs without (+{on_us - off_us:.1f} µs per pod)"
    )
    rate = max(inprocess(a.nodes, a.pods, with_claims=True)[0] for _ in range(2))
    out(
        f"one WaitForFirstConsumer claim per pod, in process: {a.pods} pods on {a.nodes} nodes, {rate:.0f} pods/s"
    )
    if not a.skip_e2e:
        rate = end_to_end(a.nodes, a.pods)
        out(
            f"one WaitForFirstConsumer claim per pod, end to end over HTTP: {a.pods} pods on {a.nodes} nodes, {rate:.0f} pods/s"
        )


if __name__ == "__main__":
    main()
