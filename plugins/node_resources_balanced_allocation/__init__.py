"""NodeResourcesBalancedAllocation pre-score/score plugin."""

from netsched.plugins.node_resources_balanced_allocation.args import NodeResourcesBalancedAllocationArgs
from netsched.plugins.node_resources_balanced_allocation.plugin import NodeResourcesBalancedAllocation

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesBalancedAllocationArgs"]
