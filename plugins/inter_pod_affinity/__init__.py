"""InterPodAffinity: required and preferred pod affinity / anti-affinity (PreFilter, Filter, PreScore, Score)."""

from .args import InterPodAffinityArgs
from .plugin import InterPodAffinity

__all__ = ["InterPodAffinity", "InterPodAffinityArgs"]
