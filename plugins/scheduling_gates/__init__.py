"""SchedulingGates pre-enqueue plugin."""

from plugins.scheduling_gates.plugin import SchedulingGates

__all__ = ["SchedulingGates"]
