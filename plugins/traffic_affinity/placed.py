"""Where the peers are: placed pods by workload, and the peers' weight on each node-table row.

WorkloadIndex keeps the snapshot's pods (bound and assumed) per workload and
row, re-reading only the rows the snapshot replaced; peers_of turns a
workload's edges into the weight its peers put on the rows holding them
(sparse: per pod, the work follows the peers' pods, not the nodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from netsched.framework import FloatArray, IntArray, NodeInfo, PodInfo, Snapshot, workload_key


@dataclass(frozen=True, slots=True)
class Peers:
    """Where the pod's peers sit, sparse: one entry per (peer workload, row holding its pods)."""

    held: IntArray  # rows (may repeat: two peer workloads on one node)
    weights: FloatArray  # bytes/s of the pod's edges carried by that peer's pods on that row
    total: float


# Labels naming the template a controller made a pod from (Deployments' ReplicaSets, then
# StatefulSets and DaemonSets): two of them in one workload mean it is rolling out.
TEMPLATE_LABELS = ("pod-template-hash", "controller-revision-hash")


def template_of(pod: PodInfo) -> str:
    """The pod's template revision ("" when no controller labelled it)."""
    for key in TEMPLATE_LABELS:
        got = pod.labels.get(key)
        if got:
            return got
    return ""


_NO_ROWS: IntArray = np.zeros(0, dtype=np.int64)
_NO_WEIGHTS: FloatArray = np.zeros(0, dtype=np.float64)

# A workload's placed pods: (rows, pods on each row, total pods).
Arrays = tuple[IntArray, FloatArray, int]


class WorkloadIndex:
    """Placed pods (bound and assumed) per workload and row, kept current with the snapshot.

    A cycle re-reads only the rows the snapshot replaced since the last sync
    (Snapshot.replaced_since); a new layout rebuilds it.  Terminating pods are left out:
    their traffic is leaving with them; so are the pods of a template the workload is rolling
    out of (`superseded`): a rollout deletes them, so they neither hold their peers' traffic
    on their node nor pull new pods next to them.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        self._snapshot: Snapshot | None = None
        self._layout = -1
        self._row_workloads: list[dict[str, int]] = []
        self._seen = 0  # the snapshot's row_counter when last synced
        self._arrays: dict[str, Arrays] = {}  # workload -> rows, pods, total
        self._totals: dict[str, int] = {}  # workload -> placed pods
        self.rows: dict[str, dict[int, int]] = {}  # workload -> row -> pods
        self.superseded: dict[str, frozenset[str]] = {}  # workload -> templates being replaced

    def set_superseded(self, workload: str, templates: frozenset[str]) -> None:
        """The workload's templates a rollout replaces (empty: none); a change re-reads every
        row at the next sync (rollouts are rare: one full pass each time one starts or ends)."""
        if self.superseded.get(workload, frozenset()) == templates:
            return
        if templates:
            self.superseded[workload] = templates
        else:
            del self.superseded[workload]
        self._snapshot = None

    def sync(self, snapshot: Snapshot) -> None:
        nodes = snapshot.nodes
        if (
            self._snapshot is not snapshot
            or self._layout != snapshot.layout_version
            or len(nodes) != len(self._row_workloads)
        ):
            self._snapshot, self._layout = snapshot, snapshot.layout_version
            self._row_workloads = [{} for _ in nodes]
            self.rows = {}
            self._arrays = {}
            self._totals = {}
            changed: Iterable[int] = range(len(nodes))
        elif snapshot.row_counter == self._seen:
            return
        else:
            changed = snapshot.replaced_since(self._seen)
        self._seen = snapshot.row_counter
        for row in changed:
            self._reindex(row, nodes[row])

    def _reindex(self, row: int, node: NodeInfo) -> None:
        counts: dict[str, int] = {}
        superseded = self.superseded
        for pod in node.pods.values():
            if not pod.deleting:
                wl = workload_key(pod, self._label)
                if superseded and template_of(pod) in superseded.get(wl, ()):
                    continue
                counts[wl] = counts.get(wl, 0) + 1
        old = self._row_workloads[row]
        for wl in old.keys() | counts.keys():
            before, now = old.get(wl, 0), counts.get(wl, 0)
            if before == now:
                continue  # this workload did not move: its kept arrays stay valid
            self._arrays.pop(wl, None)
            self._totals[wl] = total = self._totals.get(wl, 0) + now - before
            per_row = self.rows.setdefault(wl, {})
            if now:
                per_row[row] = now
            else:
                del per_row[row]
            if not total:
                del self.rows[wl], self._totals[wl]
        self._row_workloads[row] = counts

    def placed(self, workload: str) -> int:
        return self._totals.get(workload, 0)

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


def peers_of(index: WorkloadIndex, edges: Mapping[str, float]) -> Peers:
    """Each edge's rate shared among the peer workload's placed pods: one pass over the
    peers' kept arrays (work grows with the peers and their rows, never with the nodes)."""
    rows: list[IntArray] = []
    weights: list[FloatArray] = []
    total = 0.0
    known, arrays = index.rows, index.arrays
    for peer, rate in edges.items():
        if peer in known:
            at, pods, n = arrays(peer)
            rows.append(at)
            weights.append(pods * (rate / n))
            total += rate
    if not rows:
        return Peers(_NO_ROWS, _NO_WEIGHTS, 0.0)
    if len(rows) == 1:
        return Peers(rows[0], weights[0], total)
    return Peers(np.concatenate(rows), np.concatenate(weights), total)
