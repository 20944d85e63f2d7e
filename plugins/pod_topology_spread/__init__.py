"""PodTopologySpread: topology spread constraints, hard (PreFilter, Filter) and soft (PreScore, Score)."""

from netsched.plugins.pod_topology_spread.args import PodTopologySpreadArgs
from netsched.plugins.pod_topology_spread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread", "PodTopologySpreadArgs"]
