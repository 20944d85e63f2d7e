"""LvmVolumeCapacity: free space in the nodes' LVM volume groups (TopoLVM) for a pod's new volumes."""

from netsched.plugins.lvm_volume_capacity.args import TOPOLVM_PROVISIONERS, LvmVolumeCapacityArgs
from netsched.plugins.lvm_volume_capacity.plugin import LvmVolumeCapacity

__all__ = ["TOPOLVM_PROVISIONERS", "LvmVolumeCapacity", "LvmVolumeCapacityArgs"]
