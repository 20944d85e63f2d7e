"""VolumeBinding: kube's PersistentVolumeClaim binding (PreFilter, Filter, Reserve, PreBind)."""

from netsched.plugins.volume_binding.args import VolumeBindingArgs
from netsched.plugins.volume_binding.capacity import CheckCSIStorageCapacity
from netsched.plugins.volume_binding.plugin import VolumeBinding

__all__ = ["CheckCSIStorageCapacity", "VolumeBinding", "VolumeBindingArgs"]
