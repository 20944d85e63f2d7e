"""The per-cycle view of the cluster: NodeInfos plus a NumPy node table.

The cache hands the scheduling thread a Snapshot that stays still for the
whole cycle.  Row i of every array is `nodes[i]`.  Batch plugins compare a
pod's requests with `allocatable - requested` for thousands of nodes in a
few vector operations instead of a Python loop per node.

The table is updated in place row by row when a node's generation changes;
`layout_version` changes only when rows are added, removed or reordered or a
resource column appears, so plugins may cache per-row data keyed by it.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import numpy.typing as npt

from netsched.framework.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from netsched.framework.rowlog import RowLog
from netsched.framework.types import NodeInfo

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)

# What batch plugins take and give: snapshot rows (`idx`) or an int64 per row (scores),
# a mask over rows, and a float64 per row (utilisation, link load).
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


class Snapshot:
    __slots__ = (
        "nodes",
        "index",
        "resources",
        "col",
        "allocatable",
        "requested",
        "nonzero_requested",
        "unschedulable",
        "layout_version",
        "allocatable_version",
        "generation",
        "row_version",
        "_replaced",
        "cache",
        "affinity_pods",
        "anti_affinity_pods",
        "_with_affinity",
        "_with_anti_affinity",
    )

    def __init__(self) -> None:
        self.nodes: list[NodeInfo] = []
        self.index: dict[str, int] = {}
        self.resources: list[str] = list(BASE_RESOURCES)
        self.col: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        self.allocatable: npt.NDArray[np.int64] = np.zeros((0, len(self.resources)), dtype=np.int64)
        self.requested: npt.NDArray[np.int64] = np.zeros((0, len(self.resources)), dtype=np.int64)
        self.nonzero_requested: npt.NDArray[np.int64] = np.zeros((0, 2), dtype=np.int64)
        self.unschedulable: BoolArray = np.zeros(0, dtype=bool)
        # Per-row counts of pods with (anti-)affinity terms / required anti-affinity,
        # so "which nodes hold such pods" is one vector op, not a scan of NodeInfos.
        self.affinity_pods: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.anti_affinity_pods: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.layout_version = 0
        # Changes whenever any row's allocatable may have changed, so per-row data derived
        # from it (e.g. utilisation ratios) can be kept between cycles.
        self.allocatable_version = 0
        self.generation = 0
        # When each row was last replaced (a counter, not a time): an index kept per row
        # re-reads only rows newer than what it saw, one vector compare instead of a scan.
        self.row_version: IntArray = np.zeros(0, dtype=np.int64)
        self._replaced = RowLog()  # rows replaced by set_node (row_version r: the r-th)
        # Derived per-layout data plugins want to keep between cycles (e.g. a
        # label column); cleared whenever layout_version changes.
        self.cache: dict[str, Any] = {}
        self._with_affinity: list[NodeInfo] | None = None
        self._with_anti_affinity: list[NodeInfo] | None = None

    def __len__(self) -> int:
        return len(self.nodes)

    def get(self, name: str) -> NodeInfo | None:
        i = self.index.get(name)
        return None if i is None else self.nodes[i]

    @property
    def row_counter(self) -> int:
        """The row_version of the latest replaced row (0: none yet).  It never goes back, not
        even at a rebuild (which sets every row's row_version to 0), so a reader's old counter
        never hides a newer replacement."""
        return self._replaced.counter

    def replaced_since(self, counter: int) -> list[int]:
        """Rows replaced after row_counter was `counter` (may repeat), without a pass over all
        rows when the log still holds them."""
        rows = self._replaced.since(counter)
        return np.flatnonzero(self.row_version > counter).tolist() if rows is None else rows

    @property
    def all_rows(self) -> IntArray:
        return np.arange(len(self.nodes), dtype=np.int64)

    # ------------------------------------------------------------ building

    def rebuild(self, nodes: list[NodeInfo]) -> None:
        """Replace every row (node set changed)."""
        self.nodes = nodes
        self.index = {n.name: i for i, n in enumerate(nodes)}
        names = set(BASE_RESOURCES)
        extra = sorted({r for n in nodes for r in n.allocatable if r not in names})
        self.resources = list(BASE_RESOURCES) + extra
        self.col = {r: i for i, r in enumerate(self.resources)}
        n, r = len(nodes), len(self.resources)
        self.allocatable = np.zeros((n, r), dtype=np.int64)
        self.requested = np.zeros((n, r), dtype=np.int64)
        self.nonzero_requested = np.zeros((n, 2), dtype=np.int64)
        self.unschedulable = np.zeros(n, dtype=bool)
        self.affinity_pods = np.zeros(n, dtype=np.int32)
        self.anti_affinity_pods = np.zeros(n, dtype=np.int32)
        self.row_version = np.zeros(n, dtype=np.int64)
        self._replaced.restart()  # the log named rows of the old layout
        for i, node in enumerate(nodes):
            self._fill_row(i, node)
        self.layout_version += 1
        self.allocatable_version += 1
        self.cache.clear()
        self._dirty_affinity()

    def set_node(self, i: int, node: NodeInfo) -> bool:
        """Replace row i. Returns False when the node brings a resource column the table lacks."""
        if any(r not in self.col for r in node.allocatable) or any(r not in self.col for r in node.requested):
            return False
        old = self.nodes[i]
        self.nodes[i] = node
        if old.allocatable != node.allocatable:
            self.allocatable_version += 1
        self._fill_row(i, node)
        self.row_version[i] = self._replaced.append(i)
        if old.labels is not node.labels or old.taints is not node.taints or old.images is not node.images:
            # Label/taint/image-derived caches are keyed by layout; a changed node invalidates
            # them (the cache keeps these objects when an update leaves them equal).
            self.cache.clear()
        self._dirty_affinity()
        return True

    def _fill_row(self, i: int, node: NodeInfo) -> None:
        col = self.col
        arow = self.allocatable[i]
        arow[:] = 0
        for res, v in node.allocatable.items():
            arow[col[res]] = v
        rrow = self.requested[i]
        rrow[:] = 0
        for res, v in node.requested.items():
            j = col.get(res)
            if j is not None:
                rrow[j] = v
        self.nonzero_requested[i, 0] = node.nonzero_cpu
        self.nonzero_requested[i, 1] = node.nonzero_memory
        self.unschedulable[i] = node.unschedulable
        self.affinity_pods[i] = node.pods_with_affinity
        self.anti_affinity_pods[i] = node.pods_with_required_anti_affinity

    def _dirty_affinity(self) -> None:
        self._with_affinity = None
        self._with_anti_affinity = None

    # ------------------------------------------------------------ queries

    def nodes_with_pod_affinity(self) -> list[NodeInfo]:
        """Nodes holding at least one pod with (anti-)affinity terms (InterPodAffinity's fast path)."""
        if self._with_affinity is None:
            nodes = self.nodes
            self._with_affinity = [nodes[i] for i in np.flatnonzero(self.affinity_pods).tolist()]
        return self._with_affinity

    def nodes_with_required_anti_affinity(self) -> list[NodeInfo]:
        if self._with_anti_affinity is None:
            nodes = self.nodes
            self._with_anti_affinity = [nodes[i] for i in np.flatnonzero(self.anti_affinity_pods).tolist()]
        return self._with_anti_affinity

    def label_column(self, key: str) -> npt.NDArray[np.object_]:
        """Per-row value of node label `key` (None where absent), cached per layout."""
        ck = f"label:{key}"
        got = self.cache.get(ck)
        if got is None:
            got = np.array([n.labels.get(key) for n in self.nodes], dtype=object)
            self.cache[ck] = got
        return got

    # ------------------------------------------------------------ what-ifs

    def what_if(self, previous: Snapshot | None = None) -> Snapshot:
        """A snapshot equal to this one whose rows a caller may replace with cloned NodeInfos
        (a trial placement) without touching this one, as kube clones a NodeInfo for what-ifs.

        Pass the caller's previous what-if back: while this snapshot's layout is the same, only
        the rows whose NodeInfo changed since are copied again, and its caches (label columns,
        the pod index) follow those rows instead of being rebuilt."""
        out = previous if previous is not None and previous is not self else Snapshot()
        if out.nodes and out.index is self.index and out.layout_version == self.layout_version:
            for row in np.flatnonzero(
                np.fromiter(map(operator.is_not, self.nodes, out.nodes), bool, len(self))
            ):
                out.set_node(int(row), self.nodes[int(row)])
            return out
        out.nodes = list(self.nodes)
        out.index = self.index
        out.resources = self.resources
        out.col = self.col
        out.allocatable = self.allocatable.copy()
        out.requested = self.requested.copy()
        out.nonzero_requested = self.nonzero_requested.copy()
        out.unschedulable = self.unschedulable.copy()
        out.affinity_pods = self.affinity_pods.copy()
        out.anti_affinity_pods = self.anti_affinity_pods.copy()
        out.row_version = self.row_version.copy()
        out._replaced = RowLog(self._replaced.counter)  # the copy logs its own replacements
        out.layout_version = self.layout_version
        out.allocatable_version = self.allocatable_version
        out.generation = self.generation
        out.cache = {}
        out._dirty_affinity()
        return out

    @classmethod
    def of(cls, nodes: list[NodeInfo]) -> Snapshot:
        """A snapshot over these NodeInfos (tests, simulation)."""
        s = cls()
        s.rebuild(nodes)
        return s
