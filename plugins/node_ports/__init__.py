"""NodePorts pre-filter/filter plugin."""

from .plugin import NodePorts

__all__ = ["NodePorts"]
