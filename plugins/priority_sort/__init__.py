"""PrioritySort queue-sort plugin."""

from .plugin import PrioritySort

__all__ = ["PrioritySort"]
