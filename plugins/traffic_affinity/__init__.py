"""TrafficAffinity: prefer nodes close to the pods the pod's workload talks to."""

from .args import TrafficAffinityArgs
from .plugin import TrafficAffinity

__all__ = ["TrafficAffinity", "TrafficAffinityArgs"]
