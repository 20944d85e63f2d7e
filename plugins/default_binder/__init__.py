"""DefaultBinder bind plugin."""

from netsched.plugins.default_binder.plugin import DefaultBinder

__all__ = ["DefaultBinder"]
