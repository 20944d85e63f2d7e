"""DefaultBinder bind plugin."""

from .plugin import DefaultBinder

__all__ = ["DefaultBinder"]
