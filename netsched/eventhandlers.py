"""Routes watch events to the cache, the queue and the nominator.

Assigned pods (spec.nodeName set) go to the cache and never to the queue.
Pending pods whose schedulerName belongs to one of our profiles go to the
queue.  A pod that cannot be parsed is reported once per resourceVersion
with a FailedScheduling event naming the field at fault; the loop goes on.
Cluster events that can make unschedulable pods fit (a node added or
changed, a pod leaving a node) go to the queue as ClusterEvents with the
object before and after, for the plugins' queueing hints; a node update is
classified by what changed (kube's nodeSchedulingPropertiesChange), so a
heartbeat carries no action and moves nothing.  A new pending pod is an
event too (UnscheduledPodAdd: it may complete what a plugin waits for) while a
plugin registers it, as kube sends it only when a plugin asks for it.  The queue
keeps the nominator (preemption's nominated pods) in step itself.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol

from netsched.cache import ClusterCache
from netsched.cache.pod_table import IndexKey, PodTable
from netsched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    NODE,
    UNSCHEDULED_POD_ADD,
    ActionType,
    ClusterEvent,
)
from netsched.framework.parse import PodParseError, parse_node, parse_pod
from netsched.framework.seams import EventRecorder
from netsched.framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")


class QueueEvents(Protocol):
    def add(self, pod: PodInfo) -> bool: ...

    def update(self, old: PodInfo | None, new: PodInfo) -> None: ...

    def delete(self, pod: PodInfo) -> object: ...

    def move_all_to_active_or_backoff(
        self, event: str | ClusterEvent, pre_check: Any = None, *, old: Any = None, new: Any = None
    ) -> object: ...


def _conditions(node: NodeInfo) -> dict[str, str]:
    """Condition type -> status (heartbeat and transition times ignored)."""
    out: dict[str, str] = {}
    for c in (node.raw.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict):
            out[str(c.get("type"))] = str(c.get("status"))
    return out


def node_update_action(old: NodeInfo, new: NodeInfo) -> ActionType:
    """What changed that a plugin may read (kube's nodeSchedulingPropertiesChange); 0: nothing."""
    action = ActionType(0)
    if old.unschedulable != new.unschedulable or old.taints != new.taints:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.ready != new.ready or _conditions(old) != _conditions(new):
        action |= ActionType.UPDATE_NODE_CONDITION
    if old.annotations != new.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    return action


def _ref(raw: dict[str, Any]) -> PodInfo:
    """A minimal record for a pod that failed to parse (enough to post an Event)."""
    meta = raw.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or "")
    return PodInfo(uid=str(meta.get("uid") or f"{ns}/{name}"), namespace=ns, name=name, raw=raw)


# The metadata parse_pod reads (besides resourceVersion): a change to any of them means a full parse.
_POD_META_READ = (
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "creationTimestamp",
    "deletionTimestamp",
)


