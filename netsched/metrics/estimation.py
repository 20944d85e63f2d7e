"""What one pod is expected to load its node with, before anything measures it.

Koordinator's estimator: max(request, limit) x factor for CPU and memory; for
network the bandwidth annotations, else the bandwidth hint a plugin left in
the pod's cycle state (BANDWIDTH_HINT: e.g. the pod's measured traffic leaving
the node, computed on that cycle's snapshot), else a default.  The ledger
(ledger.py) counts these for pods placed and gone until the readings show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from netsched.framework.quantity import CPU, MEMORY, QuantityError, parse_quantity
from netsched.framework.snapshot import FloatArray, IntArray, Snapshot
from netsched.framework.types import PodInfo
from netsched.metrics.args import EstimationArgs

INGRESS_BANDWIDTH = "kubernetes.io/ingress-bandwidth"
EGRESS_BANDWIDTH = "kubernetes.io/egress-bandwidth"

CPU_COL, MEMORY_COL, RX_COL, TX_COL = 0, 1, 2, 3
COLUMNS = 4
# Resource groups a sample can cover, and the columns each holds.
GROUP_COLUMNS = ((CPU_COL,), (MEMORY_COL,), (RX_COL, TX_COL))
CPU_GROUP, MEMORY_GROUP, NETWORK_GROUP = 0, 1, 2


def annotated_bandwidth(pod: PodInfo, key: str, default: float) -> float:
    """Bytes/s from a CNI bandwidth annotation ("10M" = 10 Mbit/s), else `default`."""
    raw = pod.annotations.get(key)
    if not raw:
        return default
    try:
        bits = float(parse_quantity(raw))
    except QuantityError:
        return default
    return bits / 8 if bits >= 0 else default


def pod_bandwidth(pod: PodInfo, default: float) -> tuple[float, float]:
    """(receive, transmit) bytes/s the pod is expected to add to its node."""
    return (
        annotated_bandwidth(pod, INGRESS_BANDWIDTH, default),
        annotated_bandwidth(pod, EGRESS_BANDWIDTH, default),
    )


def annotated(pod: PodInfo) -> bool:
    """Whether the pod declares its bandwidth (a CNI bandwidth annotation)."""
    return INGRESS_BANDWIDTH in pod.annotations or EGRESS_BANDWIDTH in pod.annotations


class BandwidthHint(Protocol):
    """What a plugin of the pod's cycle knows of the pod's link load: (rx, tx) bytes/s it will
    add to a node's link, None when it knows nothing (the estimate stands)."""

    def __call__(self, pod: PodInfo, node: str) -> tuple[float, float] | None:
        """On one node (Reserve)."""
        ...

    def rows(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> tuple[FloatArray, FloatArray] | None:
        """On each row `idx` of `snapshot` at once (a filter judging the candidates)."""
        ...


# The cycle-state key under which a plugin of the pod's own profile leaves its BandwidthHint
# for Reserve: per cycle, so two profiles (or an explanation's replica) never share one.
BANDWIDTH_HINT = "netsched.metrics/bandwidth-hint"


def pod_load(pod: PodInfo, args: EstimationArgs) -> FloatArray:
    """[cpu millicores, memory bytes, rx bytes/s, tx bytes/s] expected of the pod."""
    cpu = max(pod.nonzero_cpu, pod.limits.get(CPU, 0)) * args.cpu_factor
    mem = max(pod.nonzero_memory, pod.limits.get(MEMORY, 0)) * args.memory_factor
    rx, tx = pod_bandwidth(pod, args.default_bandwidth_bytes)
    return np.array([cpu, mem, rx, tx], dtype=np.float64)


def load_key(pod: PodInfo) -> tuple[object, ...]:
    """Everything pod_load reads of `pod`: pods with equal keys have equal loads."""
    limits, annotations = pod.limits, pod.annotations
    return (
        pod.nonzero_cpu,
        pod.nonzero_memory,
        limits.get(CPU, 0),
        limits.get(MEMORY, 0),
        annotations.get(INGRESS_BANDWIDTH),
        annotations.get(EGRESS_BANDWIDTH),
    )


@dataclass(frozen=True, slots=True)
class Estimates:
    """Estimated extra load per snapshot row (copies: safe to keep for the cycle)."""

    cpu: FloatArray  # millicores
    memory: FloatArray  # bytes
    rx: FloatArray  # bytes/s
    tx: FloatArray  # bytes/s
