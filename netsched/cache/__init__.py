"""Cluster state from list+watch, assumed pods, the per-cycle snapshot, and the other watched objects."""

from netsched.cache.cache import DEFAULT_ASSUMED_TTL, ClusterCache, PodInCache
from netsched.cache.objects import ObjectStore

__all__ = ["DEFAULT_ASSUMED_TTL", "ClusterCache", "ObjectStore", "PodInCache"]
