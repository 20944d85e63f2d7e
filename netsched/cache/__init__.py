"""Cluster state from list+watch, assumed pods, and the per-cycle snapshot."""

from netsched.cache.cache import DEFAULT_ASSUMED_TTL, ClusterCache

__all__ = ["DEFAULT_ASSUMED_TTL", "ClusterCache"]
