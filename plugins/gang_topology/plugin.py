"""GangTopology: a gang's pods close together, on cold links.

For a pod of a gang (a PodGroup member, plugins/coscheduling), the members
already reserved or bound pull it into their topology domain, and measured
link load (the metrics cache NetworkTraffic reads) pushes it off busy links:

    share_zone(n) = members placed in n's topologyKey domain / members placed
    share_rack(n) = the same for rackKey (only when rackKey is set)
    locality(n)   = share_zone(n), or (share_zone(n) + share_rack(n)) / 2 with a rack key;
                    1 on every node while no member is placed (nothing to be near yet)
    link(n)       = 1 - min(u, 1), u as NetworkTraffic computes it (load over link speed,
                    or relative to the busiest fresh candidate without one); stale
                    nodes get the fresh candidates' mean (failOpen) or 0 (failClosed)
    score         = round(100 x ((1 - linkLoadWeight) x locality + linkLoadWeight x link))

Pods without a gang skip the plugin (PreScore Skip).  Members are found with
the gang manager (bound and assumed, i.e. reserved, pods indexed by gang), so a
member waiting at Permit already pulls the next one.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from netsched.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    IntArray,
    PodInfo,
    Snapshot,
    Status,
)
from netsched.framework.names import GANG_TOPOLOGY
from netsched.gangs import gangs_of, group_name
from netsched.metrics.plugin_api import (
    LINK_SPEED,
    NETWORK_RX,
    NETWORK_TX,
    FloatArray,
    MetricScorePlugin,
    cold_link_scores,
    source_for,
    to_int_scores,
)
from netsched.plugins.gang_topology.args import GangTopologyArgs


class GangTopology(MetricScorePlugin[GangTopologyArgs]):
    name = GANG_TOPOLOGY

    def __init__(self, args: GangTopologyArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.cfg = self.args
        self.source = source_for(handle, self.cfg.prometheus, self.name)
        self.gangs = gangs_of(handle, self.name)
        self.source.require(NETWORK_RX, NETWORK_TX, LINK_SPEED)

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        if not group_name(pod):
            return Status.skip()
        return super().pre_score(state, pod, snapshot, idx)

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        w = self.cfg.link_load_weight
        raw = MAX_NODE_SCORE * ((1.0 - w) * self.locality(pod, snapshot, idx) + w * self.link(snapshot, idx))
        return to_int_scores(raw)

    # ------------------------------------------------------------ locality

    def placed_members(self, pod: PodInfo, snapshot: Snapshot) -> list[int]:
        """Snapshot rows of the gang's other members (bound or reserved), one entry per member:
        the gang's pods from the gang manager (indexed by gang), not a scan of every pod."""
        rows = []
        for p in self.gangs.group_members(pod.namespace, group_name(pod)):
            row = snapshot.index.get(p.node_name) if p.node_name else None
            if p.uid != pod.uid and row is not None:
                rows.append(row)
        return rows

    def locality(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> FloatArray:
        rows = self.placed_members(pod, snapshot)
        if not rows:
            return np.ones(len(idx))
        out = self._share(snapshot, self.cfg.topology_key, rows, idx)
        if self.cfg.rack_key:
            out = (out + self._share(snapshot, self.cfg.rack_key, rows, idx)) / 2.0
        return out

    @staticmethod
    def _share(snapshot: Snapshot, key: str, rows: list[int], idx: IntArray) -> FloatArray:
        """Per candidate: the share of placed members in its domain of label `key` (0 unlabelled)."""
        column = snapshot.label_column(key)
        per_domain = Counter(column[r] for r in rows if column[r] is not None)
        return np.array(
            [per_domain.get(d, 0) if d is not None else 0 for d in column[idx]], dtype=float
        ) / len(rows)

    # ------------------------------------------------------------ link load

    def link(self, snapshot: Snapshot, idx: IntArray) -> FloatArray:
        """1 - link utilisation per candidate, in [0, 1] (NetworkTraffic's u)."""
        return cold_link_scores(self.source, snapshot, idx) / MAX_NODE_SCORE
