"""What operators see of the scheduler itself: its own metrics and HTTP endpoints."""

from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.server import ObservabilityServer, parse_bind_address

__all__ = ["ObservabilityServer", "SchedulerMetrics", "parse_bind_address"]
