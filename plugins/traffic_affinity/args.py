"""TrafficAffinityArgs: where pair traffic comes from, the topology levels and their distances.

`levels` names the topology levels as node labels, outer to inner (the same
list GangTopology's `levels` takes: set both to one list); the node itself is
the implicit innermost level at distance 0.  `distances` gives, innermost
listed level first, the distance of a peer whose innermost shared level is
that one, then the distance of a peer sharing no listed level; default
1, 2, ..., len(levels) + 1.  `workloadLabel` overrides the owner-derived
workload name when a pod carries it.  The traffic graph's query is the
`traffic:` block, polled through the shared `prometheus:` block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from netsched.framework import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, Fields, join, label_key_errors
from netsched.metrics.plugin_api import MetricArgs, PrometheusArgs, TrafficArgs


@dataclass(frozen=True)
class TrafficAffinityArgs(MetricArgs):
    traffic: TrafficArgs = field(default_factory=TrafficArgs)
    levels: tuple[str, ...] = (LABEL_TOPOLOGY_ZONE,)
    distances: tuple[float, ...] = ()  # () = 1, 2, ..., len(levels) + 1
    workload_label: str = ""

    @property
    def level_distances(self) -> tuple[float, ...]:
        """Innermost listed level first, then 'no shared level'."""
        return self.distances or tuple(float(i + 1) for i in range(len(self.levels) + 1))

    @classmethod
    def decode(cls, fields: Fields) -> Self:
        traffic = TrafficArgs.decode(fields.sub("traffic"))
        levels = _levels(fields)
        distances = _distances(fields, len(levels))
        label = fields.str("workloadLabel", "")
        problems = label_key_errors(label) if label else []
        if problems:
            fields.errs.invalid(join(fields.path, "workloadLabel"), label, "; ".join(problems))
            label = ""
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        fields.finish()
        return cls(prometheus, traffic, levels, distances, label)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {"traffic": self.traffic.encode(), "levels": list(self.levels)}
        if self.distances:
            out["distances"] = list(self.distances)
        out["workloadLabel"] = self.workload_label
        out["prometheus"] = self.prometheus.encode()
        return out


def _levels(fields: Fields) -> tuple[str, ...]:
    if not fields.has("levels"):
        return (LABEL_TOPOLOGY_ZONE,)
    levels = fields.label_keys("levels")
    if LABEL_HOSTNAME in levels:
        p = join(join(fields.path, "levels"), fields.list("levels").index(LABEL_HOSTNAME))
        fields.errs.invalid(
            p, LABEL_HOSTNAME, "the node is the implicit innermost level (distance 0): leave it out"
        )
    return tuple(k for k in levels if k != LABEL_HOSTNAME)


def _distances(fields: Fields, n_levels: int) -> tuple[float, ...]:
    if not fields.has("distances"):
        return ()
    path = join(fields.path, "distances")
    raw = fields.list("distances")
    if len(raw) != n_levels + 1:
        fields.errs.invalid(
            path,
            raw,
            f"must list {n_levels + 1} distances: one per level, innermost first, then 'none shared'",
        )
        return ()
    out: list[float] = []
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            fields.errs.invalid(join(path, i), v, "must be a number > 0")
            return ()
        if out and v < out[-1]:
            fields.errs.invalid(join(path, i), v, "distances must not decrease outward")
            return ()
        out.append(float(v))
    return tuple(out)
