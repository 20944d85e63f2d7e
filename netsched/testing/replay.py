"""A simulate scenario replayed on the real thing: the fake API server over HTTP, a real
Prometheus scraping series that follow the pods, and the whole scheduler (SchedulerApp).

    run = Replay(scenario, config_text, label="deploy").run()
    run.phases[-1].figures.traffic.cross_node

What `netsched simulate` computes, a replay measures: the scenario's pods arrive at its
arrival rate (created through the API server, as a controller would), the scheduler places
them through its informers, queue and binder, and the timeline's rollouts are carried out by
the simulator's own Deployment and ReplicaSet controllers (netsched.simulate.controllers, the
one model of kube's rollout arithmetic here) acting on the API server instead of the
in-memory cluster.  A pod is Running and Ready `podStartSeconds` after it is bound (a
FakeKubelet), and from then on its load is in the exporter's series:

- node_exporter: each node's background (the scenario's `metrics:`, and `load:` timeline
  changes) plus the flows of the traffic pairs between running pods on different nodes, per
  direction, and CPU = background + `usage.cpuOfRequests` x the CPU its running pods request;
- Istio's pair counters while both workloads run, and cAdvisor's per-pod series;

scraped by a real Prometheus every `scrapeIntervalSeconds`, read by the scheduler through its
configured queries (rate windows, polls) as in a cluster.

Figures are exact, from the scenario's traffic model (netsched.simulate.model.LoadModel fed
with every bind and deletion the replay saw, at the moments it saw them), taken per phase as
simulate takes them (netsched.simulate.phases.measure): the initial placement when the first
timeline entry starts, a rollout when every new pod is available and no old one is left.  So
a replay's row and simulate's row of the same scenario differ only by what the real
Prometheus, the HTTP path and wall-clock timing do.

A pod's own load (CPU, memory, bandwidth annotations, `podLoad` timeline changes) is the
model's, at each scrape.  Not replayed: existing pods, gangs, volumes and Prometheus outages;
a scenario that uses them is refused naming the section.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from netsched.app import SchedulerApp
from netsched.config import SchedulerConfig, load_config
from netsched.fakeapi import FakeAPIServer, StatusError
from netsched.fakeapi.resources import PDBS, PODS, REPLICASETS
from netsched.fakemetrics.exporter import FakeNode
from netsched.fakemetrics.prometheus import PrometheusServer
from netsched.framework import names
from netsched.framework.disruption import REPLICASETS_KEY
from netsched.framework.parse import parse_node, parse_pod
from netsched.framework.quantity import CPU, MEMORY
from netsched.framework.types import PodInfo
from netsched.framework.workload import workload_key
from netsched.simulate.configs import configured_thresholds
from netsched.simulate.controllers import Controllers
from netsched.simulate.engine import retarget
from netsched.simulate.model import LoadModel
from netsched.simulate.moves import RebalanceWatcher, Rebalancing
from netsched.simulate.phases import Figures, measure
from netsched.simulate.scenario import Scenario
from netsched.simulate.timeline import LoadChange, PodLoadChange, Rollout, TrafficChange
from netsched.simulate.traffic import levels_of
from netsched.testing.traffic_exporter import PairTrafficExporter, RunningPod
from netsched.testing.workloads import FakeKubelet

log = logging.getLogger(__name__)

DEPLOYMENTS = "apps/deployments"
PROMETHEUS_PLACEHOLDER = "http://prometheus-k8s.monitoring.svc:9090"  # the examples' address
TICK = 0.1  # seconds between two passes of the replay's loop
REPORT_SLACK = 2.0  # seconds a round's report may be read after its evictions were seen
WARM_UP_TIMEOUT = 120.0  # for Prometheus' first rates and the scheduler's first poll


@dataclass(frozen=True, slots=True)
class ReplayPhase:
    label: str
    at: float  # seconds after the first arrival
    complete: bool
    figures: Figures


@dataclass
class ReplayRun:
    label: str
    phases: list[ReplayPhase] = field(default_factory=list)
    placements: dict[str, str] = field(default_factory=dict)  # pod key -> node (last bind)
    unbound: list[str] = field(default_factory=list)  # pods live and unbound at the end
    evicted_or_lost: list[str] = field(default_factory=list)  # deleted, not by a controller
    seconds: float = 0.0  # wall time of the replay, warm-up excluded
    rebalancing: Rebalancing | None = None  # the Rebalancer's moves, when the profile enables it
    events: list[dict[str, Any]] = field(default_factory=list)  # the API server's Events at the end


def unsupported(scenario: Scenario) -> list[str]:
    """What of `scenario` a replay cannot carry out, each with its field path (empty: all)."""
    out = []
    if scenario.existing_pods:
        out.append("existingPods: not replayed (create them as pods)")
    if scenario.pod_groups:
        out.append("podGroups: gangs are not replayed")
    if scenario.volumes:
        out.append("volumes: not replayed")
    if scenario.outages:
        out.append("prometheus.outages: not replayed")
    return out


class Replay:
    """One scenario through one configuration (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        config: str,
        *,
        label: str,
        seed: int | None = None,
        timeout: float = 300.0,
        until: float | None = None,
        workdir: str | Path | None = None,
    ) -> None:
        """`config`: a KubeSchedulerConfiguration whose Prometheus address is the examples'
        placeholder (replaced by the replay's Prometheus); `timeout`: seconds after the last
        timeline entry (or the last arrival) before the replay stops waiting; `until`: run to
        this second whatever happens (a rebalancing scenario: the moves come on their own)."""
        problems = unsupported(scenario)
        if problems:
            raise ValueError(f"scenario {scenario.name}: " + "; ".join(problems))
        self.scenario = scenario
        self.config = config
        self.label = label
        self.seed = scenario.seed if seed is None else seed
        self.timeout = timeout
        self.until = until
        self.workdir = workdir
        self.model = LoadModel(scenario)
        self._lock = threading.Lock()
        self._bound: dict[str, tuple[str, float, PodInfo]] = {}  # live bound pods -> (node, t, info)
        self._gone: set[str] = set()
        self._placed: dict[str, str] = {}  # every pod ever bound -> its node
        self._bound_at: dict[str, float] = {}
        self._pushed: set[int] = set()  # timeline load/traffic entries given to the exporter
        self._background_at = b""  # the background last given to the exporter (its arrays' bytes)
        self._t0 = 0.0
        self._tick = 0.0  # the time of the loop's current pass
        self._last_gone = -1e9  # when a pod last left (seconds of the replay)

    # ------------------------------------------------------------ the run

    def run(self) -> ReplayRun:
        from netsched.app import AppOptions, build_registry
        from netsched.kube import KubeAPI, build_api_client

        s = self.scenario
        registry = build_registry()
        nodes = [self._fake_node(raw) for raw in s.nodes]
        exporter = PairTrafficExporter(nodes)
        with (
            tempfile.TemporaryDirectory(prefix="netsched-replay-", dir=self.workdir) as tmp,
            FakeAPIServer(watch_timeout=30.0, disruption_controller=True) as server,
            exporter,
        ):
            self._background(exporter, 0.0)
            exporter.set_pairs(self._pairs(0.0))
            # CPU per pod from the model (usage.cpuOfRequests and podLoad changes applied).
            exporter.follow(self._running, cpu_of_requests=1.0, per_pod=True, changed_at=self._changed_at)
            scrape = f"{max(1, round(s.timing.scrape_interval))}s"
            prom = PrometheusServer([exporter.target], scrape_interval=scrape, workdir=tmp)
            prom.start()
            try:
                text = self.config.replace(PROMETHEUS_PLACEHOLDER, prom.url)
                cfg = load_config(text, registry)
                profiles = [p.scheduler_name for p in cfg.profiles]
                limit = configured_thresholds(cfg, profiles[0]).get("network", 0.8)
                for raw, fake in zip(s.nodes, nodes, strict=True):
                    obj = copy.deepcopy(raw)
                    obj.setdefault("status", {})["addresses"] = [{"type": "InternalIP", "address": fake.ip}]
                    server.create("nodes", obj)
                for d in s.deployments:
                    server.create(DEPLOYMENTS, d.deployment_object(), d.namespace)
                for ref in _state_config_maps(text):
                    server.create("configmaps", {"metadata": ref}, ref["namespace"])
                for budget in s.budgets:
                    body = copy.deepcopy(budget)
                    server.create(PDBS.key, body, body["metadata"].get("namespace") or "default")
                # Prometheus has a rate for every node before the scheduler starts, as in a
                # cluster where it has run for a while.
                probe = "count(rate(node_network_transmit_bytes_total[1m]))"
                prom.wait_for(
                    probe, lambda r: bool(r) and float(r[0]["value"][1]) >= len(nodes), WARM_UP_TIMEOUT
                )
                kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
                client = build_api_client(str(kubeconfig), qps=500, burst=1000, pool_size=cfg.parallelism + 8)
                app = SchedulerApp(
                    cfg, registry, KubeAPI(client), options=AppOptions(metrics_bind_address="127.0.0.1:0")
                )
                app.scheduler.seed(self.seed)
                try:
                    if not app.start_informers(sync_timeout=30):
                        raise RuntimeError(f"replay {self.label}: informers did not sync")
                    app.start_background()
                    app.hub.wait_polled(timeout=WARM_UP_TIMEOUT)
                    app.start_scheduling()
                    kubelet = FakeKubelet(server, ready=self._started)
                    with kubelet:
                        pods = retarget(s.pods, profiles, profiles[0])
                        return self._loop(server, exporter, kubelet, pods, (app, cfg, profiles), limit)
                finally:
                    app.shutdown(timeout=5)
            finally:
                prom.close()

    def _loop(
        self,
        server: FakeAPIServer,
        exporter: PairTrafficExporter,
        kubelet: FakeKubelet,
        pods: list[dict[str, Any]],
        scheduler: tuple[SchedulerApp, SchedulerConfig, list[str]],
        limit: float,
    ) -> ReplayRun:
        s = self.scenario
        app, cfg, profiles = scheduler
        out = ReplayRun(self.label)
        cluster = _HTTPCluster(server, self)
        controllers = Controllers(
            cluster,  # type: ignore[arg-type]  # the part of InMemoryCluster they use, over the API
            s.deployments,
            lambda raw: retarget([raw], profiles, profiles[0])[0],
            s.timing.pod_start_seconds,
        )
        cluster.controllers = controllers
        levels = levels_of(s.nodes, s.levels)
        watcher = RebalanceWatcher(app, cfg, profiles[0], self.model, controllers, levels, 0.0)
        entries = list(s.timeline)
        started: list[int] = []  # timeline entries begun
        rollouts: dict[int, str] = {}  # entry -> phase label, while open
        created = 0
        last = max([s.end, *(e.at for e in entries)])
        self._t0 = time.monotonic()
        phase_label = "initial placement"
        while True:
            t = self._tick = self.now()
            while created < len(pods) and s.timing.arrival(created) <= t:
                raw = pods[created]
                created += 1
                if controllers.arrived(raw, t):
                    cluster.add_pod(copy.deepcopy(raw))
            for i, entry in enumerate(entries):
                if i in started or entry.at > t:
                    continue
                if not started:
                    out.phases.append(ReplayPhase(phase_label, t, True, self._measure(t, limit, levels)))
                started.append(i)
                if isinstance(entry.action, Rollout):
                    controllers.rollout(i, entry.action, t)
                    rollouts[i] = f"{entry.at:g} s: {entry.action.describe()}"
                elif isinstance(entry.action, PodLoadChange) and entry.action.nodes:
                    with self._lock:
                        self.model.on_nodes(entry.action, t)  # the pods on those nodes then
                phase_label = f"{entry.at:g} s: {entry.action.describe()}"
            self._observe(server, controllers, kubelet, t)
            controllers.sync(t)
            self._push(t, exporter)
            if watcher.enabled:
                with self._lock:
                    watcher.observe(t)
            for i, label in list(rollouts.items()):
                done = controllers.completed.get(i)
                if done is not None:
                    del rollouts[i]
                    out.phases.append(ReplayPhase(label, done, True, self._measure(t, limit, levels)))
            settled = created == len(pods) and len(started) == len(entries) and not rollouts
            if self.until is not None:
                settled = settled and t >= self.until
            if settled and not self._pending(server):
                if not entries or not isinstance(entries[-1].action, Rollout):
                    out.phases.append(ReplayPhase(phase_label, t, True, self._measure(t, limit, levels)))
                break
            if t > max(last, self.until or 0.0) + self.timeout:
                for label in rollouts.values():
                    out.phases.append(ReplayPhase(label, t, False, self._measure(t, limit, levels)))
                if not rollouts:
                    out.phases.append(ReplayPhase(phase_label, t, False, self._measure(t, limit, levels)))
                log.warning("Replay did not settle replay=%s seconds=%.0f", self.label, t)
                break
            time.sleep(TICK)
        out.seconds = self.now()
        with self._lock:
            out.placements = {k: v[0] for k, v in self._bound.items()}
        out.unbound = sorted(_key(p) for p in server.list(PODS.key) if not p["spec"].get("nodeName"))
        out.evicted_or_lost = sorted(self._gone - cluster.deleted_by_controller)
        if watcher.enabled:
            with self._lock:
                # The round's report is read a pass or more after the controllers replaced
                # the pod its eviction deleted (the rebalancer runs on its own thread).
                out.rebalancing = watcher.finish(
                    controllers.created, self._placed, self._bound_at, REPORT_SLACK
                )
        out.events = server.list("events.k8s.io/events", None)
        return out

    # ------------------------------------------------------------ what the cluster does

    def now(self) -> float:
        return time.monotonic() - self._t0

    def _observe(
        self, server: FakeAPIServer, controllers: Controllers, kubelet: FakeKubelet, t: float
    ) -> None:
        """Binds and deletions since the last pass, into the controllers and the model."""
        seen = {}
        for raw in server.list(PODS.key):
            if raw["metadata"].get("deletionTimestamp"):
                continue
            seen[_key(raw)] = raw
        started = False
        with self._lock:
            for key, raw in seen.items():
                node = raw["spec"].get("nodeName")
                if node and key not in self._bound:
                    info = parse_pod(raw)
                    self._bound[key] = (node, t, info)
                    self._placed[key], self._bound_at[key] = node, t
                    self.model.place(info, node, t)
                    controllers.bound(key, node, t)
            for key in [k for k in self._bound if k not in seen]:
                # Not a controller's deletion (those are told at once): evicted or preempted,
                # its work (a podLoad change's) goes to its workload's next pod.
                self.model.hand_over(self._bound[key][2], t)
                self._gone_at(key, t, controllers)
            for _, (_, bound, _) in self._bound.items():
                started |= (
                    bound + self.scenario.timing.pod_start_seconds
                    <= t
                    < bound + self.scenario.timing.pod_start_seconds + 2 * TICK
                )
        if started:
            kubelet.resync()

    def _gone_at(self, key: str, t: float, controllers: Controllers) -> None:
        """Lock held."""
        self._bound.pop(key, None)
        self._gone.add(key)
        self._last_gone = max(self._last_gone, t)
        self.model.remove(key, t)
        controllers.deleted(key, t)

    def deleted(self, key: str, controllers: Controllers) -> None:
        """A controller deleted the pod during the loop's pass at `self._tick` (the time the
        controllers were given: the phase figures of that pass must not count it)."""
        with self._lock:
            if key in self._bound:
                self._gone_at(key, self._tick, controllers)

    def _started(self, pod: Mapping[str, Any]) -> bool:
        """The kubelet's readiness: `podStartSeconds` after the bind the replay saw."""
        with self._lock:
            got = self._bound.get(_key(pod))
        return got is not None and got[1] + self.scenario.timing.pod_start_seconds <= self.now()

    def _running(self) -> list[RunningPod]:
        """The exporter's pods: bound, started, not gone."""
        t = self.now()
        start = self.scenario.timing.pod_start_seconds
        label = self.scenario.traffic.workload_label
        with self._lock:
            history = self.model.history
            loads = history.load_at(t)  # per pod: [rx, tx, cpu cores, memory] (podLoad changes in)
            out = []
            for key, (node, bound, info) in self._bound.items():
                if bound + start > t:
                    continue
                rx, tx, cpu, memory = loads[history.index[key]].tolist()
                out.append(RunningPod(key, workload_key(info, label), node, cpu, memory, rx, tx))
            return out

    def _changed_at(self) -> float:
        """On the monotonic clock: when the running pods last changed (one started
        podStartSeconds after its bind, or one left), for the exporter's counters."""
        t = self.now()
        start = self.scenario.timing.pod_start_seconds
        with self._lock:
            started = [b + start for _, b, _ in self._bound.values() if b + start <= t]
            last = max([self._last_gone, *started], default=-1e9)
        return self._t0 + last

    def _pending(self, server: FakeAPIServer) -> bool:
        return any(not p["spec"].get("nodeName") for p in server.list(PODS.key))

    def _measure(self, t: float, limit: float, levels: Mapping[str, Sequence[str | None]]) -> Figures:
        with self._lock:
            return measure(self.model, t, limit, levels)

    # ------------------------------------------------------------ the exporter's load

    def _fake_node(self, raw: Mapping[str, Any]) -> FakeNode:
        info = parse_node(dict(raw))
        i = self.model.index[info.name]
        return FakeNode(
            info.name,
            f"10.{i // 250}.{i % 250}.{1 + i % 250}",
            cpus=max(1, round(float(info.allocatable.get(CPU, 1000)) / 1000)),
            link_speed=float(self.scenario.link_speed.get(info.name, 125_000_000.0)),
            memory_total=float(info.allocatable.get(MEMORY, 8 * 1024**3)),
        )

    def _background(self, exporter: PairTrafficExporter, t: float) -> None:
        """The nodes' background load at `t` into the exporter, when it changed since the last
        push (a `load:` curve's steps and spikes, a timeline entry's level)."""
        net, cpu, mem = self.model.background(t)
        stamp = net.tobytes() + cpu.tobytes() + mem.tobytes()
        if stamp == self._background_at:
            return
        self._background_at = stamp
        for name, n, c, m in zip(self.model.names, net.tolist(), cpu.tolist(), mem.tolist(), strict=True):
            exporter.set_load(name, rx=n, tx=n, cpu=c, memory=m)

    def _pairs(self, t: float) -> dict[tuple[str, str], tuple[float, float]]:
        return {(p.a, p.b): (p.request, p.response) for p in self.model.traffic(t).pairs}

    def _push(self, t: float, exporter: PairTrafficExporter) -> None:
        """The background as the model has it now (it follows a `load:` curve over time, each
        step and spike when it comes), and the timeline's traffic changes when one is due."""
        self._background(exporter, t)
        for i, entry in enumerate(self.scenario.timeline):
            if (
                isinstance(entry.action, LoadChange | TrafficChange)
                and entry.at <= t
                and i not in self._pushed
            ):
                self._pushed.add(i)
                exporter.set_pairs(self._pairs(t))


