"""NodeUnschedulable filter plugin."""

from .plugin import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
