"""Matching Prometheus series to nodes.

node_exporter series rarely carry the Kubernetes node name: `instance` is
"10.0.0.7:9100" and the node label depends on the scrape config.  A series'
key (the mapping label's value, port stripped in instance mode) is looked up
among node names first, then node addresses (InternalIP, Hostname, others),
so one resolver serves both mapping modes and tolerates a label carrying a
hostname or an IP instead of the node name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from netsched.framework.snapshot import FloatArray
from netsched.framework.types import NodeInfo
from netsched.metrics.args import BY_INSTANCE, NodeMappingArgs

RowArray = npt.NDArray[np.int64]

# Address types in lookup priority: a Hostname shared by two nodes must not
# shadow a unique InternalIP.
_ADDRESS_ORDER = {"InternalIP": 0, "Hostname": 1, "InternalDNS": 2, "ExternalIP": 3, "ExternalDNS": 4}


@dataclass(frozen=True, slots=True)
class NodeRef:
    """What the hub needs to know of a node to map series to it."""

    name: str
    addresses: tuple[tuple[str, str], ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    ready: bool = True


NodeLike = NodeInfo | NodeRef | tuple[str, Iterable[tuple[str, str]], Mapping[str, str]]


def node_ref(node: NodeLike) -> NodeRef:
    if isinstance(node, NodeRef):
        return node
    if isinstance(node, NodeInfo):
        return NodeRef(node.name, tuple(node.addresses), node.labels, node.ready)
    name, addresses, labels = node
    return NodeRef(name, tuple(addresses), dict(labels))


def series_key(labels: Mapping[str, Any], mapping: NodeMappingArgs) -> str:
    """The string a series is matched on ("" when the series lacks the label)."""
    if mapping.by == BY_INSTANCE:
        value = labels.get("instance")
        if not isinstance(value, str):
            return ""
        return strip_port(value) if mapping.instance_port_strip else value
    value = labels.get(mapping.label)
    return value if isinstance(value, str) else ""


def strip_port(instance: str) -> str:
    """ "10.0.0.1:9100" -> "10.0.0.1", "[fd00::1]:9100" -> "fd00::1", "host" -> "host"."""
    if instance.startswith("["):
        end = instance.find("]")
        return instance[1:end] if end > 0 else instance
    if instance.count(":") == 1:
        host, _, port = instance.partition(":")
        if port.isdigit():
            return host
    return instance


class NodeResolver:
    """Key -> row over a fixed list of nodes."""

    __slots__ = ("names", "_lookup", "ready")

    def __init__(self, nodes: Iterable[NodeRef | NodeInfo]) -> None:
        self.names: list[str] = []
        ready: list[bool] = []
        lookup: dict[str, int] = {}
        addressed: list[tuple[int, int, str]] = []
        for row, n in enumerate(nodes):
            self.names.append(n.name)
            ready.append(n.ready)
            lookup.setdefault(n.name, row)
            for kind, addr in n.addresses:
                if addr:
                    addressed.append((_ADDRESS_ORDER.get(kind, 9), row, addr))
        for _, row, addr in sorted(addressed):
            lookup.setdefault(addr, row)
        self._lookup = lookup
        self.ready = np.array(ready, dtype=bool)

    def __len__(self) -> int:
        return len(self.names)

    def rows(self, keys: Iterable[str]) -> RowArray:
        """Row of each key, -1 when no node matches."""
        get = self._lookup.get
        return np.fromiter((get(k, -1) for k in keys), dtype=np.int64)


def align(
    rows: RowArray, values: FloatArray, timestamps: FloatArray, n: int
) -> tuple[FloatArray, FloatArray]:
    """Scatter series onto n node rows (NaN where no series).

    Two series on one node (two exporters behind one address) keep the higher
    value: overestimating load is the safe mistake for placement.
    """
    out_v = np.full(n, -np.inf)
    out_t = np.full(n, np.nan)
    ok = rows >= 0
    r, v, t = rows[ok], values[ok], timestamps[ok]
    np.maximum.at(out_v, r, v)
    out_t[r] = t
    out_v[np.isneginf(out_v)] = np.nan
    return out_v, out_t
