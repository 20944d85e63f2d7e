"""InterPodAffinity: required and preferred pod affinity / anti-affinity (PreFilter, Filter, PreScore, Score)."""

from netsched.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from netsched.plugins.inter_pod_affinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity", "InterPodAffinityArgs"]
