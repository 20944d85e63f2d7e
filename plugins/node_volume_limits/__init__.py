"""NodeVolumeLimits: CSI attach limits per driver from CSINode allocatable counts."""

from .plugin import NodeVolumeLimits

__all__ = ["NodeVolumeLimits"]
