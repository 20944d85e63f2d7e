"""VolumeZone: zone and region labels of a pod's bound PVs against the node's."""

from .plugin import VolumeZone

__all__ = ["VolumeZone"]
