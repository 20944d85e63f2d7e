"""LvmVolumeCapacity: free space in the nodes' LVM volume groups (TopoLVM) for a pod's new volumes."""

from .args import TOPOLVM_PROVISIONERS, LvmVolumeCapacityArgs
from .plugin import LvmVolumeCapacity

__all__ = ["TOPOLVM_PROVISIONERS", "LvmVolumeCapacity", "LvmVolumeCapacityArgs"]
