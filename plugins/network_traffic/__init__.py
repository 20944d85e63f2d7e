"""NetworkTraffic: prefer nodes whose network links are least busy."""

from netsched.plugins.network_traffic.args import NetworkTrafficArgs
from netsched.plugins.network_traffic.plugin import NetworkTraffic

__all__ = ["NetworkTraffic", "NetworkTrafficArgs"]
