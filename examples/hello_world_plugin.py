"""HelloWorldPlugin (seed article): score nodes by network bandwidth, the least busy highest.

Run:  python examples/hello_world_plugin.py --config examples/hello_world_plugin.yaml
Its free-form args (xxx, yyy, zzz) are read into typed fields; `prometheus:` may be added.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any, Self

import netsched
from netsched.framework import (
    CycleState,
    Fields,
    Handle,
    IntArray,
    NodeInfo,
    PodInfo,
    default_normalize_score,
)
from netsched.metrics.plugin_api import MetricArgs, PrometheusArgs, QueryScorePlugin

log = logging.getLogger("hello_world_plugin")


@dataclass(frozen=True)
class HelloWorldArgs(MetricArgs):
    xxx: str = ""
    yyy: str = ""
    zzz: int = 0

    @classmethod
    def decode(cls, fields: Fields) -> Self:
        xxx, yyy, zzz = fields.str("xxx", ""), fields.str("yyy", ""), fields.int("zzz", 0)
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        fields.finish()
        return cls(prometheus, xxx, yyy, zzz)

    def encode(self) -> dict[str, Any]:
        return {**super().encode(), "xxx": self.xxx, "yyy": self.yyy, "zzz": self.zzz}


class HelloWorldPlugin(QueryScorePlugin[HelloWorldArgs]):
    name = "HelloWorldPlugin"
    query = 'sum by ($by) (rate(node_network_transmit_bytes_total{device!~"lo|veth.*"}[$window]))'

    def __init__(self, args: HelloWorldArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        a = self.args  # typed: HelloWorldArgs
        log.info("HelloWorldPlugin args xxx=%r yyy=%r zzz=%d", a.xxx, a.yyy, a.zzz)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(self.node_value(node))  # raw: bytes/s the node sends

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        default_normalize_score(scores, reverse=True)  # busiest 0, idle 100


if __name__ == "__main__":
    sys.exit(netsched.main(netsched.with_plugin(HelloWorldPlugin)))
