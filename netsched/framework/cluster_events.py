"""Cluster events and queueing hints: which changes may make a rejected pod schedulable.

A plugin that rejects a pod says which changes could undo that
(`events_to_register`, kube's EnqueueExtensions), optionally with a hint that
looks at the change itself; the queue moves a parked pod back to the active
queue only on an event one of its rejecting plugins registered for whose hint
answers QUEUE.  A module of its own because the queue and the event handlers
match events without needing the plugin classes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netsched.framework.types import PodInfo


class ActionType(enum.IntFlag):
    """What happened to an object (kube's framework.ActionType, v1.31); events match on any common bit.

    A node update is split by what changed, so a plugin can ignore changes it never
    looks at: a heartbeat (only timestamps and status fields no plugin reads) carries
    no bit at all and moves no pod.  Spec.unschedulable changes count as
    UPDATE_NODE_TAINT, as upstream.
    """

    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    UPDATE_NODE_LABEL = enum.auto()
    UPDATE_NODE_TAINT = enum.auto()
    UPDATE_NODE_CONDITION = enum.auto()
    UPDATE_NODE_ANNOTATION = enum.auto()
    UPDATE_POD_LABEL = enum.auto()
    UPDATE_POD_SCALE_DOWN = enum.auto()
    UPDATE_OTHER = enum.auto()  # an update of another kind of object (PDB, PVC, ...)
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


# Resources of ClusterEvent: NODE, ASSIGNED_POD (a pod bound to a node), UNSCHEDULED_POD (a
# pending pod of ours), METRICS_POLLED (new measurements in the shared metrics cache), the Kind
# of an OBJECT_KINDS entry ("PodDisruptionBudget", "PersistentVolumeClaim", ...), or WILDCARD.
NODE = "Node"
ASSIGNED_POD = "Pod"
UNSCHEDULED_POD = "UnscheduledPod"
METRICS_POLLED = "MetricsPolled"
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster that may make a rejected pod schedulable (kube's framework.ClusterEvent)."""

    resource: str
    action: ActionType
    label: str = ""  # for logs and the queue's metrics: "NodeAdd", "AssignedPodDelete", ...

    def match(self, event: ClusterEvent) -> bool:
        """A registered event (self) matches an event that happened."""
        if self.resource == WILDCARD and self.action == ActionType.ALL:
            return True
        return self.resource in (WILDCARD, event.resource) and bool(self.action & event.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action!r}"


# Any event at all: what a plugin without events_to_register() is registered for.
WILDCARD_EVENT = ClusterEvent(WILDCARD, ActionType.ALL, "WildCardEvent")
# The shared metrics poller brought new measurements (metrics-based plugins register it).
METRICS_POLLED_EVENT = ClusterEvent(METRICS_POLLED, ActionType.UPDATE_OTHER, "MetricsPolled")
# A pod left a node: deleted, or forgotten after its binding cycle failed (kube's EventAssignedPodDelete).
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
# A new pending pod (kube's EventUnscheduledPodAdd): sent only while a profile's plugin registers
# it (a group's member count), as kube sends it only when a plugin needs it.
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD, "UnscheduledPodAdd")


class QueueingHint(enum.Enum):
    """A hint function's answer: the event may make the pod schedulable (QUEUE) or surely not (SKIP)."""

    QUEUE = "Queue"
    SKIP = "QueueSkip"


# hint(pod, old, new): pod is the parked pod; old/new the object before/after the event
# (NodeInfo for nodes, PodInfo for assigned pods, the raw mapping for other kinds; old is
# None on Add, new is None on Delete). An exception counts as QUEUE (logged).
QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """One registration: the event, and optionally a finer test (no hint: always QUEUE)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None