class _HTTPCluster:
    """What Controllers use of an InMemoryCluster, done through the fake API server."""

    def __init__(self, server: FakeAPIServer, replay: Replay) -> None:
        self.server = server
        self.replay = replay
        self.controllers: Controllers | None = None
        self.cache = self  # get_pod: the replay keeps no cache; Controllers parse the pod instead
        self.deleted_by_controller: set[str] = set()

    def get_pod(self, uid: str) -> None:
        return None

    def add_pod(self, raw: dict[str, Any]) -> None:
        meta = raw["metadata"]
        namespace = meta.get("namespace") or "default"
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "ReplicaSet":
                with contextlib.suppress(StatusError):  # not published yet: kept as the scenario named it
                    ref["uid"] = self.server.get(REPLICASETS.key, ref["name"], namespace)["metadata"]["uid"]
        self.server.create(PODS.key, raw, namespace)

    def delete_pod(self, info: PodInfo) -> None:
        self.deleted_by_controller.add(info.key)
        with contextlib.suppress(StatusError):  # gone already
            self.server.delete(PODS.key, info.name, info.namespace)
        if self.controllers is not None:
            self.replay.deleted(info.key, self.controllers)

    def add_object(self, key: str, obj: dict[str, Any], event: str = "ADDED") -> None:
        if key != REPLICASETS_KEY:
            raise ValueError(f"replay: objects of {key} are not replayed")
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        body = copy.deepcopy(obj)
        body.pop("status", None)
        for ref in body["metadata"].get("ownerReferences") or []:
            with contextlib.suppress(StatusError):  # no such Deployment: kept as named
                ref["uid"] = self.server.get(DEPLOYMENTS, ref["name"], namespace)["metadata"]["uid"]
        try:
            self.server.get(REPLICASETS.key, meta["name"], namespace)
        except StatusError:
            self.server.create(REPLICASETS.key, body, namespace)
        else:
            self.server.patch(
                REPLICASETS.key, meta["name"], {"spec": {"replicas": body["spec"]["replicas"]}}, namespace
            )


