"""What operators see of the scheduler itself: its own metrics and HTTP endpoints."""

from netsched.observability.metrics import SchedulerMetrics

__all__ = ["SchedulerMetrics"]
