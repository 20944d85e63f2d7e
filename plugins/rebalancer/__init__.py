from .args import RebalancerArgs
from .plugin import Rebalancer

__all__ = ["Rebalancer", "RebalancerArgs"]
