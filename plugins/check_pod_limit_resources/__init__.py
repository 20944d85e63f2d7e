"""CheckPodLimitResources filter plugin (a seed example made in-tree)."""

from netsched.plugins.check_pod_limit_resources.args import CheckPodLimitResourcesArgs
from netsched.plugins.check_pod_limit_resources.plugin import CheckPodLimitResources

__all__ = ["CheckPodLimitResources", "CheckPodLimitResourcesArgs"]
