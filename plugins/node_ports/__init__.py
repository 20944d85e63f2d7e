"""NodePorts pre-filter/filter plugin."""

from plugins.node_ports.plugin import NodePorts

__all__ = ["NodePorts"]
