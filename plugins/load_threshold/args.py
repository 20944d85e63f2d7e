"""LoadThreshold's args: utilisation limits in percent (0 disables one) and the `prometheus:` block."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsched.framework import Fields, PluginArgs
from netsched.metrics.plugin_api import PrometheusArgs

# Koordinator's and Crane's CPU default; Koordinator's memory default; a link
# above 80 % in its busier direction already queues packets.
DEFAULT_CPU_PERCENT = 65.0
DEFAULT_MEMORY_PERCENT = 95.0
DEFAULT_NETWORK_PERCENT = 80.0


@dataclass(frozen=True)
class LoadThresholdArgs(PluginArgs):
    network_utilization_percent: float = DEFAULT_NETWORK_PERCENT
    cpu_utilization_percent: float = DEFAULT_CPU_PERCENT
    memory_utilization_percent: float = DEFAULT_MEMORY_PERCENT
    prometheus: PrometheusArgs = field(default_factory=PrometheusArgs)

    @classmethod
    def decode(cls, fields: Fields) -> LoadThresholdArgs:
        net = fields.float("networkUtilizationPercent", DEFAULT_NETWORK_PERCENT, min=0, max=100)
        cpu = fields.float("cpuUtilizationPercent", DEFAULT_CPU_PERCENT, min=0, max=100)
        mem = fields.float("memoryUtilizationPercent", DEFAULT_MEMORY_PERCENT, min=0, max=100)
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        if not (net or cpu or mem):
            fields.errs.invalid(
                fields.path or "<root>", 0, "every threshold is 0 (disabled): the plugin would do nothing"
            )
        fields.finish()
        return cls(net, cpu, mem, prometheus)

    def encode(self) -> dict[str, Any]:
        return {
            "networkUtilizationPercent": self.network_utilization_percent,
            "cpuUtilizationPercent": self.cpu_utilization_percent,
            "memoryUtilizationPercent": self.memory_utilization_percent,
            "prometheus": self.prometheus.encode(),
        }
