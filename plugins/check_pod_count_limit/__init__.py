"""CheckPodCountLimit filter plugin (a seed example made in-tree)."""

from .args import CheckPodCountLimitArgs
from .plugin import CheckPodCountLimit

__all__ = ["CheckPodCountLimit", "CheckPodCountLimitArgs"]
