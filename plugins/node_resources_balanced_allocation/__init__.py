"""NodeResourcesBalancedAllocation pre-score/score plugin."""

from plugins.node_resources_balanced_allocation.args import NodeResourcesBalancedAllocationArgs
from plugins.node_resources_balanced_allocation.plugin import NodeResourcesBalancedAllocation

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesBalancedAllocationArgs"]
