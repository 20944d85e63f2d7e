"""Cluster state the scheduler decides on: nodes, the pods on them, assumed pods.

Watch threads write here; the scheduling thread reads a Snapshot that
`update_snapshot` brings up to date at the start of every cycle by copying
only the nodes that changed since the last cycle (a set of dirty names), so
a cycle costs nothing per unchanged node.

A pod the scheduler placed is "assumed" on its node from Reserve on, so the
next cycle already counts it, until the API confirms the binding (the pod
shows up with spec.nodeName) or the binding fails (forget).  An assumed pod
whose binding finished but was never observed expires after `assumed_ttl`,
so a lost watch event cannot leak capacity forever.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from netsched.cache.pod_table import IndexKey, PodTable
from netsched.clock import Clock
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

DEFAULT_ASSUMED_TTL = 30.0


class PodInCache(ValueError):
    """assume() found the pod in the cache already: bound, as the API server reported it (another
    binder won the race for it while its scheduling cycle ran), or assumed (a bug)."""

    def __init__(self, pod: PodInfo, node: str, assumed: bool) -> None:
        super().__init__(f"pod {pod.key} is already in the cache (assumed or bound)")
        self.node = node
        self.assumed = assumed


@dataclass(slots=True)
class _Assumed:
    pod: PodInfo
    node: str
    deadline: float | None = None  # set when binding finished


class ClusterCache:
    def __init__(self, clock: Clock, assumed_ttl: float = DEFAULT_ASSUMED_TTL) -> None:
        self._clock = clock
        self._ttl = assumed_ttl
        self._lock = threading.RLock()
        self._nodes: dict[str, NodeInfo] = {}
        self._pods = PodTable()  # uid -> assigned pod (bound or assumed), by namespace too
        self._assumed: dict[str, _Assumed] = {}
        self._dirty: set[str] = set()
        self._layout_changed = True
        self._listeners: list[Callable[[list[NodeInfo]], None]] = []
        self._nodes_changed = False
        self._departed: list[Callable[[PodInfo], None]] = []

    # ------------------------------------------------------------ nodes

    def on_nodes_changed(self, fn: Callable[[list[NodeInfo]], None]) -> None:
        """Call fn(nodes) after the node set or a node's addresses/labels changed (metrics mapping).

        Calls are debounced: changes only mark the cache, and `notify_node_listeners`
        (run by the housekeeping loop, about once a second) delivers one call for
        any number of changes, so a relist of 5000 nodes costs one call, not 5000.
        """
        self._listeners.append(fn)

    def _notify(self) -> None:
        self._nodes_changed = True

    def on_pod_departed(self, fn: Callable[[PodInfo], None]) -> None:
        """Call fn(pod) once when an assigned pod stops loading its node: it turns terminating
        (deletionTimestamp set), is deleted, or finishes (the metrics ledger's departures).
        Called on the caller's thread (the watch's), outside the cache's lock."""
        self._departed.append(fn)

    def _tell_departed(self, pod: PodInfo | None) -> None:
        if pod is None:
            return
        for fn in self._departed:
            try:
                fn(pod)
            except Exception:
                log.exception("Pod departure listener failed pod=%s", pod.key)

    def notify_node_listeners(self, force: bool = False) -> bool:
        """Deliver pending node-set changes; True when listeners were called."""
        with self._lock:
            if not (self._nodes_changed or force):
                return False
            self._nodes_changed = False
            nodes = list(self._nodes.values())
        for fn in self._listeners:
            try:
                fn(nodes)
            except Exception:
                log.exception("Node listener failed")
        return True

    def add_or_update_node(self, node: NodeInfo) -> None:
        if self._upsert_node(node):
            self._notify()

    def _upsert_node(self, node: NodeInfo) -> bool:
        """Insert or replace; True when listeners should hear about it."""
        with self._lock:
            old = self._nodes.get(node.name)
            if old is not None:
                # Keep the pods; take everything else from the new object.
                node.pods = old.pods
                node.requested = old.requested
                node.nonzero_cpu, node.nonzero_memory = old.nonzero_cpu, old.nonzero_memory
                node.used_ports = old.used_ports
                node.pods_with_affinity = old.pods_with_affinity
                node.pods_with_required_anti_affinity = old.pods_with_required_anti_affinity
                self._dirty.add(node.name)
                changed_identity = old.addresses != node.addresses or old.labels != node.labels
                # Keep the old objects when equal: snapshot caches derived from labels,
                # taints and images are invalidated by identity, and a status-only
                # update (heartbeat, conditions) must not throw them away.
                if old.labels == node.labels:
                    node.labels = old.labels
                if old.taints == node.taints:
                    node.taints = old.taints
                if old.images == node.images:
                    node.images = old.images
            else:
                # Pods seen before their node (watch order is not guaranteed) are attached now.
                for pod in self._pods.values():
                    if pod.node_name == node.name:
                        node.add_pod(pod)
                self._layout_changed = True
                changed_identity = True
            self._nodes[node.name] = node
        return changed_identity

    def remove_node(self, name: str) -> None:
        with self._lock:
            if self._nodes.pop(name, None) is None:
                return
            self._layout_changed = True
        self._notify()

    def replace_nodes(self, nodes: Iterable[NodeInfo]) -> None:
        """A relist: the given set is the truth; nodes not in it are removed."""
        nodes = list(nodes)
        names = {n.name for n in nodes}
        with self._lock:
            for gone in [n for n in self._nodes if n not in names]:
                del self._nodes[gone]
                self._layout_changed = True
            for n in nodes:
                self._upsert_node(n)
        self._notify()

    def node_names(self) -> list[str]:
        with self._lock:
            return list(self._nodes)

    def nodes(self) -> list[NodeInfo]:
        with self._lock:
            return [n.clone() for n in self._nodes.values()]

    # ------------------------------------------------------------ pods

    def add_or_update_pod(self, pod: PodInfo, *, same_placement: bool = False) -> None:
        """An assigned pod seen through the API (bound, running, terminating).

        `same_placement`: the caller found nothing that a node's totals or a snapshot reads
        changed since the cached record (the binding that confirms an assumed pod, a kubelet's
        status update; eventhandlers' _same_pod_again).  The new record then replaces the old
        in place and the node is not marked changed, so the next cycle copies nothing for it
        (kube's cache too leaves the NodeInfo of a confirmed assumed pod as it was).
        """
        departed = None
        with self._lock:
            assumed = self._assumed.pop(pod.uid, None)
            if assumed is not None and assumed.node != pod.node_name:
                # Another binder won the race for it (kube logs this at info too).
                log.info(
                    "Pod was added to a different node than it was assumed pod=%s assumedNode=%s currentNode=%s",
                    pod.key,
                    assumed.node,
                    pod.node_name,
                )
            old = self._pods.get(pod.uid)
            if pod.deleting and old is not None and not old.deleting:
                # Its containers are being stopped: its load leaves now.  (A pod first seen
                # terminating, as in a relist, left at a time the cache cannot tell.)
                departed = pod
            node = self._nodes.get(pod.node_name) if same_placement else None
            if node is not None and old is not None and node.pods.get(pod.uid) is old:
                self._pods[pod.uid] = pod
                node.pods[pod.uid] = pod  # same totals; snapshots hold their own copies
            else:
                if old is not None:
                    self._detach(old)
                self._pods[pod.uid] = pod
                self._attach(pod)
        self._tell_departed(departed)

    def remove_pod(self, uid: str) -> PodInfo | None:
        with self._lock:
            self._assumed.pop(uid, None)
            old = self._pods.pop(uid, None)
            if old is not None:
                self._detach(old)
        if old is not None and not old.deleting:  # (a terminating pod was told when it began)
            self._tell_departed(old)
        return old

    def _attach(self, pod: PodInfo) -> None:
        node = self._nodes.get(pod.node_name)
        if node is not None:
            node.add_pod(pod)
            self._dirty.add(node.name)

    def _detach(self, pod: PodInfo) -> None:
        node = self._nodes.get(pod.node_name)
        if node is not None and node.remove_pod(pod):
            self._dirty.add(node.name)

    def get_pod(self, uid: str) -> PodInfo | None:
        with self._lock:
            return self._pods.get(uid)

    def pods_in_namespace(self, namespace: str) -> list[PodInfo]:
        """Assigned pods (bound or assumed) of one namespace."""
        with self._lock:
            return self._pods.in_namespace(namespace)

    def add_pod_index(self, name: str, key: IndexKey) -> None:
        """Index the assigned pods by `key` under `name` (netsched.cache.pod_table)."""
        with self._lock:
            self._pods.add_index(name, key)

    def pods_by_index(self, name: str, value: str) -> list[PodInfo]:
        """Assigned pods (bound or assumed) whose key under index `name` is `value`."""
        with self._lock:
            return self._pods.by_index(name, value)

    def pod_count(self) -> int:
        with self._lock:
            return len(self._pods)

    # ------------------------------------------------------------ assumed pods

    def assume(self, pod: PodInfo, node_name: str) -> PodInfo:
        """Count pod on node_name from now on; returns the assumed copy."""
        placed = dataclasses.replace(pod, node_name=node_name)
        with self._lock:
            known = self._pods.get(pod.uid)
            if known is not None:
                raise PodInCache(pod, known.node_name, pod.uid in self._assumed)
            self._assumed[pod.uid] = _Assumed(placed, node_name)
            self._pods[pod.uid] = placed
            self._attach(placed)
        return placed

    def finish_binding(self, uid: str) -> None:
        """The bind call returned; start the expiry clock in case the watch never confirms."""
        with self._lock:
            a = self._assumed.get(uid)
            if a is not None:
                a.deadline = self._clock.now() + self._ttl

    def forget(self, uid: str) -> None:
        """Binding failed: the assumed pod no longer counts on its node."""
        with self._lock:
            if self._assumed.pop(uid, None) is None:
                return
            pod = self._pods.pop(uid, None)
            if pod is not None:
                self._detach(pod)

    def is_assumed(self, uid: str) -> bool:
        with self._lock:
            return uid in self._assumed

    def bound_node(self, uid: str) -> str:
        """The node the API server reported the pod bound to; "" when it did not (an assumed pod
        is not bound yet)."""
        with self._lock:
            if uid in self._assumed:
                return ""
            pod = self._pods.get(uid)
            return pod.node_name if pod is not None else ""

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)

    def cleanup_expired(self) -> list[PodInfo]:
        """Drop assumed pods whose binding finished more than ttl ago without confirmation."""
        now = self._clock.now()
        expired = []
        with self._lock:
            for uid, a in list(self._assumed.items()):
                if a.deadline is not None and a.deadline <= now:
                    expired.append(a.pod)
                    self.forget(uid)
        for p in expired:
            log.warning("Assumed pod expired without a confirmed binding pod=%s node=%s", p.key, p.node_name)
        return expired

    # ------------------------------------------------------------ snapshot

    def snapshot_copy(self) -> Snapshot:
        """A fresh, independent snapshot (debug endpoints, explain) that leaves the
        scheduling thread's incremental bookkeeping untouched."""
        with self._lock:
            return Snapshot.of([n.clone() for n in sorted(self._nodes.values(), key=lambda n: n.name)])

    def find_pod(self, key: str) -> PodInfo | None:
        """An assigned (bound or assumed) pod by "namespace/name"."""
        with self._lock:
            return next((p for p in self._pods.values() if p.key == key), None)

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring snapshot up to date: copy changed nodes only; rebuild rows if the node set changed."""
        with self._lock:
            if self._layout_changed or len(snapshot) != len(self._nodes):
                snapshot.rebuild([n.clone() for n in sorted(self._nodes.values(), key=lambda n: n.name)])
                self._layout_changed = False
            else:
                for name in self._dirty:
                    row = snapshot.index.get(name)
                    node = self._nodes.get(name)
                    if row is None or node is None:
                        continue
                    if not snapshot.set_node(row, node.clone()):
                        snapshot.rebuild(
                            [n.clone() for n in sorted(self._nodes.values(), key=lambda n: n.name)]
                        )
                        break
            self._dirty.clear()
            snapshot.generation += 1
