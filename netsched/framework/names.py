"""The names of the in-tree plugins, as kube keeps them in framework/plugins/names.

Each in-tree plugin's `name` is its constant here, and the configuration's
default plugin set (netsched/config/defaults.py) reads the same constants, so
neither repeats a string and the config never imports plugin code (only the
composition root imports netsched.plugins).  Constants only: importing this
costs nothing.  tests/unit/test_plugin_names.py checks that every constant is
an in-tree plugin's name and every in-tree plugin has one.
"""

from __future__ import annotations

from typing import Final

# kube-scheduler's plugins (v1.31 names.go), in kube's default order where they are defaults.
SCHEDULING_GATES: Final = "SchedulingGates"
PRIORITY_SORT: Final = "PrioritySort"
NODE_UNSCHEDULABLE: Final = "NodeUnschedulable"
NODE_NAME: Final = "NodeName"
TAINT_TOLERATION: Final = "TaintToleration"
NODE_AFFINITY: Final = "NodeAffinity"
NODE_PORTS: Final = "NodePorts"
NODE_RESOURCES_FIT: Final = "NodeResourcesFit"
VOLUME_RESTRICTIONS: Final = "VolumeRestrictions"
NODE_VOLUME_LIMITS: Final = "NodeVolumeLimits"
VOLUME_BINDING: Final = "VolumeBinding"
VOLUME_ZONE: Final = "VolumeZone"
POD_TOPOLOGY_SPREAD: Final = "PodTopologySpread"
INTER_POD_AFFINITY: Final = "InterPodAffinity"
DEFAULT_PREEMPTION: Final = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION: Final = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY: Final = "ImageLocality"
DEFAULT_BINDER: Final = "DefaultBinder"

# netsched's load-aware plugins.
NETWORK_TRAFFIC: Final = "NetworkTraffic"
LOAD_AWARE: Final = "LoadAware"
LOAD_THRESHOLD: Final = "LoadThreshold"

# Gang scheduling over PodGroups (scheduler-plugins' Coscheduling) and its topology score.
COSCHEDULING: Final = "Coscheduling"
GANG_TOPOLOGY: Final = "GangTopology"

# Co-location of workloads that talk to each other (the measured traffic graph).
TRAFFIC_AFFINITY: Final = "TrafficAffinity"

# Moves running pods off hot nodes and next to their peers, planned with the profile itself.
REBALANCER: Final = "Rebalancer"

# The seed articles' plugins.
CHECK_POD_COUNT_LIMIT: Final = "CheckPodCountLimit"
CHECK_POD_LIMIT_RESOURCES: Final = "CheckPodLimitResources"
LVM_VOLUME_CAPACITY: Final = "LvmVolumeCapacity"
CHECK_CSI_STORAGE_CAPACITY: Final = "CheckCSIStorageCapacity"
