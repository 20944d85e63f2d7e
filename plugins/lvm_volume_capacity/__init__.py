"""LvmVolumeCapacity: a refusal standing in for a vendor plugin netsched does not ship."""

from netsched.plugins.lvm_volume_capacity.plugin import REFUSAL, LvmVolumeCapacity

__all__ = ["REFUSAL", "LvmVolumeCapacity"]
