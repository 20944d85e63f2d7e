"""CheckPodCountLimit's args: the most non-terminated pods a node may already run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import Fields, PluginArgs

# The kubelet's default maxPods: without args the plugin agrees with NodeResourcesFit.
DEFAULT_POD_COUNT_LIMIT = 110


@dataclass(frozen=True)
class CheckPodCountLimitArgs(PluginArgs):
    pod_count_limit: int = DEFAULT_POD_COUNT_LIMIT

    @classmethod
    def decode(cls, fields: Fields) -> CheckPodCountLimitArgs:
        limit = fields.int("podCountLimit", DEFAULT_POD_COUNT_LIMIT, min=1)
        fields.finish()
        return cls(limit)

    def encode(self) -> dict[str, Any]:
        return {"podCountLimit": self.pod_count_limit}
