"""TrafficAffinity: prefer nodes close to the pods the pod's workload talks to."""

from netsched.plugins.traffic_affinity.args import TrafficAffinityArgs
from netsched.plugins.traffic_affinity.plugin import TrafficAffinity

__all__ = ["TrafficAffinity", "TrafficAffinityArgs"]
