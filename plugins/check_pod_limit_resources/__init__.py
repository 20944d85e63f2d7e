"""CheckPodLimitResources filter plugin (a seed example made in-tree)."""

from .args import CheckPodLimitResourcesArgs
from .plugin import CheckPodLimitResources

__all__ = ["CheckPodLimitResources", "CheckPodLimitResourcesArgs"]
