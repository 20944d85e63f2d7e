"""NodeResourcesFit and NodeResourcesBalancedAllocation: one folder, as kube's plugins/noderesources.

Both read a pod's requests and a node's free resources the same way
(resources.py); each is registered and configured under its own kube name.
fit.py and scoring.py are NodeResourcesFit (its filter and its scoring
strategies), balanced_allocation.py is NodeResourcesBalancedAllocation, and
args.py holds both args types.
"""

from .args import NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs
from .balanced_allocation import NodeResourcesBalancedAllocation
from .fit import NodeResourcesFit

__all__ = [
    "NodeResourcesBalancedAllocation",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
]
