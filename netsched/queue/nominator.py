"""Which pending pods are nominated to which node (kube's PodNominator).

After preemption evicts victims for a pod, the pod is "nominated" to that node:
it is not bound yet (the victims are still terminating), but later cycles must
count it on the node so that lower-priority pods do not take the room freed for
it.  Filters see nominated pods through Handle.nominated_pods_for_node.

The scheduler records a nomination in memory before it patches the pod's
status.nominatedNodeName, so the in-memory value wins over a pod update that
does not mention a node yet.  A nomination ends when the pod is bound, deleted,
or its status drops the node.
"""

from __future__ import annotations

import threading

from netsched.framework.types import PodInfo


class Nominator:
    """Thread-safe map node name -> pods nominated to it, and pod uid -> node name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Insertion-ordered per node, so nominated pods are listed in nomination order.
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated(self, pod: PodInfo, node_name: str | None = None) -> None:
        """Nominate pod to node_name; None takes the pod's status.nominatedNodeName.

        Replaces any earlier nomination of the pod.  An empty node name, or a pod
        already bound (spec.nodeName set), only clears the nomination.
        """
        with self._lock:
            self._add(pod, node_name)

    def delete_nominated(self, pod: PodInfo | str) -> bool:
        """Forget the pod's nomination (pod or uid); True if it had one."""
        uid = pod if isinstance(pod, str) else pod.uid
        with self._lock:
            return self._delete(uid)

    def update_nominated(self, old: PodInfo | None, new: PodInfo) -> None:
        """Follow a pod update.

        A nomination made in memory is kept when neither version of the pod names
        a node (the status patch has not arrived yet); otherwise the new pod's
        status.nominatedNodeName decides, and a bound pod loses its nomination.
        """
        with self._lock:
            old_nnn = old.nominated_node_name if old is not None else ""
            if not old_nnn and not new.nominated_node_name and not new.node_name:
                kept = self._node_of.get(new.uid)
                if kept is not None:
                    self._add(new, kept)
                return
            self._add(new, None)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to node_name, oldest nomination first (a new list each call).

        The PodInfo records are shared, not copied: callers must not mutate them.
        """
        with self._lock:
            pods = self._by_node.get(node_name)
            return list(pods.values()) if pods else []

    def node_names(self) -> list[str]:
        """Nodes with at least one nominated pod (few: the runtime checks only these)."""
        with self._lock:
            return list(self._by_node)

    def __len__(self) -> int:
        with self._lock:
            return len(self._node_of)

    def _add(self, pod: PodInfo, node_name: str | None) -> None:
        # Always delete first so a pod is never listed under two nodes.
        self._delete(pod.uid)
        name = pod.nominated_node_name if node_name is None else node_name
        if not name or pod.node_name:
            return
        self._node_of[pod.uid] = name
        self._by_node.setdefault(name, {})[pod.uid] = pod

    def _delete(self, uid: str) -> bool:
        name = self._node_of.pop(uid, None)
        if name is None:
            return False
        pods = self._by_node[name]
        del pods[uid]
        if not pods:
            del self._by_node[name]
        return True
