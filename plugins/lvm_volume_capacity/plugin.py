"""LvmVolumeCapacity: refused on purpose, with a message saying how to bring your own.

The seed articles enable `LvmVolumeCapacity` at filter.  It is a storage
vendor's plugin (local LVM volumes, e.g. open-local's scheduler extension):
what counts as "free" in a volume group, which StorageClasses and inline
volumes draw from it, and how capacity is reserved between scheduling and
provisioning are that CSI driver's rules, not kube's.  A look-alike guessing
them would place pods whose volumes then fail to provision, so netsched
refuses the name loudly instead.  The class is registered only so a profile
naming it fails at start-up with this message (not "unsupported value"), and
it is `replaceable`: an out-of-tree plugin named LvmVolumeCapacity, registered
with `netsched.main(netsched.with_plugin(MyLvmVolumeCapacity))`, takes its place.
"""

from __future__ import annotations

from typing import ClassVar

from netsched.framework import CycleState, FilterPlugin, Handle, NodeInfo, PodInfo, Status

NAME = "LvmVolumeCapacity"
REFUSAL = (
    "LvmVolumeCapacity is a storage vendor's plugin (LVM volume-group capacity of a local-volume CSI "
    "driver) and is not included in netsched. To use it, write it out of tree as a FilterPlugin named "
    "LvmVolumeCapacity (reading your driver's capacity, e.g. its CSIStorageCapacity objects) and start "
    "netsched with netsched.main(netsched.with_plugin(LvmVolumeCapacity)); or remove it from the profile. "
    "See plugins/lvm_volume_capacity/README.md"
)


class LvmVolumeCapacity(FilterPlugin[None]):
    name = NAME
    replaceable: ClassVar[bool] = True

    def __init__(self, args: None, handle: Handle) -> None:
        raise NotImplementedError(REFUSAL)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:  # pragma: no cover
        raise NotImplementedError(REFUSAL)
