"""GangTopology: place a gang's pods close together (same zone / rack) and on cold links."""

from .args import GangTopologyArgs
from .plugin import GangTopology

__all__ = ["GangTopology", "GangTopologyArgs"]
