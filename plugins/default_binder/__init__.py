"""DefaultBinder bind plugin."""

from plugins.default_binder.plugin import DefaultBinder

__all__ = ["DefaultBinder"]
