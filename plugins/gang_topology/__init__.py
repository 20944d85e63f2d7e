"""GangTopology: place a gang's pods close together (same zone / rack) and on cold links."""

from netsched.plugins.gang_topology.args import GangTopologyArgs
from netsched.plugins.gang_topology.plugin import GangTopology

__all__ = ["GangTopology", "GangTopologyArgs"]