def _state_config_maps(config: str) -> list[dict[str, str]]:
    """The ConfigMaps the configuration's Rebalancers keep their state in (deploy/ ships one),
    as {namespace, name}; read from the YAML, the replay imports no plugin."""
    out = []
    for profile in (yaml.safe_load(config) or {}).get("profiles") or []:
        for entry in profile.get("pluginConfig") or []:
            if entry.get("name") == names.REBALANCER:
                state = (entry.get("args") or {}).get("state") or {}
                ref = {
                    "namespace": state.get("namespace", "netsched-system"),
                    "name": state.get("name", "netsched-rebalancer"),
                }
                if ref not in out:
                    out.append(ref)
    return out


def _key(raw: Mapping[str, Any]) -> str:
    meta = raw["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def replay_all(runs: Sequence[Replay]) -> list[ReplayRun]:
    """Run replays side by side (threads), each on its own API server, exporter and Prometheus."""
    results: list[ReplayRun | BaseException | None] = [None] * len(runs)

    def one(i: int) -> None:
        try:
            results[i] = runs[i].run()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the caller's thread
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,), name=f"replay-{r.label}") for i, r in enumerate(runs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out = []
    for r in results:
        if isinstance(r, BaseException):
            raise r
        assert r is not None
        out.append(r)
    return out
