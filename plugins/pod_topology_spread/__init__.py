"""PodTopologySpread: topology spread constraints, hard (PreFilter, Filter) and soft (PreScore, Score)."""

from plugins.pod_topology_spread.args import PodTopologySpreadArgs
from plugins.pod_topology_spread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread", "PodTopologySpreadArgs"]
