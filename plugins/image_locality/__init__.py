"""ImageLocality score plugin."""

from netsched.plugins.image_locality.plugin import ImageLocality

__all__ = ["ImageLocality"]
