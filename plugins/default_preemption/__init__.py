"""DefaultPreemption: evict lower-priority pods so a pod that fits nowhere can run (PostFilter)."""

from netsched.plugins.default_preemption.args import DefaultPreemptionArgs
from netsched.plugins.default_preemption.plugin import DefaultPreemption

__all__ = ["DefaultPreemption", "DefaultPreemptionArgs"]
