"""A scenario file for `netsched simulate`: nodes, pods, background load, timing.

    name: skewed-bandwidth
    config: config.yaml                 # KubeSchedulerConfiguration, relative to this file (optional)
    seed: 1                             # ranges and random picks are drawn from it
    nodes: "50 nodes, 32 cpu, 128Gi, 10 Gbit"
    existingPods: "1 pod per node of 1 cpu, 2Gi, 100 Mbit"
    pods: "300 pods of 500m cpu, 1Gi, 20-50 Mbit"
    metrics: "10 hot nodes at 60-80% network"
    timing: {arrivalRatePerSecond: 20, pollIntervalSeconds: 15, scrapeIntervalSeconds: 15}
    usage: {cpuOfRequests: 0.8}         # true CPU = 0.8 x requests (default 1)
    prometheus: {down: false, outages: [[30, 90]]}
    podGroups: [{count: 2, namePrefix: train, minMember: 4, pod: {cpu: "2"}}]   # gangs (gangs.py)
    volumes: {claimPerPod: {storageClass: fast, size: 10Gi}, storageClasses: [...]}
    traffic: {pairs: [{source: web, destination: db, rate: 40Mbit}]}          # traffic.py
    timeline: [{at: 90, rollout: {workloads: all, strategy: Recreate}}]       # timeline.py
    podDisruptionBudgets: [{deployments: all, maxUnavailable: 1}]             # budgets.py

Every section also takes the long forms (Kubernetes objects, generator
mappings); netsched/simulate/README.md describes them all.  Decoding collects
every problem with its field path (`pods[1].bandwidth: Invalid value: "fast":
must be a bit rate such as 10Gbit or 50Mbit`) and raises them together as a
ConfigError, like the scheduler's own configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.config import ConfigError, parse_yaml
from netsched.framework.fields import ErrorList, Fields, join
from netsched.framework.parse import PodParseError, parse_pod
from netsched.framework.workload import workload_key
from netsched.simulate.background import Background, decode_background
from netsched.simulate.budgets import decode_budgets
from netsched.simulate.gangs import decode_pod_groups
from netsched.simulate.generators import decode_nodes, decode_pods, node_names
from netsched.simulate.timeline import Entry, Known, decode_timeline
from netsched.simulate.traffic import Traffic, decode_traffic
from netsched.simulate.units import shown
from netsched.simulate.volumes import Volumes, decode_volumes, give_claims
from netsched.simulate.workloads import Deployment, collect_deployments

DEFAULT_ARRIVAL_RATE = 20.0
# A pod's traffic shows in the metrics once it runs (and it is Ready then).
DEFAULT_POD_START_SECONDS = 5.0
# rate() windows: the configuration's prometheus.rateWindow, else this (Prometheus' usual 1m).
DEFAULT_RATE_WINDOW_SECONDS = 60.0
DEFAULT_SCRAPE_INTERVAL_SECONDS = 15.0  # kube-prometheus' node-exporter and cAdvisor jobs


@dataclass(frozen=True, slots=True)
class Timing:
    arrival_rate: float = DEFAULT_ARRIVAL_RATE  # pods per simulated second, in list order
    poll_interval: float | None = None  # None: each metrics source's pollIntervalSeconds
    pod_start_seconds: float = DEFAULT_POD_START_SECONDS
    # None: each query's own window (its plugin's prometheus.rateWindow); set: every rate().
    rate_window_seconds: float | None = None
    scrape_interval: float = DEFAULT_SCRAPE_INTERVAL_SECONDS  # samples at multiples of it

    def arrival(self, i: int) -> float:
        """Simulated second at which the i-th pod (from 0) is created."""
        return i / self.arrival_rate

    def window(self, configured: float | None = None) -> float:
        """The rate() window in seconds: `rateWindowSeconds`, else `configured`, else 60."""
        if self.rate_window_seconds is not None:
            return self.rate_window_seconds
        return DEFAULT_RATE_WINDOW_SECONDS if configured is None else configured


@dataclass(frozen=True, slots=True)
class TrueUsage:
    """How a pod's true usage follows its spec (its load otherwise: requests, bandwidth annotations)."""

    cpu_of_requests: float = 1.0  # true CPU = this x the CPU request


@dataclass
class Scenario:
    name: str
    source: str  # where it was read from (file path or resource name)
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]  # to place, in arrival order
    existing_pods: list[dict[str, Any]] = field(default_factory=list)
    background: dict[str, Background] = field(default_factory=dict)
    link_speed: dict[str, float] = field(default_factory=dict)  # bytes/s per direction
    timing: Timing = field(default_factory=Timing)
    outages: tuple[tuple[float, float], ...] = ()  # simulated seconds Prometheus does not answer
    config: str = ""  # KubeSchedulerConfiguration reference, relative to the scenario
    volumes: Volumes = field(default_factory=Volumes)  # StorageClasses, PVs, claims (volumes.py)
    description: str = ""
    seed: int = 1
    pod_groups: list[dict[str, Any]] = field(default_factory=list)  # PodGroup objects (gangs.py)
    levels: list[str] = field(default_factory=list)  # node topology labels generated, outer to inner
    traffic: Traffic = field(default_factory=Traffic)  # workload pairs and their rates (traffic.py)
    deployments: list[Deployment] = field(default_factory=list)  # owners of pods (workloads.py)
    timeline: tuple[Entry, ...] = ()  # changes at set times (timeline.py)
    usage: TrueUsage = field(default_factory=TrueUsage)
    budgets: list[dict[str, Any]] = field(default_factory=list)  # PodDisruptionBudgets (budgets.py)

    @property
    def node_names(self) -> list[str]:
        return node_names(self.nodes)

    def prometheus_down(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.outages)

    @property
    def end(self) -> float:
        """Arrival time of the last pod."""
        return self.timing.arrival(max(0, len(self.pods) - 1))


