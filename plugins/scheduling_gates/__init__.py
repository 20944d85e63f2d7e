"""SchedulingGates pre-enqueue plugin."""

from netsched.plugins.scheduling_gates.plugin import SchedulingGates

__all__ = ["SchedulingGates"]
