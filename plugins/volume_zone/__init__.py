"""VolumeZone: zone and region labels of a pod's bound PVs against the node's."""

from netsched.plugins.volume_zone.plugin import VolumeZone

__all__ = ["VolumeZone"]
