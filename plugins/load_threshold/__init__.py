"""LoadThreshold: filter out nodes whose measured utilisation is above a limit."""

from .args import LoadThresholdArgs
from .plugin import LoadThreshold

__all__ = ["LoadThreshold", "LoadThresholdArgs"]
