"""NodePorts pre-filter/filter plugin."""

from netsched.plugins.node_ports.plugin import NodePorts

__all__ = ["NodePorts"]
