"""Does the metrics pipeline see the cluster?  The start-up self-check.

The usual failures of load-aware schedulers are silent: a recording rule that
does not exist returns nothing, a node label that does not match the node
names maps nothing, and every node then scores the same.  The report names
the query (its PromQL), the Ready nodes without a series and the series that
match no node, so an operator can fix the scrape config or nodeMapping from
one log line.  It is logged when it changes (at start, after a node relist)
and served by `MetricSource.self_check()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from netsched.metrics.args import BY_INSTANCE, NodeMappingArgs
from netsched.metrics.cache import MetricsTable
from netsched.metrics.mapping import NodeResolver
from netsched.metrics.queries import QueryKey

LIST_LIMIT = 20  # names listed per problem; counts are always complete
LABEL_CANDIDATES = ("node", "kubernetes_node", "nodename", "instance")


@dataclass(frozen=True, slots=True)
class MetricCheck:
    metric: str
    promql: str
    polled: bool  # the query has been answered at least once
    series: int  # series in the last answer (before dropping NaN etc.)
    error: str = ""  # reason of the last failure, "" when the last poll answered
    empty: bool = False  # the last answer had no series at all
    nodes_without_series: tuple[str, ...] = ()  # Ready nodes (first LIST_LIMIT)
    nodes_without_series_count: int = 0
    unmapped: tuple[str, ...] = ()  # series keys matching no node (first LIST_LIMIT)
    unmapped_count: int = 0
    dropped: Mapping[str, int] = field(default_factory=dict)
    optional: bool = False  # an empty answer is expected where Prometheus lacks it (per-pod usage)

    @property
    def ok(self) -> bool:
        empty = self.empty and not self.optional
        return self.polled and not self.error and not empty and not self.nodes_without_series_count


@dataclass(frozen=True, slots=True)
class SelfCheckReport:
    source: str
    polled: bool  # at least one poll has run
    reachable: bool
    nodes: int  # nodes known to the hub (0: update_nodes not called yet)
    ready_nodes: int
    mapping: NodeMappingArgs
    metrics: tuple[MetricCheck, ...]

    @property
    def ok(self) -> bool:
        return self.polled and self.reachable and all(m.ok for m in self.metrics)

    def problems(self) -> list[str]:
        """One human sentence per problem, with the PromQL and a hint."""
        if not self.polled:
            return ["no poll has run yet"]
        out = [] if self.reachable else ["Prometheus did not answer the last poll"]
        for m in self.metrics:
            found = []
            if m.error:
                found.append(f"{m.metric}: query failed ({m.error})")
            elif m.empty and not m.optional:
                found.append(
                    f"{m.metric}: query returned no series (missing exporter or recording rule, or wrong labels)"
                )
            if m.nodes_without_series_count:
                names = ", ".join(m.nodes_without_series)
                more = m.nodes_without_series_count - len(m.nodes_without_series)
                found.append(
                    f"{m.metric}: {m.nodes_without_series_count} Ready node(s) have no series: {names}"
                    + (f" and {more} more" if more > 0 else "")
                )
            if m.unmapped_count:
                found.append(f"{m.metric}: {m.unmapped_count} series match no node ({self._hint(m)})")
            if found:
                out.extend(found)
                out.append(f"{m.metric}: PromQL: {m.promql}")
        return out

    def _hint(self, m: MetricCheck) -> str:
        keys = [k for k in m.unmapped if k]
        if not keys:
            if self.mapping.by == BY_INSTANCE:
                return "series have no instance label"
            cands = ", ".join(c for c in LABEL_CANDIDATES if c != self.mapping.label)
            return (
                f"series have no {self.mapping.label!r} label: set nodeMapping.label to the label your scrape "
                f"config adds ({cands}) or nodeMapping.by: instance"
            )
        shown = ", ".join(repr(k) for k in keys[:5])
        return f"keys {shown} are neither a node name nor a node address"

    def __str__(self) -> str:
        head = f"metrics self-check source={self.source} nodes={self.nodes} ready={self.ready_nodes}"
        probs = self.problems()
        return head + (": ok" if not probs else "".join(f"\n  - {p}" for p in probs))


def check(
    source: str,
    table: MetricsTable,
    keys: list[QueryKey],
    directory: NodeResolver | None,
    mapping: NodeMappingArgs,
) -> SelfCheckReport:
    ready = directory.ready if directory is not None else np.zeros(0, dtype=bool)
    metrics = []
    for key in keys:
        series = table.series.get(key)
        error = table.errors.get(key, "")
        if series is None:
            metrics.append(MetricCheck(key.name, key.promql, False, 0, error or "not polled yet"))
            continue
        without: list[str] = []
        unmapped: list[str] = []
        n_without = n_unmapped = 0
        if directory is not None and not key.key_label:
            rows = directory.rows(series.keys)
            covered = np.zeros(len(directory), dtype=bool)
            covered[rows[rows >= 0]] = True
            missing = np.flatnonzero(ready & ~covered)
            n_without = len(missing)
            without = [directory.names[i] for i in missing[:LIST_LIMIT]]
            bad = np.flatnonzero(rows < 0)
            n_unmapped = len(bad)
            unmapped = [series.keys[i] for i in bad[:LIST_LIMIT]]
        metrics.append(
            MetricCheck(
                key.name,
                key.promql,
                True,
                series.total,
                error,
                series.total == 0,
                tuple(without),
                n_without,
                tuple(unmapped),
                n_unmapped,
                dict(series.dropped),
                key.optional,
            )
        )
    return SelfCheckReport(
        source,
        table.version > 0,
        table.reachable,
        len(directory) if directory is not None else 0,
        int(ready.sum()),
        mapping,
        tuple(metrics),
    )
