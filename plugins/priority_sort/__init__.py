"""PrioritySort queue-sort plugin."""

from netsched.plugins.priority_sort.plugin import PrioritySort

__all__ = ["PrioritySort"]
