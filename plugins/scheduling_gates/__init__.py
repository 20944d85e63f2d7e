"""SchedulingGates pre-enqueue plugin."""

from .plugin import SchedulingGates

__all__ = ["SchedulingGates"]
