"""LoadThreshold: filter out nodes whose measured utilisation is above a limit."""

from netsched.plugins.load_threshold.args import LoadThresholdArgs
from netsched.plugins.load_threshold.plugin import LoadThreshold

__all__ = ["LoadThreshold", "LoadThresholdArgs"]
