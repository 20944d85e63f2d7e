"""PrioritySort queue-sort plugin."""

from plugins.priority_sort.plugin import PrioritySort

__all__ = ["PrioritySort"]
