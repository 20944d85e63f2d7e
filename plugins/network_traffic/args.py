"""NetworkTraffic's args: only the shared `prometheus:` block (MetricArgs)."""

from __future__ import annotations

from dataclasses import dataclass

from netsched.metrics.plugin_api import MetricArgs


@dataclass(frozen=True)
class NetworkTrafficArgs(MetricArgs):
    pass
