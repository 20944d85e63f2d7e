"""Where the peers are: placed pods by workload, and the peers' weight on each node-table row.

WorkloadIndex keeps the snapshot's pods (bound and assumed) per workload and
row, re-reading only the rows the snapshot replaced; PeerWeights turns a
workload's edges into the weight its peers put on each row, kept between
cycles and updated for the peers that moved.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from netsched.framework import FloatArray, IntArray, NodeInfo, Snapshot, workload_key


@dataclass(frozen=True, slots=True)
class Peers:
    """Where the pod's peers sit: their weight per snapshot row, dense and sparse."""

    rows: FloatArray  # bytes/s of the pod's edges carried by each row's peers
    total: float
    held: IntArray  # the rows holding peers (may repeat), and each one's weight: the sparse form
    weights: FloatArray


# A workload's placed pods: (rows, pods on each row, total pods).
Arrays = tuple[IntArray, FloatArray, int]


class WorkloadIndex:
    """Placed pods (bound and assumed) per workload and row, kept current with the snapshot.

    A cycle re-reads only the rows the snapshot replaced since the last sync
    (its row_version, one vector compare); a new layout rebuilds it.  Terminating pods are left out:
    their traffic is leaving with them.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        self._snapshot: Snapshot | None = None
        self._layout = -1
        self._row_nodes: list[NodeInfo] = []
        self._row_workloads: list[dict[str, int]] = []
        self._seen = 0  # the snapshot's row_counter when last synced
        self._arrays: dict[str, Arrays] = {}  # workload -> rows, pods, total
        self.rows: dict[str, dict[int, int]] = {}  # workload -> row -> pods
        self.epoch = 0  # bumped when rebuilt: row numbers from before mean nothing

    def sync(self, snapshot: Snapshot) -> None:
        nodes = snapshot.nodes
        if (
            self._snapshot is not snapshot
            or self._layout != snapshot.layout_version
            or len(nodes) != len(self._row_nodes)
        ):
            self._snapshot, self._layout = snapshot, snapshot.layout_version
            self._row_nodes = list(nodes)
            self._row_workloads = [{} for _ in nodes]
            self.rows = {}
            self._arrays = {}
            self.epoch += 1
            changed: Iterable[int] = range(len(nodes))
        elif snapshot.row_counter == self._seen:
            return
        else:
            changed = np.flatnonzero(snapshot.row_version > self._seen).tolist()
        self._seen = snapshot.row_counter
        for row in changed:
            self._reindex(row, nodes[row])

    def _reindex(self, row: int, node: NodeInfo) -> None:
        for wl in self._row_workloads[row]:
            self._arrays.pop(wl, None)
            per_row = self.rows[wl]
            del per_row[row]
            if not per_row:
                del self.rows[wl]
        counts: dict[str, int] = {}
        for pod in node.pods.values():
            if not pod.deleting:
                wl = workload_key(pod, self._label)
                counts[wl] = counts.get(wl, 0) + 1
        for wl, k in counts.items():
            self.rows.setdefault(wl, {})[row] = k
            self._arrays.pop(wl, None)
        self._row_workloads[row] = counts
        self._row_nodes[row] = node

    def placed(self, workload: str) -> int:
        return self.arrays(workload)[2]

    def arrays(self, workload: str) -> Arrays:
        """(rows, pods on each, total) of the workload, cached until one of its rows changes
        (a new tuple then: its identity says whether the workload moved)."""
        got = self._arrays.get(workload)
        if got is None:
            per_row = self.rows.get(workload, {})
            rows = np.fromiter(per_row.keys(), dtype=np.int64, count=len(per_row))
            pods = np.fromiter(per_row.values(), dtype=np.float64, count=len(per_row))
            got = self._arrays[workload] = (rows, pods, int(pods.sum()))
        return got


@dataclass(slots=True)
class _Weights:
    edges: Mapping[str, float]  # the graph's edges they were computed for (identity)
    epoch: int
    rows: FloatArray
    parts: dict[str, tuple[Arrays, float]]  # peer -> (its arrays then, the rate each of its pods carried)


# Past this share of peers moved since the kept weights, recomputing them all is cheaper.
RECOMPUTE_SHARE = 0.25


class PeerWeights:
    """The peers' weights per row for the workloads being placed, kept between cycles.

    Each edge's rate is shared among the peer's placed pods.  Between two polls a
    workload's edges are the same object, so when its pods come one after the
    other (a Deployment's replicas) its weights are updated only for the peers
    whose pods moved since (usually one: the pod placed last); when most peers
    moved they are recomputed in one bincount.  At most `size` workloads are
    kept (the least recently placed are dropped).
    """

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._kept: OrderedDict[str, _Weights] = OrderedDict()

    def of(self, index: WorkloadIndex, workload: str, edges: Mapping[str, float], n_rows: int) -> Peers:
        got = self._kept.get(workload)
        known, arrays = index.rows, index.arrays
        moved: list[tuple[str, float, Arrays | None]] = []
        if got is None or got.edges is not edges or got.epoch != index.epoch or len(got.rows) != n_rows:
            got = None  # another graph or node layout: nothing kept applies
        else:
            self._kept.move_to_end(workload)
            parts = got.parts
            for peer, rate in edges.items():
                now = arrays(peer) if peer in known else None
                part = parts.get(peer)
                if (part[0] if part is not None else None) is not now:
                    moved.append((peer, rate, now))
        if got is None or len(moved) > RECOMPUTE_SHARE * len(edges):
            got, held, weights = self._recompute(index, workload, edges, n_rows)
        else:
            _update(got, moved)
            held = np.flatnonzero(got.rows)
            weights = got.rows[held]
        return Peers(got.rows, float(weights.sum()) if got.parts else 0.0, held, weights)

    def _recompute(
        self, index: WorkloadIndex, workload: str, edges: Mapping[str, float], n_rows: int
    ) -> tuple[_Weights, IntArray, FloatArray]:
        """Kept weights from scratch, and their sparse form (rows may repeat)."""
        rows: list[IntArray] = []
        pods: list[FloatArray] = []
        shares: list[float] = []
        sizes: list[int] = []
        parts: dict[str, tuple[Arrays, float]] = {}
        known, arrays = index.rows, index.arrays
        for peer, rate in edges.items():
            if peer in known:
                now = arrays(peer)
                share = rate / now[2]
                rows.append(now[0])
                pods.append(now[1])
                shares.append(share)
                sizes.append(len(now[0]))
                parts[peer] = (now, share)
        if rows:
            held = np.concatenate(rows)
            weights = np.concatenate(pods) * np.repeat(shares, sizes)
            w = np.bincount(held, weights=weights, minlength=n_rows).astype(np.float64, copy=False)
        else:
            held, weights = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
            w = np.zeros(n_rows, dtype=np.float64)
        got = self._kept[workload] = _Weights(edges, index.epoch, w, parts)
        self._kept.move_to_end(workload)
        if len(self._kept) > self._size:
            self._kept.popitem(last=False)
        return got, held, weights


def _update(got: _Weights, moved: list[tuple[str, float, Arrays | None]]) -> None:
    """Take back what the moved peers' pods carried where they were; add it where they are."""
    w, parts = got.rows, got.parts
    for peer, rate, now in moved:
        old = parts.pop(peer, None)
        if old is not None:
            w[old[0][0]] -= old[0][1] * old[1]  # a workload's rows are distinct: no repeated index
        if now is not None:
            share = rate / now[2]
            w[now[0]] += now[1] * share
            parts[peer] = (now, share)


def local_weight(index: WorkloadIndex, edges: Mapping[str, float], row: int) -> float:
    """The part of the edges' rates carried by the peers' pods on `row`."""
    total = 0.0
    for peer, rate in edges.items():
        k = index.rows.get(peer, {}).get(row)
        if k:
            total += rate * k / index.placed(peer)
    return total
