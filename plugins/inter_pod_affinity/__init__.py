"""InterPodAffinity: required and preferred pod affinity / anti-affinity (PreFilter, Filter, PreScore, Score)."""

from plugins.inter_pod_affinity.args import InterPodAffinityArgs
from plugins.inter_pod_affinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity", "InterPodAffinityArgs"]
