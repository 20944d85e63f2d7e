"""The in-tree plugins: one line each.  Out-of-tree plugins join with
`netsched.main(netsched.with_plugin(MyPlugin))` and are merged in app.build_registry."""

from __future__ import annotations

from netsched.framework import PluginFactory


def in_tree_plugins() -> list[PluginFactory]:
    from .check_pod_count_limit import CheckPodCountLimit
    from .check_pod_limit_resources import CheckPodLimitResources
    from .coscheduling import Coscheduling
    from .default_binder import DefaultBinder
    from .default_preemption import DefaultPreemption
    from .gang_topology import GangTopology
    from .image_locality import ImageLocality
    from .inter_pod_affinity import InterPodAffinity
    from .load_aware import LoadAware
    from .load_threshold import LoadThreshold
    from .lvm_volume_capacity import LvmVolumeCapacity
    from .network_traffic import NetworkTraffic
    from .node_affinity import NodeAffinity
    from .node_name import NodeName
    from .node_ports import NodePorts
    from .node_unschedulable import NodeUnschedulable
    from .node_volume_limits import NodeVolumeLimits
    from .noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
    from .pod_topology_spread import PodTopologySpread
    from .priority_sort import PrioritySort
    from .rebalancer import Rebalancer
    from .scheduling_gates import SchedulingGates
    from .taint_toleration import TaintToleration
    from .traffic_affinity import TrafficAffinity
    from .volume_binding import CheckCSIStorageCapacity, VolumeBinding
    from .volume_restrictions import VolumeRestrictions
    from .volume_zone import VolumeZone

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
        Rebalancer,  # moves running pods off hot nodes and next to their peers (evictions)
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
