"""NetworkTraffic: prefer nodes whose network links are least busy."""

from .args import NetworkTrafficArgs
from .plugin import NetworkTraffic

__all__ = ["NetworkTraffic", "NetworkTrafficArgs"]
