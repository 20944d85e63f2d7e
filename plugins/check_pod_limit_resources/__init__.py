"""CheckPodLimitResources filter plugin (a seed example made in-tree)."""

from plugins.check_pod_limit_resources.args import CheckPodLimitResourcesArgs
from plugins.check_pod_limit_resources.plugin import CheckPodLimitResources

__all__ = ["CheckPodLimitResources", "CheckPodLimitResourcesArgs"]
