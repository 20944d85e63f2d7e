"""How much of one pod's measured traffic crosses its node's link, each way.

A pod of workload W sends `sent_by(W)[P] / n_W` bytes/s to each peer workload
P and receives `received_by(W)[P] / n_W` from it, where n_W is the number of
pods W's measured traffic is shared by.  A pod talks to the peer's pods evenly
(as a mesh's load balancing spreads requests), so the part exchanged with the
k_P(node) of P's n_P pods on its own node never reaches the NIC:

    transmit(node) = sum over P of sent_by(W)[P]     / n_W x (1 - k_P(node) / n_P)
    receive(node)  = sum over P of received_by(W)[P] / n_W x (1 - k_P(node) / n_P)

n_P counts P's pods that are pending too: a peer pod not placed yet will most
likely land elsewhere, so its share leaves the node.  A direction the mesh does
not report counts the whole rate both ways (netsched.metrics.traffic).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from netsched.framework import FloatArray, IntArray
from netsched.metrics.plugin_api import TrafficGraph


@dataclass(frozen=True, slots=True)
class PodFlows:
    """One pod's measured traffic with each peer workload, bytes/s each way."""

    sent: Mapping[str, float]  # peer -> bytes/s the pod sends it
    received: Mapping[str, float]  # peer -> bytes/s the pod receives from it

    @property
    def peers(self) -> set[str]:
        return set(self.sent) | set(self.received)


def pod_flows(graph: TrafficGraph, workload: str, pods: int) -> PodFlows | None:
    """A pod's share of `workload`'s measured traffic when `pods` pods share it; None when the
    workload has no measured traffic (or no pod to share it)."""
    sent, received = graph.sent_by(workload), graph.received_by(workload)
    if (not sent and not received) or pods <= 0:
        return None
    return PodFlows({p: r / pods for p, r in sent.items()}, {p: r / pods for p, r in received.items()})


def leaving(flows: PodFlows, local: Callable[[str], float]) -> tuple[float, float]:
    """(receive, transmit) bytes/s of the pod's traffic that crosses its node's link, where
    `local(peer)` is the part of the peer's pods on the node (k_P / n_P, 0..1)."""
    shares = {p: 1.0 - min(max(local(p), 0.0), 1.0) for p in flows.peers}
    rx = sum(r * shares[p] for p, r in flows.received.items())
    tx = sum(r * shares[p] for p, r in flows.sent.items())
    return rx, tx


def leaving_rows(
    flows: PodFlows,
    placed: Callable[[str], tuple[IntArray, FloatArray]],
    pods_of: Callable[[str], int],
    idx: IntArray,
    n: int,
) -> tuple[FloatArray, FloatArray]:
    """leaving() on each row of `idx` at once: `placed(peer)` gives the rows holding the peer's
    pods and how many on each, `pods_of(peer)` its n_P; `n` rows in all.  The work follows the
    peers' rows (a bincount over the rows only when some peer is placed)."""
    rx_base = float(sum(flows.received.values()))
    tx_base = float(sum(flows.sent.values()))
    rows: list[IntArray] = []
    rx_w: list[FloatArray] = []
    tx_w: list[FloatArray] = []
    for peer in flows.peers:
        at, count = placed(peer)
        total = pods_of(peer)
        if not len(at) or total <= 0:
            continue
        share = np.minimum(count / total, 1.0)
        rows.append(at)
        rx_w.append(share * flows.received.get(peer, 0.0))
        tx_w.append(share * flows.sent.get(peer, 0.0))
    rx = np.full(len(idx), rx_base)
    tx = np.full(len(idx), tx_base)
    if rows:
        held = np.concatenate(rows)
        rx -= np.bincount(held, weights=np.concatenate(rx_w), minlength=n)[idx]
        tx -= np.bincount(held, weights=np.concatenate(tx_w), minlength=n)[idx]
        np.maximum(rx, 0.0, out=rx)
        np.maximum(tx, 0.0, out=tx)
    return rx, tx
