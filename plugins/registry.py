"""The in-tree plugins: one line each.  Out-of-tree plugins join with
`netsched.main(netsched.with_plugin(MyPlugin))` and are merged in app.build_registry."""

from __future__ import annotations

from netsched.framework import PluginFactory


def in_tree_plugins() -> list[PluginFactory]:
    from netsched.plugins.check_pod_count_limit import CheckPodCountLimit
    from netsched.plugins.check_pod_limit_resources import CheckPodLimitResources
    from netsched.plugins.coscheduling import Coscheduling
    from netsched.plugins.default_binder import DefaultBinder
    from netsched.plugins.default_preemption import DefaultPreemption
    from netsched.plugins.gang_topology import GangTopology
    from netsched.plugins.image_locality import ImageLocality
    from netsched.plugins.inter_pod_affinity import InterPodAffinity
    from netsched.plugins.load_aware import LoadAware
    from netsched.plugins.load_threshold import LoadThreshold
    from netsched.plugins.lvm_volume_capacity import LvmVolumeCapacity
    from netsched.plugins.network_traffic import NetworkTraffic
    from netsched.plugins.node_affinity import NodeAffinity
    from netsched.plugins.node_name import NodeName
    from netsched.plugins.node_ports import NodePorts
    from netsched.plugins.node_unschedulable import NodeUnschedulable
    from netsched.plugins.node_volume_limits import NodeVolumeLimits
    from netsched.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
    from netsched.plugins.pod_topology_spread import PodTopologySpread
    from netsched.plugins.priority_sort import PrioritySort
    from netsched.plugins.scheduling_gates import SchedulingGates
    from netsched.plugins.taint_toleration import TaintToleration
    from netsched.plugins.traffic_affinity import TrafficAffinity
    from netsched.plugins.volume_binding import CheckCSIStorageCapacity, VolumeBinding
    from netsched.plugins.volume_restrictions import VolumeRestrictions
    from netsched.plugins.volume_zone import VolumeZone

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
        TrafficAffinity,  # co-locates workloads that talk (the measured traffic graph)
        # Gang scheduling over PodGroups (scheduler-plugins' Coscheduling).
        Coscheduling,
        GangTopology,
        # The seed articles' example filters, in-tree (not in the default set).
        CheckPodCountLimit,
        CheckPodLimitResources,
        LvmVolumeCapacity,  # TopoLVM's free space; an out-of-tree plugin of this name replaces it
        # The seeds' name for VolumeBinding's storage-capacity check (plugins/volume_binding/capacity.py).
        CheckCSIStorageCapacity,
    ]
