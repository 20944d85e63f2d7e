"""DefaultPreemption: evict lower-priority pods so a pod that fits nowhere can run (PostFilter)."""

from .args import DefaultPreemptionArgs
from .plugin import DefaultPreemption

__all__ = ["DefaultPreemption", "DefaultPreemptionArgs"]
