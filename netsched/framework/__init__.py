"""The plugin contract, from one import: `from netsched.framework import ScorePlugin, Status, ...`.

Everything a plugin author needs is here: the extension-point base classes and
their result types, Status/Code, the cycle state, the parsed pod and node
records, the snapshot's node table, the typed args reader and the Handle, plus
the registry (`with_plugin`).  The modules behind it:

- interfaces: extension points, PluginArgs, Diagnosis, the Handle protocol
- status, cycle_state, types (PodInfo/NodeInfo), selectors, quantity, parse
- snapshot: the NumPy node table a cycle sees
- fields: the field-path error list and typed reader shared with config
- runtime (Framework: builds a profile, runs the extension points),
  search (NodeSearch: finds a node for a pod), handle, instrument, waiting,
  registry

Modules inside the package import each other directly, never this facade.
"""

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, FieldError, Fields, join
from netsched.framework.interfaces import (
    ASSIGNED_POD,
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    METRICS_POLLED,
    METRICS_POLLED_EVENT,
    MIN_NODE_SCORE,
    NODE,
    WILDCARD,
    WILDCARD_EVENT,
    ActionType,
    BindPlugin,
    BoolArray,
    Clock,
    ClusterAPI,
    ClusterEvent,
    ClusterEventWithHint,
    Diagnosis,
    EventRecorder,
    FilterPlugin,
    FrameworkBuildError,
    Handle,
    IntArray,
    MetricsProvider,
    PermitPlugin,
    Plugin,
    PluginArgs,
    PluginError,
    PluginFault,
    PluginScores,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    QueueingHintFn,
    QueueSortPlugin,
    Rejection,
    ReservePlugin,
    ScorePlugin,
    WaitingPod,
    extension_points_of,
)
from netsched.framework.normalize import default_normalize_score
from netsched.framework.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from netsched.framework.registry import Registry, RegistryError, with_plugin
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo, QueuedPodInfo, Taint, Toleration

__all__ = [
    "ASSIGNED_POD",
    "METRICS_POLLED",
    "METRICS_POLLED_EVENT",
    "NODE",
    "WILDCARD",
    "WILDCARD_EVENT",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "QueueingHint",
    "QueueingHintFn",
    "CPU",
    "EPHEMERAL_STORAGE",
    "EXTENSION_POINTS",
    "MAX_NODE_SCORE",
    "MEMORY",
    "MIN_NODE_SCORE",
    "PODS",
    "BindPlugin",
    "BoolArray",
    "Clock",
    "ClusterAPI",
    "Code",
    "CycleState",
    "Diagnosis",
    "ErrorList",
    "EventRecorder",
    "FieldError",
    "Fields",
    "FilterPlugin",
    "FrameworkBuildError",
    "Handle",
    "IntArray",
    "MetricsProvider",
    "NodeInfo",
    "PermitPlugin",
    "Plugin",
    "PluginArgs",
    "PluginError",
    "PluginFault",
    "PluginScores",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "Registry",
    "RegistryError",
    "Rejection",
    "ReservePlugin",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "Taint",
    "Toleration",
    "WaitingPod",
    "default_normalize_score",
    "extension_points_of",
    "join",
    "with_plugin",
]
