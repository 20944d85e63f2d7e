"""NodeName filter plugin."""

from .plugin import NodeName

__all__ = ["NodeName"]
