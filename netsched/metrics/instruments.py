"""The metrics pipeline's own metrics (what operators graph and alert on).

Registered on the CollectorRegistry handed to MetricsHub (tests use a fresh
one).  Every series carries `source` (the Prometheus address, redacted) so two
Prometheus servers never overwrite each other.  Per-node values (utilisation
the scheduler saw, sample age) are produced by a collector at scrape time from
the current table: ages are exact when scraped, removed nodes vanish, and the
poll loop does no per-node metric work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from netsched.metrics.cache import MetricsTable
from netsched.metrics.mapping import NodeResolver, align
from netsched.metrics.queries import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX

_QUERY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Instruments:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.query_duration = Histogram(
            "netsched_prometheus_query_duration_seconds",
            "Duration of one Prometheus instant query, retries included.",
            ["source", "metric"],
            buckets=_QUERY_BUCKETS,
            registry=registry,
        )
        self.poll_duration = Histogram(
            "netsched_prometheus_poll_duration_seconds",
            "Duration of one poll (every required query once).",
            ["source"],
            buckets=_QUERY_BUCKETS,
            registry=registry,
        )
        self.query_errors = Counter(
            "netsched_prometheus_query_errors",
            "Prometheus queries that failed after retries, by reason.",
            ["source", "metric", "reason"],
            registry=registry,
        )
        self.dropped = Counter(
            "netsched_metrics_dropped_samples",
            "Samples dropped because they were NaN, infinite or negative.",
            ["source", "metric", "reason"],
            registry=registry,
        )
        self.fallback = Gauge(
            "netsched_metrics_fallback",
            "1 while Prometheus does not answer and plugins score by requests.",
            ["source"],
            registry=registry,
        )
        self.unmapped = Gauge(
            "netsched_metrics_unmapped_series",
            "Series of the last poll that match no node.",
            ["source", "metric"],
            registry=registry,
        )
        self.nodes_without_series = Gauge(
            "netsched_metrics_nodes_without_series",
            "Ready nodes with no series in the last poll.",
            ["source", "metric"],
            registry=registry,
        )
        self.query_empty = Gauge(
            "netsched_metrics_query_empty",
            "1 when the query returned no series at all (missing recording rule or wrong labels).",
            ["source", "metric"],
            registry=registry,
        )


class PolledTable(Protocol):
    """What the collector reads from a poller (the poller imports us, not the other way)."""

    @property
    def name(self) -> str: ...

    @property
    def directory(self) -> NodeResolver | None: ...

    @property
    def table(self) -> MetricsTable: ...


class NodeCollector(Collector):
    """netsched_node_* gauges, computed from each poller's current table when scraped."""

    def __init__(
        self, pollers: Callable[[], Iterable[tuple[PolledTable, int]]], wall: Callable[[], float]
    ) -> None:
        """`pollers` yields each poller with its count of pods under estimation."""
        self._pollers = pollers
        self._wall = wall

    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    def _families(self) -> tuple[GaugeMetricFamily, ...]:
        return (
            GaugeMetricFamily(
                "netsched_node_network_utilisation",
                "Busier direction of the node's traffic over its link speed, as last polled.",
                labels=["source", "node"],
            ),
            GaugeMetricFamily(
                "netsched_node_cpu_utilisation",
                "Node CPU utilisation (0-1), as last polled.",
                labels=["source", "node"],
            ),
            GaugeMetricFamily(
                "netsched_node_memory_utilisation",
                "Node memory utilisation (0-1), as last polled.",
                labels=["source", "node"],
            ),
            GaugeMetricFamily(
                "netsched_node_metric_sample_age_seconds",
                "Age of the node's latest sample of each metric.",
                labels=["source", "node", "metric"],
            ),
            GaugeMetricFamily(
                "netsched_metrics_estimated_pods",
                "Pods the ledger corrects readings for: placed (not yet wholly in the rate window) or gone (still in it).",
                labels=["source"],
            ),
        )

    def collect(self) -> Iterator[Metric]:
        net, cpu, mem, age, est = self._families()
        now = self._wall()
        for p, estimated in self._pollers():
            est.add_metric([p.name], float(estimated))
            directory = p.directory
            table = p.table
            if directory is None:
                continue
            n = len(directory)
            names = directory.names
            by_name: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for key, series in table.series.items():
                if key.name in by_name:
                    continue  # two views polling different PromQL under one name: first wins here
                by_name[key.name] = align(directory.rows(series.keys), series.values, series.timestamps, n)
            for metric, (_, ts) in by_name.items():
                for i in np.flatnonzero(np.isfinite(ts)):
                    age.add_metric([p.name, names[i], metric], max(0.0, now - float(ts[i])))
            for fam, metric in ((cpu, CPU), (mem, MEMORY)):
                if metric in by_name:
                    v = by_name[metric][0]
                    for i in np.flatnonzero(np.isfinite(v)):
                        fam.add_metric([p.name, names[i]], float(v[i]))
            if NETWORK_RX in by_name and NETWORK_TX in by_name and LINK_SPEED in by_name:
                busy = np.fmax(by_name[NETWORK_RX][0], by_name[NETWORK_TX][0])
                speed = by_name[LINK_SPEED][0]
                with np.errstate(divide="ignore", invalid="ignore"):
                    u = np.where(speed > 0, busy / speed, np.nan)
                for i in np.flatnonzero(np.isfinite(u)):
                    net.add_metric([p.name, names[i]], float(u[i]))
        yield from (net, cpu, mem, age, est)
