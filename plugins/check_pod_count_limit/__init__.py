"""CheckPodCountLimit filter plugin (a seed example made in-tree)."""

from netsched.plugins.check_pod_count_limit.args import CheckPodCountLimitArgs
from netsched.plugins.check_pod_count_limit.plugin import CheckPodCountLimit

__all__ = ["CheckPodCountLimit", "CheckPodCountLimitArgs"]
