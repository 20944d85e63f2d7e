"""LoadAware's args: resource weights, optional target-load packing, the `prometheus:` block."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsched.framework import Fields, PluginArgs
from netsched.metrics.plugin_api import CPU, MEMORY, PrometheusArgs

RESOURCES = (CPU, MEMORY)
DEFAULT_TARGET_UTILIZATION = 40.0  # Trimaran's TargetLoadPacking default, percent


@dataclass(frozen=True, slots=True)
class ResourceWeight:
    name: str
    weight: int


@dataclass(frozen=True, slots=True)
class TargetLoadPacking:
    """Score rises until utilisation reaches targetUtilization (%), then falls (bin packing)."""

    enabled: bool = False
    target_utilization: float = DEFAULT_TARGET_UTILIZATION

    @classmethod
    def decode(cls, f: Fields) -> TargetLoadPacking:
        enabled = f.bool("enabled", False)
        target = f.float("targetUtilization", DEFAULT_TARGET_UTILIZATION, min=1, max=99)
        f.finish()
        return cls(enabled, target)

    def encode(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "targetUtilization": self.target_utilization}


def _default_resources() -> tuple[ResourceWeight, ...]:
    return (ResourceWeight(CPU, 1), ResourceWeight(MEMORY, 1))


@dataclass(frozen=True)
class LoadAwareArgs(PluginArgs):
    resources: tuple[ResourceWeight, ...] = field(default_factory=_default_resources)
    target_load_packing: TargetLoadPacking = field(default_factory=TargetLoadPacking)
    prometheus: PrometheusArgs = field(default_factory=PrometheusArgs)

    @classmethod
    def decode(cls, fields: Fields) -> LoadAwareArgs:
        resources = _decode_resources(fields)
        tlp = TargetLoadPacking.decode(fields.sub("targetLoadPacking"))
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        fields.finish()
        return cls(resources, tlp, prometheus)

    def encode(self) -> dict[str, Any]:
        return {
            "resources": [{"name": r.name, "weight": r.weight} for r in self.resources],
            "targetLoadPacking": self.target_load_packing.encode(),
            "prometheus": self.prometheus.encode(),
        }


def _decode_resources(fields: Fields) -> tuple[ResourceWeight, ...]:
    if not fields.has("resources"):
        fields.any("resources")  # mark as seen
        return _default_resources()
    path = f"{fields.path}.resources" if fields.path else "resources"
    out: list[ResourceWeight] = []
    for item in fields.items("resources"):
        name = item.str("name", "")
        weight = item.int("weight", 1, min=0, max=100)
        item.finish()
        if not name:
            fields.errs.required(f"{item.path}.name")
        elif name not in RESOURCES:
            fields.errs.unsupported(f"{item.path}.name", name, RESOURCES)
        elif any(r.name == name for r in out):
            fields.errs.duplicate(f"{item.path}.name", name)
        else:
            out.append(ResourceWeight(name, weight))
    if not any(r.weight for r in out):
        fields.errs.invalid(path, len(out), "needs at least one resource with a weight above 0")
        return _default_resources()
    return tuple(out)
