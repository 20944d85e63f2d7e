"""NodeName filter plugin."""

from netsched.plugins.node_name.plugin import NodeName

__all__ = ["NodeName"]
