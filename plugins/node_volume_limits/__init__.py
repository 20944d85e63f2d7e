"""NodeVolumeLimits: CSI attach limits per driver from CSINode allocatable counts."""

from netsched.plugins.node_volume_limits.plugin import NodeVolumeLimits

__all__ = ["NodeVolumeLimits"]
