"""NetworkTraffic: prefer nodes whose network links are least busy.

Load of a node = the busier direction of its physical interfaces, in bytes/s
(max(rx, tx): links are full duplex, so 6 Gb/s in plus 6 Gb/s out is 60 % of a
10 Gb/s link, not 120 %), plus the bandwidth of pods reserved on it since its
last sample (estimation).  Then, per candidate node:

    u = load / linkSpeed                        when the node's link speed is known
    u = load / max(load of fresh candidates     otherwise (relative: the busiest such
                   without a link speed)          node gets u = 1; all idle -> u = 0)
    score = round(100 x (1 - min(u, 1)))

Nodes without a fresh sample get the mean score of the fresh candidates
(stalePolicy failOpen) or 0 (failClosed).  While Prometheus is down the load
is the sum of the bandwidth annotations of the pods on the node (default per
pod: estimation.defaultBandwidthBytes).

Scores are computed once per pod in Score, for all candidates at once
(score_nodes); a per-node score() scores the cycle's candidates the same way,
so the two always agree.
"""

from __future__ import annotations

from netsched.framework import (
    Handle,
    IntArray,
    PodInfo,
    Snapshot,
    names,
)
from netsched.metrics.plugin_api import (
    LINK_SPEED,
    NETWORK_RX,
    NETWORK_TX,
    MetricScorePlugin,
    cold_link_int_scores,
    source_for,
)

from .args import NetworkTrafficArgs


class NetworkTraffic(MetricScorePlugin[NetworkTrafficArgs]):
    name = names.NETWORK_TRAFFIC

    def __init__(self, args: NetworkTrafficArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.source = source_for(handle, self.args.prometheus, self.name)
        self.source.require(NETWORK_RX, NETWORK_TX, LINK_SPEED)

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Scores of snapshot rows `idx` (see the module docstring for the formula): the pod's
        own traffic is not part of it."""
        return cold_link_int_scores(self.source, snapshot, idx)
