"""NetworkTraffic's args: only the shared `prometheus:` block (netsched.metrics.scoring.MetricArgs)."""

from __future__ import annotations

from dataclasses import dataclass

from netsched.metrics.scoring import MetricArgs


@dataclass(frozen=True)
class NetworkTrafficArgs(MetricArgs):
    pass
