"""VolumeBinding: kube's PersistentVolumeClaim binding (PreFilter, Filter, Reserve, PreBind)."""

from .args import VolumeBindingArgs
from .capacity import CheckCSIStorageCapacity
from .plugin import VolumeBinding

__all__ = ["CheckCSIStorageCapacity", "VolumeBinding", "VolumeBindingArgs"]
