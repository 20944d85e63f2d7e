"""The scheduler's own Prometheus metrics.

Names and labels follow kube-scheduler's stable metrics so existing
dashboards and alerts keep working; netsched_* series add what only netsched
knows (placements per node, bind failures, leadership).  The registry is
injected: production uses one per process, tests a fresh one each.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

M = TypeVar("M", Counter, Gauge)

# kube-scheduler's buckets: exponential from 1 ms.
_ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
_EP_BUCKETS = tuple(0.0001 * 2**i for i in range(12))
_PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result.",
            ["result", "profile"],
            registry=r,
        )
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result", "profile"],
            buckets=_ATTEMPT_BUCKETS,
            registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type.",
            ["queue"],
            registry=r,
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=(1, 2, 4, 8, 16),
            registry=r,
        )
        self.framework_extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=_EP_BUCKETS,
            registry=r,
        )
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point (sampled).",
            ["plugin", "extension_point", "status"],
            buckets=_PLUGIN_BUCKETS,
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now.",
            registry=r,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims.",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=r,
        )
        self.placements = Counter(
            "netsched_placements",
            "Pods bound by netsched, by node and profile.",
            ["node", "profile"],
            registry=r,
        )
        self.bind_errors = Counter(
            "netsched_bind_errors",
            "Binding cycle failures, by extension point (permit, preBind, bind).",
            ["stage", "profile"],
            registry=r,
        )
        self.malformed_pods = Counter(
            "netsched_malformed_pods",
            "Pods that could not be parsed and were reported with a FailedScheduling event.",
            registry=r,
        )
        self.leader = Gauge(
            "netsched_leader",
            "1 while this replica holds the leader lease (or election is disabled), else 0.",
            registry=r,
        )
        self.cache_nodes = Gauge("netsched_cache_nodes", "Nodes in the scheduler cache.", registry=r)
        self.cache_assumed_pods = Gauge(
            "netsched_cache_assumed_pods", "Pods assumed on a node and not yet seen bound.", registry=r
        )
        self.shadow_decisions = Counter(
            "netsched_shadow_decisions",
            "Dry-run (shadow mode) placements computed for pods of another scheduler.",
            ["profile"],
            registry=r,
        )
        self.shadow_placements = Counter(
            "netsched_shadow_placements",
            "Dry-run decisions compared with the real scheduler's binding (agrees=true|false).",
            ["profile", "agrees"],
            registry=r,
        )
        self.events_dropped = Counter(
            "netsched_events_dropped",
            "Kubernetes Events dropped unwritten: queue full, recorded after stop, or still failing at shutdown.",
            ["reason"],
            registry=r,
        )
        self.event_write_latency = Histogram(
            "netsched_event_write_latency_seconds",
            "Delay from recording an Event (e.g. Scheduled, right after the binding) to the API server "
            "accepting it, retries included.",
            buckets=_ATTEMPT_BUCKETS,
            registry=r,
        )

        self.config_reloads = Counter(
            "netsched_config_reloads",
            "Reloads of the --config file, by result (success, invalid, restart_required, unchanged).",
            ["result"],
            registry=r,
        )
        self.config_info = Gauge(
            "netsched_config_info",
            "1 for the hash (SHA-256, 16 hex digits) of the configuration file in use.",
            ["hash"],
            registry=r,
        )
        self._config_hash = ""
        self._plugin_metrics: dict[str, Counter | Gauge] = {}
        self._plugin_lock = threading.Lock()

    def counter(self, name: str, doc: str, labels: Sequence[str]) -> Counter:
        """A plugin family's counter in this registry (seams.PluginMetrics), made once."""
        return self._plugin_metric(Counter, name, doc, labels)

    def gauge(self, name: str, doc: str, labels: Sequence[str]) -> Gauge:
        """A plugin family's gauge in this registry (seams.PluginMetrics), made once."""
        return self._plugin_metric(Gauge, name, doc, labels)

    def _plugin_metric(self, kind: type[M], name: str, doc: str, labels: Sequence[str]) -> M:
        with self._plugin_lock:
            got = self._plugin_metrics.get(name)
            if got is None:
                got = self._plugin_metrics[name] = kind(name, doc, list(labels), registry=self.registry)
        if not isinstance(got, kind):
            raise ValueError(f"metric {name} is a {type(got).__name__}, asked for as a {kind.__name__}")
        return got

    def config_reloaded(self, result: str) -> None:
        self.config_reloads.labels(result).inc()

    def config_active(self, digest: str) -> None:
        if self._config_hash and self._config_hash != digest:
            self.config_info.remove(self._config_hash)
        self._config_hash = digest
        self.config_info.labels(digest).set(1)

    def set_pending(self, queue: str, count: int) -> None:
        self.pending_pods.labels(queue=queue).set(count)
