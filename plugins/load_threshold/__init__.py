"""LoadThreshold: filter out nodes whose measured utilisation is above a limit."""

from plugins.load_threshold.args import LoadThresholdArgs
from plugins.load_threshold.plugin import LoadThreshold

__all__ = ["LoadThreshold", "LoadThresholdArgs"]