def load_scenario(text: str, label: str = "<string>", *, seed: int | None = None) -> Scenario:
    """Decode a scenario document; ConfigError with every problem found."""
    raw = parse_yaml(text, label)
    errs = ErrorList()
    f = Fields(raw, "", errs)
    name = f.str("name", "")
    description = f.str("description", "")
    config = f.str("config", "")
    file_seed = f.int("seed", 1, min=0)
    use_seed = file_seed if seed is None else seed
    rng = np.random.default_rng(use_seed)
    nodes = decode_nodes(f.any("nodes"), errs, rng)
    names = node_names(nodes.objects)
    existing = decode_pods(f.any("existingPods"), "existingPods", errs, rng, nodes=names)
    groups = decode_pod_groups(f.any("podGroups"), errs, rng)
    # Generated gangs bring their own members: `pods` may then be left out.
    pods = decode_pods(f.any("pods"), "pods", errs, rng) if f.has("pods") or not groups.pods else []
    pods += groups.pods
    background, speeds = decode_background(f.any("metrics"), errs, rng, names, nodes.link_speed_bits)
    timing = _timing(f.sub("timing"))
    outages = _prometheus(f.sub("prometheus"))
    volumes = decode_volumes(f.sub("volumes"))
    traffic = decode_traffic(f.sub("traffic"))
    usage = _usage(f.sub("usage"))
    deployments = collect_deployments([("existingPods", existing), ("pods", pods)], errs)
    budgets = decode_budgets(f.any("podDisruptionBudgets"), errs, deployments)
    timeline = decode_timeline(
        f.any("timeline"),
        errs,
        Known(
            nodes=names,
            link_speed=speeds,
            deployments=[d.key for d in deployments],
            workloads=_workloads(existing + pods, traffic.workload_label),
            pods={_pod_key(p) for p in existing + pods},
            rng=rng,
        ),
    )
    if volumes.claim_per_pod is not None:
        volumes.objects.setdefault("persistentvolumeclaims", []).extend(
            give_claims(pods, volumes.claim_per_pod)
        )
    clash = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in existing} & {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods
    }
    for key in sorted(clash):
        errs.duplicate("pods", key)
    placed_keys = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods]
    for key in sorted({k for k in placed_keys if placed_keys.count(k) > 1}):
        errs.duplicate("podGroups", key)
    f.finish()
    if errs:
        raise ConfigError(errs)
    return Scenario(
        name=name or label,
        source=label,
        nodes=nodes.objects,
        pods=pods,
        existing_pods=existing,
        background=background,
        link_speed=speeds,
        timing=timing,
        outages=outages,
        config=config,
        description=description,
        seed=use_seed,
        pod_groups=groups.objects,
        volumes=volumes,
        levels=nodes.levels,
        traffic=traffic,
        deployments=deployments,
        timeline=timeline,
        usage=usage,
        budgets=budgets,
    )


def _pod_key(raw: dict[str, Any]) -> str:
    return f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"


def _workloads(pods: list[dict[str, Any]], label: str) -> set[str]:
    out = set()
    for raw in pods:
        try:
            out.add(workload_key(parse_pod(raw), label))
        except PodParseError:
            continue  # reported where the pod was read
    return out


def _usage(f: Fields) -> TrueUsage:
    cpu = f.float("cpuOfRequests", 1.0, min=0)
    f.finish()
    return TrueUsage(cpu)


def _timing(f: Fields) -> Timing:
    rate = f.float("arrivalRatePerSecond", DEFAULT_ARRIVAL_RATE, min=1e-6)
    poll = f.float("pollIntervalSeconds", 0.0, min=1) if f.has("pollIntervalSeconds") else None
    start = f.float("podStartSeconds", DEFAULT_POD_START_SECONDS, min=0)
    window = f.float("rateWindowSeconds", 0.0, min=0) if f.has("rateWindowSeconds") else None
    scrape = f.float("scrapeIntervalSeconds", DEFAULT_SCRAPE_INTERVAL_SECONDS, min=0)
    f.finish()
    return Timing(rate, poll or None, start, window, scrape)


def _prometheus(f: Fields) -> tuple[tuple[float, float], ...]:
    out: list[tuple[float, float]] = []
    if f.bool("down", False):
        out.append((float("-inf"), float("inf")))
    path = join(f.path, "outages")
    for i, item in enumerate(f.list("outages")):
        ok = (
            isinstance(item, list)
            and len(item) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in item)
            and item[0] < item[1]
        )
        if not ok:
            f.errs.invalid(join(path, i), shown(item), "must be [from, to] in simulated seconds, from < to")
            continue
        out.append((float(item[0]), float(item[1])))
    f.finish()
    return tuple(out)
