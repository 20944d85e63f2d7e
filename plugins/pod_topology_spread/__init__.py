"""PodTopologySpread: topology spread constraints, hard (PreFilter, Filter) and soft (PreScore, Score)."""

from .args import PodTopologySpreadArgs
from .plugin import PodTopologySpread

__all__ = ["PodTopologySpread", "PodTopologySpreadArgs"]