class EventHandlers:
    def __init__(
        self,
        *,
        cache: ClusterCache,
        queue: QueueEvents,
        events_for: Callable[[str], EventRecorder],
        scheduler_names: Collection[str],
        on_malformed: Callable[[PodInfo, PodParseError], None] | None = None,
        on_assigned: Callable[[PodInfo], None] | None = None,
        unscheduled_pod_events: Callable[[], bool] = lambda: False,
    ) -> None:
        """`unscheduled_pod_events`: whether a plugin of the current profiles registers
        UNSCHEDULED_POD events (each costs a pass over the unschedulable pool)."""
        self.cache = cache
        self.queue = queue
        # Events are reported by the profile (schedulerName) the pod asked for.
        self.events_for = events_for
        self.scheduler_names = set(scheduler_names)
        self._on_malformed = on_malformed
        # Shadow mode: compare our prediction with the real binding.
        self._on_assigned = on_assigned
        self._unscheduled_pod_events = unscheduled_pod_events
        self._lock = threading.Lock()
        self._pending = PodTable()
        self._reported: dict[str, str] = {}  # uid -> resourceVersion reported as malformed
        self._nodes: dict[str, NodeInfo] = {}  # the last parsed version, to classify updates

    # ------------------------------------------------------------ pending pod lookups

    def pending_pod(self, uid: str) -> PodInfo | None:
        with self._lock:
            return self._pending.get(uid)

    def pending_pod_by_key(self, key: str) -> PodInfo | None:
        """A pending pod of ours by "namespace/name" (debug endpoints)."""
        with self._lock:
            return next((p for p in self._pending.values() if p.key == key), None)

    def pods_in_namespace(self, namespace: str) -> list[PodInfo]:
        """Pending pods of ours and assigned pods of `namespace`; an assigned (or assumed) copy
        replaces the pending record of the same pod."""
        return self._with_pending(
            self.cache.pods_in_namespace(namespace), lambda: self._pending.in_namespace(namespace)
        )

    def add_pod_index(self, name: str, key: IndexKey) -> None:
        """Index pending and assigned pods by `key` under `name` (a plugin's Handle.add_pod_index)."""
        self.cache.add_pod_index(name, key)
        with self._lock:
            self._pending.add_index(name, key)

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]:
        """pods_in_namespace for the pods whose key under index `name` is `value` only."""
        return self._with_pending(
            self.cache.pods_by_index(name, value), lambda: self._pending.by_index(name, value)
        )

    def _with_pending(self, assigned: list[PodInfo], pending: Callable[[], list[PodInfo]]) -> list[PodInfo]:
        """The pending pods `pending()` reads (under the lock), then `assigned`: an assigned (or
        assumed) copy replaces the pending record of the same pod."""
        uids = {p.uid for p in assigned}
        with self._lock:
            waiting = [p for p in pending() if p.uid not in uids]
        return waiting + assigned

    def pending_count(self) -> int:
        with self._lock:
            return len(self._pending)

    # ------------------------------------------------------------ nodes

    def on_node_event(self, kind: str, raw: dict[str, Any]) -> None:
        name = (raw.get("metadata") or {}).get("name")
        if not name:
            return
        if kind == "DELETED":
            with self._lock:
                self._nodes.pop(name, None)
            self.cache.remove_node(name)
            return
        node = parse_node(raw)
        with self._lock:
            old = self._nodes.get(name)
            self._nodes[name] = node
        self.cache.add_or_update_node(node)
        if old is None:
            event = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
        else:
            event = ClusterEvent(NODE, node_update_action(old, node), "NodeUpdate")
        self.queue.move_all_to_active_or_backoff(event, old=old, new=node)

    def on_nodes_synced(self, items: Iterable[dict[str, Any]]) -> None:
        nodes = [parse_node(raw) for raw in items if (raw.get("metadata") or {}).get("name")]
        with self._lock:
            self._nodes = {n.name: n for n in nodes}
        self.cache.replace_nodes(nodes)
        self.queue.move_all_to_active_or_backoff("NodeAdd")

    # ------------------------------------------------------------ pods

    def on_pod_event(self, kind: str, raw: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._pod_gone(raw)
            return
        status = raw.get("status") or {}
        if status.get("phase") in TERMINAL_PHASES:
            # Finished pods hold no resources: treat as gone.
            self._pod_gone(raw)
            return
        pod = self._same_pod_again(raw)
        same = pod is not None
        if pod is None:
            try:
                pod = parse_pod(raw)
            except PodParseError as e:
                self._malformed(raw, e)
                return
        if pod.node_name:
            self._assigned(pod, same)
        else:
            self._pending_pod(pod)

    def _same_pod_again(self, raw: dict[str, Any]) -> PodInfo | None:
        """An assigned pod the cache holds whose metadata and spec are unchanged but for the node
        it was bound to (its binding; a kubelet's status update): the cached record with the new
        object, phase and resourceVersion, instead of a full parse. None when anything else moved."""
        spec, meta = raw.get("spec"), raw.get("metadata")
        if not isinstance(spec, dict) or not isinstance(meta, dict) or not spec.get("nodeName"):
            return None
        known = self.cache.get_pod(str(meta.get("uid") or ""))
        if known is None or known.node_name != spec["nodeName"]:
            return None
        old_spec, old_meta = known.raw.get("spec"), known.raw.get("metadata")
        if not isinstance(old_spec, dict) or not isinstance(old_meta, dict):
            return None
        if any(meta.get(k) != old_meta.get(k) for k in _POD_META_READ):
            return None
        if {k: v for k, v in spec.items() if k != "nodeName"} != {
            k: v for k, v in old_spec.items() if k != "nodeName"
        }:
            return None
        status = raw.get("status")
        status = status if isinstance(status, dict) else {}
        return dataclasses.replace(
            known,
            raw=raw,
            resource_version=str(meta.get("resourceVersion") or ""),
            phase=status.get("phase") or "Pending",
            nominated_node_name=status.get("nominatedNodeName") or "",
        )

    def _assigned(self, pod: PodInfo, same_placement: bool = False) -> None:
        self._drop_pending(pod)
        self.cache.add_or_update_pod(pod, same_placement=same_placement)
        if self._on_assigned is not None:
            self._on_assigned(pod)

    def _pending_pod(self, pod: PodInfo) -> None:
        if pod.scheduler_name not in self.scheduler_names:
            return
        with self._lock:
            old = self._pending.get(pod.uid)
            self._pending[pod.uid] = pod
            self._reported.pop(pod.uid, None)
        if self.cache.is_assumed(pod.uid):
            # Being bound right now (kube's skipPodUpdate): requeueing would schedule it twice.
            return
        if old is None:
            self.queue.add(pod)
            if self._unscheduled_pod_events():
                self.queue.move_all_to_active_or_backoff(UNSCHEDULED_POD_ADD, new=pod)
        elif old.resource_version != pod.resource_version:
            self.queue.update(old, pod)

    def _drop_pending(self, pod: PodInfo) -> None:
        with self._lock:
            old = self._pending.pop(pod.uid, None)
        if old is not None:
            self.queue.delete(old)  # also drops its nomination

    def _pod_gone(self, raw: dict[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        with self._lock:
            self._reported.pop(uid, None)
            pending = self._pending.get(uid)
        if pending is not None:
            self._drop_pending(pending)
        removed = self.cache.remove_pod(uid)
        if removed is not None:
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, old=removed)

    def _malformed(self, raw: dict[str, Any], err: PodParseError) -> None:
        ref = _ref(raw)
        spec = raw.get("spec") or {}
        if spec.get("nodeName"):
            log.warning("Ignoring unparsable assigned pod pod=%s err=%s", ref.key, err)
            return
        sched = spec.get("schedulerName") or "default-scheduler"
        if sched not in self.scheduler_names:
            return
        rv = str((raw.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            if self._reported.get(ref.uid) == rv:
                return
            self._reported[ref.uid] = rv
            stale = self._pending.pop(ref.uid, None)
        if stale is not None:
            self.queue.delete(stale)
        log.warning("Pod spec cannot be scheduled pod=%s field=%s err=%s", ref.key, err.path, err.detail)
        self.events_for(sched).event(
            ref, "Warning", "FailedScheduling", "Scheduling", f"pod spec is invalid: {err}"
        )
        if self._on_malformed is not None:
            self._on_malformed(ref, err)
