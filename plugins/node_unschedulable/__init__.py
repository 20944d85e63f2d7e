"""NodeUnschedulable filter plugin."""

from netsched.plugins.node_unschedulable.plugin import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
