"""NetworkTraffic: prefer nodes whose network links are least busy."""

from plugins.network_traffic.args import NetworkTrafficArgs
from plugins.network_traffic.plugin import NetworkTraffic

__all__ = ["NetworkTraffic", "NetworkTrafficArgs"]
