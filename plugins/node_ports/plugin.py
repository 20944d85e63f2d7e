"""NodePorts: a pod's hostPorts must be free on the node.

A host port is (hostIP, protocol, port).  As in kube, a wanted 0.0.0.0
binding conflicts with the same protocol/port on any address of the node, and
a wanted specific address conflicts with that address or with 0.0.0.0.
The reason is Unschedulable (evicting the pod holding the port may help).

Pods without host ports skip this plugin at PreFilter, so the Python loop
over nodes in the batch form runs only for the rare pods that use them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    HostPort,
    IntArray,
    NodeInfo,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Rejection,
    Snapshot,
    Status,
    names,
)

PRE_FILTER_KEY = "PreFilter" + names.NODE_PORTS
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
ALL_ADDRESSES = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class WantedPorts:
    ports: tuple[HostPort, ...]


def conflicts(used: Mapping[tuple[str, str, int], int], want: HostPort) -> bool:
    """kube's HostPortInfo.CheckConflict for one wanted port; used keys are (ip, protocol, port)."""
    if want.port <= 0:
        return False
    ip = want.host_ip or ALL_ADDRESSES
    proto = want.protocol or "TCP"
    if ip == ALL_ADDRESSES:
        return any(p == want.port and pr == proto for (_, pr, p) in used)
    return (ALL_ADDRESSES, proto, want.port) in used or (ip, proto, want.port) in used


def fits(used: Mapping[tuple[str, str, int], int], wanted: tuple[HostPort, ...]) -> bool:
    return not used or not any(conflicts(used, w) for w in wanted)


class NodePorts(PreFilterPlugin[None], FilterPlugin[None]):
    name = names.NODE_PORTS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """An assigned pod using one of the pod's host ports deleted; a node added or changed (kube v1.31)."""
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), _frees_a_port),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE)),
        ]

    def _wanted(self, state: CycleState, pod: PodInfo) -> tuple[HostPort, ...]:
        got = state.get(PRE_FILTER_KEY)
        return got.ports if isinstance(got, WantedPorts) else pod.host_ports

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.host_ports:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, WantedPorts(pod.host_ports))
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if fits(node.used_ports, self._wanted(state, pod)):
            return Status.success()
        return Status.unschedulable(ERR_REASON)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        wanted = self._wanted(state, pod)
        if not wanted:
            return []
        nodes = snapshot.nodes
        mask = np.fromiter(
            (not fits(nodes[i].used_ports, wanted) for i in idx.tolist()), dtype=bool, count=len(idx)
        )
        if not mask.any():
            return []
        return [Rejection(mask, (ERR_REASON,), Code.UNSCHEDULABLE)]


def _frees_a_port(pod: PodInfo, old: Any, _new: Any) -> QueueingHint:
    """Queue if the deleted assigned pod used a host port (protocol, port) this pod wants."""
    if old is None or not old.node_name or not pod.host_ports:
        return QueueingHint.SKIP
    wanted = {(p.protocol, p.port) for p in pod.host_ports}
    freed = any((p.protocol, p.port) in wanted for p in old.host_ports)
    return QueueingHint.QUEUE if freed else QueueingHint.SKIP
