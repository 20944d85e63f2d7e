"""ImageLocality score plugin."""

from .plugin import ImageLocality

__all__ = ["ImageLocality"]
