"""Shared storage objects for the volume plugins (not a plugin itself).

VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits,
CheckCSIStorageCapacity and LvmVolumeCapacity read the same kinds
(PersistentVolumes, claims, StorageClasses and the CSI objects) from Handle.objects.  They are parsed here,
once per stored object, into small records; a malformed object raises
VolumeObjectError naming the object and the field, which the plugins turn into
an Event on the pod instead of a crash.
"""

from .objects import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    CSIDRIVERS_KEY,
    CSINODES_KEY,
    CSISTORAGECAPACITIES_KEY,
    NO_PROVISIONER,
    PVCS_KEY,
    PVS_KEY,
    STORAGECLASSES_KEY,
    WAIT_FOR_FIRST_CONSUMER,
    Capacity,
    Claim,
    ClaimRef,
    CSIDriverInfo,
    CSINodeInfo,
    StorageClassInfo,
    Volume,
    VolumeObjectError,
    csi_attach_limit_key,
    parse_capacity,
    parse_claim,
    parse_csi_driver,
    parse_csi_node,
    parse_storage_class,
    parse_volume,
)
from .pod import PodClaim, pod_claims, pod_has_claims
from .reader import VolumeReader
from .report import report_bad_object

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_SELECTED_NODE",
    "CSIDRIVERS_KEY",
    "CSINODES_KEY",
    "CSISTORAGECAPACITIES_KEY",
    "NO_PROVISIONER",
    "PVCS_KEY",
    "PVS_KEY",
    "STORAGECLASSES_KEY",
    "WAIT_FOR_FIRST_CONSUMER",
    "CSIDriverInfo",
    "CSINodeInfo",
    "Capacity",
    "Claim",
    "ClaimRef",
    "PodClaim",
    "StorageClassInfo",
    "Volume",
    "VolumeObjectError",
    "VolumeReader",
    "csi_attach_limit_key",
    "parse_capacity",
    "parse_claim",
    "parse_csi_driver",
    "parse_csi_node",
    "parse_storage_class",
    "parse_volume",
    "pod_claims",
    "pod_has_claims",
    "report_bad_object",
]
