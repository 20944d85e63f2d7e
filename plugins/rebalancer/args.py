"""Rebalancer's args: when a node or a workload is worth a move, how many moves, and where its
memory is kept.  Every field is checked with its path; see README.md for the table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsched.framework import Fields, PluginArgs
from netsched.metrics.plugin_api import PrometheusArgs

NETWORK, CPU, MEMORY = "network", "cpu", "memory"
KINDS = (NETWORK, CPU, MEMORY)


@dataclass(frozen=True, slots=True)
class Watermarks:
    """A resource's trigger: above `high` percent for consecutiveRounds rounds makes a node hot;
    a move must leave its target at or below `target` percent with the pod counted.  high 0
    disables the resource."""

    high: float
    target: float

    @property
    def enabled(self) -> bool:
        return self.high > 0

    @classmethod
    def decode(cls, f: Fields, default: Watermarks) -> Watermarks:
        high = f.float("highPercent", default.high, min=0, max=100)
        fallback = default.target if 0 < default.target < high else max(high - 10.0, high / 2)
        target = f.float("targetPercent", fallback, min=0, max=100)
        if high and not 0 < target < high:
            f.errs.invalid(
                f"{f.path}.targetPercent", target, f"must be above 0 and below highPercent ({high:g})"
            )
            target = min(default.target, high / 2)
        f.finish()
        return cls(high, target)

    def encode(self) -> dict[str, Any]:
        return {"highPercent": self.high, "targetPercent": self.target}


@dataclass(frozen=True, slots=True)
class Limits:
    """How many evictions, and where: per round, per source node and per namespace in a round,
    and over any 60 s window."""

    per_round: int = 5
    per_node: int = 2
    per_namespace: int = 5
    per_minute: int = 10

    @classmethod
    def decode(cls, f: Fields) -> Limits:
        d = cls()
        got = cls(
            f.int("evictionsPerRound", d.per_round, min=1),
            f.int("evictionsPerNode", d.per_node, min=1),
            f.int("evictionsPerNamespace", d.per_namespace, min=1),
            f.int("evictionsPerMinute", d.per_minute, min=1),
        )
        f.finish()
        return got

    def encode(self) -> dict[str, Any]:
        return {
            "evictionsPerRound": self.per_round,
            "evictionsPerNode": self.per_node,
            "evictionsPerNamespace": self.per_namespace,
            "evictionsPerMinute": self.per_minute,
        }


@dataclass(frozen=True, slots=True)
class StateRef:
    """The ConfigMap where the rebalancer keeps its cooldowns and moves in flight, so a new
    leader honours the old one's."""

    namespace: str = "netsched-system"
    name: str = "netsched-rebalancer"

    @classmethod
    def decode(cls, f: Fields) -> StateRef:
        d = cls()
        got = cls(f.str("namespace", d.namespace), f.str("name", d.name))
        for key, value in (("namespace", got.namespace), ("name", got.name)):
            if not value:
                f.errs.required(f"{f.path}.{key}")
        f.finish()
        return got

    def encode(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name}


DEFAULT_NETWORK = Watermarks(80.0, 70.0)
DEFAULT_CPU = Watermarks(80.0, 65.0)
DEFAULT_MEMORY = Watermarks(0.0, 0.0)  # off: memory is a gauge a move frees at once, rarely the hot spot


