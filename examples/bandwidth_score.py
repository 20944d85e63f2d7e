"""Bandwidth score: prefer nodes sending the fewest bytes/s (busiest node 0, idle node 100).
Run `python examples/bandwidth_score.py --config cfg.yaml` with BandwidthScore enabled with a weight."""

from __future__ import annotations

import sys

import netsched
from netsched.framework import CycleState, IntArray, NodeInfo, PodInfo, default_normalize_score
from netsched.metrics.plugin_api import MetricArgs, QueryScorePlugin


class BandwidthScore(QueryScorePlugin[MetricArgs]):  # args: the `prometheus:` block
    name = "BandwidthScore"  # the shared poller runs `query` for all nodes; a cycle reads its cache
    query = 'sum by ($by) (rate(node_network_transmit_bytes_total{device!~"lo|veth.*"}[$window]))'

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(self.node_value(node))  # raw score: the node's load in bytes/s

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        default_normalize_score(scores, reverse=True)  # inverse to load: busiest 0, idle 100


if __name__ == "__main__":
    sys.exit(netsched.main(netsched.with_plugin(BandwidthScore)))
