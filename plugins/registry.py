"""The in-tree plugins: one line each.  Out-of-tree plugins join with
`netsched.main(netsched.with_plugin(MyPlugin))` and are merged in app.build_registry."""

from __future__ import annotations

from netsched.framework import Plugin


def in_tree_plugins() -> list[type[Plugin]]:
    from plugins.check_pod_count_limit import CheckPodCountLimit
    from plugins.check_pod_limit_resources import CheckPodLimitResources
    from plugins.coscheduling import Coscheduling
    from plugins.default_binder import DefaultBinder
    from plugins.default_preemption import DefaultPreemption
    from plugins.gang_topology import GangTopology
    from plugins.image_locality import ImageLocality
    from plugins.inter_pod_affinity import InterPodAffinity
    from plugins.load_aware import LoadAware
    from plugins.load_threshold import LoadThreshold
    from plugins.lvm_volume_capacity import LvmVolumeCapacity
    from plugins.network_traffic import NetworkTraffic
    from plugins.node_affinity import NodeAffinity
    from plugins.node_name import NodeName
    from plugins.node_ports import NodePorts
    from plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
    from plugins.node_resources_fit import NodeResourcesFit
    from plugins.node_unschedulable import NodeUnschedulable
    from plugins.node_volume_limits import NodeVolumeLimits
    from plugins.pod_topology_spread import PodTopologySpread
    from plugins.priority_sort import PrioritySort
    from plugins.scheduling_gates import SchedulingGates
    from plugins.taint_toleration import TaintToleration
    from plugins.volume_binding import CheckCSIStorageCapacity, VolumeBinding
    from plugins.volume_restrictions import VolumeRestrictions
    from plugins.volume_zone import VolumeZone

    return [
        PrioritySort,
        SchedulingGates,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodePorts,
        NodeResourcesFit,
        VolumeRestrictions,
        NodeVolumeLimits,
        VolumeBinding,
        VolumeZone,
        PodTopologySpread,
        InterPodAffinity,
        DefaultPreemption,
        NodeResourcesBalancedAllocation,
        ImageLocality,
        DefaultBinder,
        # netsched's load-aware plugins (not in the default set: enable them in the profile).
        NetworkTraffic,
        LoadAware,
        LoadThreshold,
        # Gang scheduling over PodGroups (scheduler-plugins' Coscheduling).
        Coscheduling,
        GangTopology,
        # The seed articles' example filters, in-tree (not in the default set).
        CheckPodCountLimit,
        CheckPodLimitResources,
        LvmVolumeCapacity,  # a refusal: an out-of-tree plugin of this name replaces it
        # The seeds' name for VolumeBinding's storage-capacity check (plugins/volume_binding/capacity.py).
        CheckCSIStorageCapacity,
    ]