@dataclass(frozen=True)
class RebalancerArgs(PluginArgs):
    dry_run: bool = True
    interval_seconds: float = 60.0
    consecutive_rounds: int = 3
    network: Watermarks = DEFAULT_NETWORK
    cpu: Watermarks = DEFAULT_CPU
    memory: Watermarks = DEFAULT_MEMORY
    # Traffic trigger: a move must cut the pod's traffic crossing its node's link by at least this
    # fraction (0 disables the trigger).
    traffic_min_reduction: float = 0.5
    # ... and only for workloads whose pods' measured traffic crossing their nodes' links is at
    # least this many Mbit/s (both directions), for consecutiveRounds rounds in a row: a trickle
    # between two pods, or one busy window, moves nothing.
    traffic_min_crossing_mbps: float = 10.0
    # A move must lower its source's utilisation (of the hot resource) by at least this many points.
    min_relief_percent: float = 5.0
    limits: Limits = field(default_factory=Limits)
    workload_cooldown_seconds: float = 300.0
    node_cooldown_seconds: float = 300.0
    # How long the plan holds its target for the replacement (and keeps it off the source).
    replacement_timeout_seconds: float = 120.0
    excluded_namespaces: tuple[str, ...] = ("kube-system",)
    evict_local_storage_pods: bool = False
    workload_label: str = ""  # as TrafficAffinity's workloadLabel: how pods name their workload
    state: StateRef = field(default_factory=StateRef)
    prometheus: PrometheusArgs = field(default_factory=PrometheusArgs)

    @property
    def watermarks(self) -> dict[str, Watermarks]:
        return {
            k: w for k, w in ((NETWORK, self.network), (CPU, self.cpu), (MEMORY, self.memory)) if w.enabled
        }

    @classmethod
    def decode(cls, f: Fields) -> RebalancerArgs:
        d = cls()
        dry_run = f.bool("dryRun", d.dry_run)
        interval = f.float("intervalSeconds", d.interval_seconds, min=1)
        rounds = f.int("consecutiveRounds", d.consecutive_rounds, min=1)
        network = Watermarks.decode(f.sub("network"), DEFAULT_NETWORK)
        cpu = Watermarks.decode(f.sub("cpu"), DEFAULT_CPU)
        memory = Watermarks.decode(f.sub("memory"), DEFAULT_MEMORY)
        traffic = f.sub("traffic")
        reduction = traffic.float("minReduction", d.traffic_min_reduction, min=0, max=1)
        crossing = traffic.float("minCrossingMbps", d.traffic_min_crossing_mbps, min=0)
        traffic.finish()
        relief = f.float("minReliefPercent", d.min_relief_percent, min=0, max=100)
        limits = Limits.decode(f.sub("limits"))
        cooldown = f.sub("cooldownSeconds")
        workload_cd = cooldown.float("workload", d.workload_cooldown_seconds, min=0)
        node_cd = cooldown.float("node", d.node_cooldown_seconds, min=0)
        cooldown.finish()
        timeout = f.float("replacementTimeoutSeconds", d.replacement_timeout_seconds, min=1)
        excluded = (
            tuple(str(x) for x in f.list("excludedNamespaces"))
            if f.has("excludedNamespaces")
            else d.excluded_namespaces
        )
        local = f.bool("evictLocalStoragePods", d.evict_local_storage_pods)
        label = f.str("workloadLabel", "")
        state = StateRef.decode(f.sub("state"))
        prometheus = PrometheusArgs.decode(f.sub("prometheus"))
        if not (network.enabled or cpu.enabled or memory.enabled or reduction):
            f.errs.invalid(
                f.path or "<root>", 0, "every trigger is off (highPercent 0, traffic.minReduction 0)"
            )
        f.finish()
        return cls(
            dry_run,
            interval,
            rounds,
            network,
            cpu,
            memory,
            reduction,
            crossing,
            relief,
            limits,
            workload_cd,
            node_cd,
            timeout,
            excluded,
            local,
            label,
            state,
            prometheus,
        )

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dryRun": self.dry_run,
            "intervalSeconds": self.interval_seconds,
            "consecutiveRounds": self.consecutive_rounds,
            "network": self.network.encode(),
            "cpu": self.cpu.encode(),
            "memory": self.memory.encode(),
            "traffic": {
                "minReduction": self.traffic_min_reduction,
                "minCrossingMbps": self.traffic_min_crossing_mbps,
            },
            "minReliefPercent": self.min_relief_percent,
            "limits": self.limits.encode(),
            "cooldownSeconds": {
                "workload": self.workload_cooldown_seconds,
                "node": self.node_cooldown_seconds,
            },
            "replacementTimeoutSeconds": self.replacement_timeout_seconds,
            "excludedNamespaces": list(self.excluded_namespaces),
            "evictLocalStoragePods": self.evict_local_storage_pods,
            "state": self.state.encode(),
            "prometheus": self.prometheus.encode(),
        }
        if self.workload_label:
            out["workloadLabel"] = self.workload_label
        return out
