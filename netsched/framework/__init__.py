"""The plugin contract, from one import: `from netsched.framework import ScorePlugin, Status, ...`.

This package is a face: everything a plugin author needs is exported here, and
a plugin imports it from here, never from the modules behind it (checked by
tests/unit/test_import_graph.py).  That is the extension-point base classes and
their result types, Status/Code, the cycle state, the parsed pod and node
records and the selectors inside them, the well-known node labels (hostname,
zone), quantity helpers, the raw-JSON readers a plugin needs for objects it
parses itself, the snapshot's node table and the pod index over it, the typed
args reader, the Handle and the errors its API raises with the keys of the kinds
it patches, plus the registry (`with_plugin`).  Metric plugins also import
`netsched.metrics.plugin_api`, the metrics pipeline's face.
The modules behind it:

- extension_points: PluginArgs, the Plugin base, one base class per extension point
- seams: the Handle and what it serves (ClusterAPI, EventRecorder, MetricsProvider, ...)
- diagnosis: the filters' Rejections and the Diagnosis of a pod that fits nowhere
- disruption: PodDisruptionBudgets as kube keeps them, and what an eviction (ClusterAPI.evict)
  comes to (EvictionOutcome)
- cluster_events: the events and queueing hints a plugin registers; errors: the faults
- status, cycle_state, types (PodInfo/NodeInfo), selectors, quantity, parse
- snapshot: the NumPy node table a cycle sees (IntArray rows, BoolArray masks);
  pod_index: the pods on it by workload; workload: a pod's workload as a mesh names it
- fields: the field-path error list and typed reader shared with config
- runtime (Framework: builds a profile, runs the extension points),
  search (NodeSearch: finds a node for a pod), handle, instrument, waiting,
  registry

Modules inside the package import each other directly, never this facade.
"""

from netsched.clock import Clock
from netsched.framework import names
from netsched.framework.cluster_events import (
    ASSIGNED_POD,
    ASSIGNED_POD_DELETE,
    METRICS_POLLED,
    METRICS_POLLED_EVENT,
    NODE,
    UNSCHEDULED_POD,
    UNSCHEDULED_POD_ADD,
    WILDCARD,
    WILDCARD_EVENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
)
from netsched.framework.cycle_state import CycleState, Explainable
from netsched.framework.diagnosis import Diagnosis, Rejection
from netsched.framework.disruption import Budget, BudgetPod, EvictionOutcome, EvictionResult, pod_ready
from netsched.framework.errors import FrameworkBuildError, PluginArgsError, PluginError, PluginFault
from netsched.framework.extension_points import (
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    AnyArgs,
    AnyPlugin,
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PluginArgs,
    PluginFactory,
    PluginScores,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    extension_points_of,
)
from netsched.framework.fields import ErrorList, FieldError, Fields, join
from netsched.framework.normalize import default_normalize_score
from netsched.framework.parse import PodParseError, parse_label_selector, parse_node_selector
from netsched.framework.pod_index import LabelCodes, LookalikePods, PodIndex, label_codes, synced_pod_index
from netsched.framework.quantity import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    QuantityError,
    format_canonical,
    parse_quantity,
    to_canonical,
)
from netsched.framework.registry import Registry, RegistryError, with_plugin
from netsched.framework.seams import (
    ClusterAPI,
    EventRecorder,
    Handle,
    LabelledCounter,
    LabelledGauge,
    MetricsProvider,
    ObjectReader,
    PluginMetrics,
    PodIndexer,
    WaitingPod,
)
from netsched.framework.selectors import (
    DNS1123_SUBDOMAIN,
    QUALIFIED_NAME_PART,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    Requirement,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
    label_key_errors,
)
from netsched.framework.shared import ServiceKey
from netsched.framework.snapshot import BoolArray, FloatArray, IntArray, Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import (
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    HostPort,
    NodeInfo,
    ObjectRef,
    PodInfo,
    QueuedPodInfo,
    Taint,
    Toleration,
)
from netsched.framework.workload import workload_key, workload_name

# What handle.api raises, and the keys of the kinds a plugin patches through it.
from netsched.kube.errors import ApiError, Conflict, NotFound
from netsched.kube.resources import CONFIGMAPS, PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, PODGROUPS, Resource

# The one retry policy (netsched.retry), for a plugin's own writes off the scheduling cycle.
from netsched.retry import policy as retry_policy
from netsched.retry import stop_when

__all__ = [
    "ASSIGNED_POD",
    "ASSIGNED_POD_DELETE",
    "ActionType",
    "AnyArgs",
    "AnyPlugin",
    "ApiError",
    "BindPlugin",
    "BoolArray",
    "CONFIGMAPS",
    "CPU",
    "Clock",
    "ClusterAPI",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "Conflict",
    "CycleState",
    "Budget",
    "BudgetPod",
    "Diagnosis",
    "EPHEMERAL_STORAGE",
    "EXTENSION_POINTS",
    "ErrorList",
    "EvictionOutcome",
    "EvictionResult",
    "EventRecorder",
    "FieldError",
    "Fields",
    "FilterPlugin",
    "FrameworkBuildError",
    "Handle",
    "HostPort",
    "FloatArray",
    "IntArray",
    "LABEL_HOSTNAME",
    "LABEL_TOPOLOGY_ZONE",
    "LabelCodes",
    "LabelSelector",
    "LookalikePods",
    "MAX_NODE_SCORE",
    "MEMORY",
    "METRICS_POLLED",
    "METRICS_POLLED_EVENT",
    "MIN_NODE_SCORE",
    "MetricsProvider",
    "NODE",
    "NodeInfo",
    "NodeSelector",
    "NodeSelectorTerm",
    "NotFound",
    "PERSISTENTVOLUMECLAIMS",
    "PERSISTENTVOLUMES",
    "PODGROUPS",
    "PODS",
    "PermitPlugin",
    "Plugin",
    "PluginArgs",
    "PluginArgsError",
    "PluginError",
    "PluginFactory",
    "PluginFault",
    "PluginScores",
    "PodAffinityTerm",
    "PodIndex",
    "PodInfo",
    "PodParseError",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "PreferredSchedulingTerm",
    "QuantityError",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "QueueingHintFn",
    "Registry",
    "RegistryError",
    "Rejection",
    "Requirement",
    "ReservePlugin",
    "Resource",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "UNSCHEDULED_POD",
    "UNSCHEDULED_POD_ADD",
    "WILDCARD",
    "WILDCARD_EVENT",
    "WaitingPod",
    "WeightedPodAffinityTerm",
    "default_normalize_score",
    "extension_points_of",
    "format_canonical",
    "join",
    "label_codes",
    "names",
    "pod_ready",
    "parse_label_selector",
    "parse_node_selector",
    "parse_quantity",
    "synced_pod_index",
    "workload_key",
    "workload_name",
    "to_canonical",
    "with_plugin",
    "label_key_errors",
    "DNS1123_SUBDOMAIN",
    "QUALIFIED_NAME_PART",
    "Explainable",
    "LabelledCounter",
    "LabelledGauge",
    "ObjectReader",
    "ObjectRef",
    "PluginMetrics",
    "PodIndexer",
    "ServiceKey",
    "retry_policy",
    "stop_when",
]
