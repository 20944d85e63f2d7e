"""CheckPodLimitResources' args: per resource, the share of allocatable that limits may fill."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsched.framework import CPU, MEMORY, Fields, PluginArgs

# Without args, limits may add up to the node's allocatable cpu and memory (no overcommit).
DEFAULT_LIMIT_RATIO = ((CPU, 1.0), (MEMORY, 1.0))


@dataclass(frozen=True)
class CheckPodLimitResourcesArgs(PluginArgs):
    # (resource, ratio) pairs, in the order given; ratio > 0 (above 1 allows limit overcommit).
    limit_ratio: tuple[tuple[str, float], ...] = field(default=DEFAULT_LIMIT_RATIO)

    @classmethod
    def decode(cls, fields: Fields) -> CheckPodLimitResourcesArgs:
        if not fields.has("limitRatio"):
            fields.finish()
            return cls()
        ratios = fields.sub("limitRatio")
        out = []
        for name in list(ratios.raw):
            if not isinstance(name, str) or not name:
                ratios.errs.invalid(ratios.path, name, "resource names must be non-empty strings")
                ratios.seen.add(name)
                continue
            before = len(ratios.errs)
            v = ratios.float(name, 0.0)
            if len(ratios.errs) > before:
                continue  # not a number: already reported
            if v <= 0:
                ratios.errs.invalid(f"{ratios.path}.{name}", v, "must be greater than 0")
                continue
            out.append((name, v))
        if not ratios.raw:
            fields.errs.invalid(ratios.path, {}, "must name at least one resource, e.g. {cpu: 0.7}")
        fields.finish()
        return cls(tuple(out))

    def encode(self) -> dict[str, Any]:
        return {"limitRatio": dict(self.limit_ratio)}
