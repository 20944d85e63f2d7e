"""NetworkTraffic's args: only the shared `prometheus:` block."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsched.framework import Fields, PluginArgs
from netsched.metrics import PrometheusArgs


@dataclass(frozen=True)
class NetworkTrafficArgs(PluginArgs):
    prometheus: PrometheusArgs = field(default_factory=PrometheusArgs)

    @classmethod
    def decode(cls, fields: Fields) -> NetworkTrafficArgs:
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        fields.finish()
        return cls(prometheus)

    def encode(self) -> dict[str, Any]:
        return {"prometheus": self.prometheus.encode()}
