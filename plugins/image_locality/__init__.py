"""ImageLocality score plugin."""

from plugins.image_locality.plugin import ImageLocality

__all__ = ["ImageLocality"]
