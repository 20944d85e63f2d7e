"""Bound pods grouped by workload, with per-row counts, for plugins that count pods.

InterPodAffinity and PodTopologySpread both ask, for every pod they place,
"how many pods matching this selector sit in each topology domain".  Checking
every pod of a 5000-node cluster for every scheduled pod costs tens of
milliseconds in Python.  Pods of one workload look alike, so the index keeps
groups with their pod count on each snapshot row: by (namespace, labels,
terminating) for selectors, and by (namespace, affinity terms) for pods with
affinity.  A selector is checked once per group, the answer is remembered,
and so is the selection's per-row sum, kept current as rows change; counts
per domain are then one bincount over the node table.

The index follows the snapshot: the cache swaps in a new NodeInfo object for
every node that changed, so rows whose object changed since the last cycle are
re-indexed and the rest cost one identity check; a new layout rebuilds it all.
It lives in `snapshot.cache` and in the cycle state, so all plugins of one
cycle share one synced index.

It lives in the framework, not in a plugin folder, because several plugins
share it (InterPodAffinity and PodTopologySpread), as kube keeps shared
plugin helpers next to the framework.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import BoolArray, IntArray, Snapshot
from netsched.framework.types import NodeInfo, PodInfo

INDEX_KEY = "netsched/pod-index"
# A group on at least this many rows keeps a dense per-row vector, so summing
# it is one vector add instead of a Python loop over its rows.
DENSE_MIN_ROWS = 48
# Remembered selector answers; dropped all at once when the cache grows past this.
MAX_SELECTIONS = 4096
# Rebuild (compacting away groups whose pods are all gone) past this many empty groups.
MIN_EMPTY_FOR_COMPACTION = 256


class LookalikePods:
    """Pods that look the same to every selector and affinity term: one workload, usually
    (lookalikes: not a group a plugin declares; those are its own pod index)."""

    __slots__ = (
        "gid",
        "namespace",
        "labels",
        "deleting",
        "rep",
        "rows",
        "total",
        "dense",
        "memo",
        "watchers",
    )

    def __init__(self, gid: int, rep: PodInfo) -> None:
        self.gid = gid
        self.namespace = rep.namespace
        self.labels: Mapping[str, str] = rep.labels
        self.deleting = rep.deleting
        self.rep = rep  # any member: its affinity terms are the group's
        self.rows: dict[int, int] = {}  # snapshot row -> pods of this group on it
        self.total = 0
        self.dense: IntArray | None = None
        self.memo: Any = None  # derived data a plugin caches per group (compiled terms)
        self.watchers: list[_Selection] = []  # remembered selections whose summed vector includes this group

    def bump(self, row: int, delta: int, n_rows: int) -> None:
        for sel in self.watchers:
            sel.add(row, delta)
        n = self.rows.get(row, 0) + delta
        if n:
            self.rows[row] = n
        else:
            self.rows.pop(row, None)
        self.total += delta
        if self.dense is not None:
            self.dense[row] += delta
        elif len(self.rows) >= DENSE_MIN_ROWS:
            dense = np.zeros(n_rows, dtype=np.int64)
            for r, k in self.rows.items():
                dense[r] = k
            self.dense = dense

    def add_to(self, vec: IntArray, weight: int = 1) -> None:
        """vec[row] += weight x (pods of this group on row), for every row."""
        if self.dense is not None:
            if weight == 1:
                vec += self.dense
            else:
                vec += self.dense * weight
            return
        for r, k in self.rows.items():
            vec[r] += k * weight


@dataclass(slots=True)
class _Selection:
    progress: dict[str | None, int] = field(default_factory=dict)
    gids: list[int] = field(default_factory=list)
    vec: IntArray | None = None  # pods of all selected groups per row, kept current once built

    def add(self, row: int, delta: int) -> None:
        if self.vec is not None:
            self.vec[row] += delta


_LabelKey = tuple[str, frozenset[tuple[str, str]], bool]
_TermKey = tuple[str, Any, frozenset[tuple[str, str]]]


class PodIndex:
    """Two groupings of the snapshot's pods, each with per-row counts.

    `groups`: by (namespace, labels, terminating): what selectors match.
    `term_groups`: pods with affinity terms, by (namespace, terms, the labels
    their matchLabelKeys/mismatchLabelKeys read): whose terms select the
    incoming pod.  The second keeps a StatefulSet (a distinct label per pod)
    at one term group.
    """

    __slots__ = (
        "snapshot",
        "layout",
        "n_rows",
        "row_nodes",
        "row_gids",
        "row_tgids",
        "groups",
        "term_groups",
        "affinity_gids",
        "anti_affinity_gids",
        "_by_key",
        "_by_term_key",
        "_by_ns",
        "_empty",
        "_selections",
    )

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.snapshot: Snapshot | None = None
        self.layout = -1
        self.n_rows = 0
        self.row_nodes: list[NodeInfo] = []
        self.row_gids: list[list[int]] = []
        self.row_tgids: list[list[int]] = []
        self.groups: list[LookalikePods] = []
        self.term_groups: list[LookalikePods] = []
        self.affinity_gids: list[int] = []  # term groups with any (anti-)affinity term
        self.anti_affinity_gids: list[int] = []  # term groups with required anti-affinity
        self._by_key: dict[_LabelKey, int] = {}
        self._by_term_key: dict[_TermKey, int] = {}
        self._by_ns: dict[str, list[int]] = {}
        self._empty = 0
        self._selections: dict[Hashable, _Selection] = {}

    def clone(self) -> PodIndex:
        # Read-only for plugins: cycle-state clones (preemption) share it.
        return self

    # ------------------------------------------------------------ maintenance

    def sync(self, snapshot: Snapshot) -> None:
        nodes = snapshot.nodes
        if (
            self.snapshot is not snapshot
            or self.layout != snapshot.layout_version
            or len(nodes) != self.n_rows
            or self._empty > max(MIN_EMPTY_FOR_COMPACTION, (len(self.groups) + len(self.term_groups)) // 2)
        ):
            self._rebuild(snapshot)
            return
        # C-speed scan for the rows whose NodeInfo object was swapped.
        for row in compress(range(len(nodes)), map(operator.is_not, nodes, self.row_nodes)):
            self._reindex(row, nodes[row])

    def _rebuild(self, snapshot: Snapshot) -> None:
        self._reset()
        self.snapshot = snapshot
        self.layout = snapshot.layout_version
        self.n_rows = len(snapshot.nodes)
        self.row_nodes = list(snapshot.nodes)
        self.row_gids = [[] for _ in snapshot.nodes]
        self.row_tgids = [[] for _ in snapshot.nodes]
        for row, node in enumerate(snapshot.nodes):
            self._add_row(row, node)

    def _reindex(self, row: int, node: NodeInfo) -> None:
        for gid in self.row_gids[row]:
            self._bump(self.groups[gid], row, -1)
        for gid in self.row_tgids[row]:
            self._bump(self.term_groups[gid], row, -1)
        self._add_row(row, node)
        self.row_nodes[row] = node

    def _add_row(self, row: int, node: NodeInfo) -> None:
        gids = []
        tgids = []
        for pod in node.pods.values():
            g = self._group_for(pod)
            self._bump(g, row, 1)
            gids.append(g.gid)
            if pod.has_affinity:
                t = self._term_group_for(pod)
                self._bump(t, row, 1)
                tgids.append(t.gid)
        self.row_gids[row] = gids
        self.row_tgids[row] = tgids

    def _bump(self, g: LookalikePods, row: int, delta: int) -> None:
        before = g.total
        g.bump(row, delta, self.n_rows)
        if before == 0 and g.total:
            self._empty -= 1
        elif before and g.total == 0:
            self._empty += 1

    def _group_for(self, pod: PodInfo) -> LookalikePods:
        key = (pod.namespace, frozenset(pod.labels.items()), pod.deleting)
        gid = self._by_key.get(key)
        if gid is not None:
            return self.groups[gid]
        g = LookalikePods(len(self.groups), pod)
        self.groups.append(g)
        self._by_key[key] = g.gid
        self._by_ns.setdefault(pod.namespace, []).append(g.gid)
        self._empty += 1
        return g

    def _term_group_for(self, pod: PodInfo) -> LookalikePods:
        sig = (
            pod.required_affinity,
            pod.preferred_affinity,
            pod.required_anti_affinity,
            pod.preferred_anti_affinity,
        )
        read = _label_keys_read(pod)
        key = (pod.namespace, sig, frozenset((k, v) for k, v in pod.labels.items() if k in read))
        gid = self._by_term_key.get(key)
        if gid is not None:
            return self.term_groups[gid]
        g = LookalikePods(len(self.term_groups), pod)
        self.term_groups.append(g)
        self._by_term_key[key] = g.gid
        self.affinity_gids.append(g.gid)
        if pod.required_anti_affinity:
            self.anti_affinity_gids.append(g.gid)
        self._empty += 1
        return g

    # ------------------------------------------------------------ queries

    def live(self, gids: Iterable[int]) -> list[LookalikePods]:
        groups = self.groups
        return [g for g in (groups[i] for i in gids) if g.total]

    def live_term_groups(self, gids: Iterable[int]) -> list[LookalikePods]:
        """Term groups (ids from affinity_gids / anti_affinity_gids) that still have pods."""
        groups = self.term_groups
        return [g for g in (groups[i] for i in gids) if g.total]

    def select(
        self, key: Hashable | None, namespaces: frozenset[str] | None, pred: Callable[[LookalikePods], bool]
    ) -> list[LookalikePods]:
        """Live groups (in `namespaces`, or any namespace when None) for which pred holds.

        With a key the answer is remembered and only groups created since are
        checked next time, so pred must depend on nothing but the group's
        namespace, labels, terminating flag and terms (never on counts).
        """
        return self.live(self._selection(key, namespaces, pred).gids)

    def select_counts(
        self, key: Hashable | None, namespaces: frozenset[str] | None, pred: Callable[[LookalikePods], bool]
    ) -> IntArray:
        """Pods per row of the groups select() would return.  Read-only: with a key the
        vector is remembered and kept current as rows change, so a workload split into
        many groups (a distinct label per pod) costs nothing more per cycle."""
        sel = self._selection(key, namespaces, pred)
        if sel.vec is not None:
            return sel.vec
        vec = np.zeros(self.n_rows, dtype=np.int64)
        for gid in sel.gids:
            g = self.groups[gid]
            g.add_to(vec)
            if key is not None:
                g.watchers.append(sel)
        if key is not None:
            sel.vec = vec
        return vec

    def _selection(
        self, key: Hashable | None, namespaces: frozenset[str] | None, pred: Callable[[LookalikePods], bool]
    ) -> _Selection:
        sel = self._selections.get((key, namespaces)) if key is not None else None
        if sel is None:
            sel = _Selection()
            if key is not None:
                if len(self._selections) >= MAX_SELECTIONS:
                    self._drop_selections()
                self._selections[(key, namespaces)] = sel
        sources: Iterable[tuple[str | None, Sequence[int]]]
        if namespaces is None:
            sources = ((None, range(len(self.groups))),)
        else:
            sources = ((ns, self._by_ns.get(ns, ())) for ns in namespaces)
        groups = self.groups
        for ns, gids in sources:
            start = sel.progress.get(ns, 0)
            if start >= len(gids):
                continue
            for gid in gids[start:]:
                g = groups[gid]
                if pred(g):
                    sel.gids.append(gid)
                    if sel.vec is not None:
                        g.add_to(sel.vec)
                        g.watchers.append(sel)
            sel.progress[ns] = len(gids)
        return sel

    def _drop_selections(self) -> None:
        self._selections.clear()
        for g in self.groups:
            g.watchers.clear()

    def row_counts(self, groups: Iterable[LookalikePods]) -> IntArray:
        """Pods of these groups on each snapshot row."""
        vec = np.zeros(self.n_rows, dtype=np.int64)
        for g in groups:
            if g.total:
                g.add_to(vec)
        return vec


def _label_keys_read(pod: PodInfo) -> set[str]:
    """Labels of the pod its own terms read (matchLabelKeys / mismatchLabelKeys)."""
    out: set[str] = set()
    for t in pod.required_affinity + pod.required_anti_affinity:
        out.update(t.match_label_keys, t.mismatch_label_keys)
    for w in pod.preferred_affinity + pod.preferred_anti_affinity:
        out.update(w.term.match_label_keys, w.term.mismatch_label_keys)
    return out


def synced_pod_index(state: CycleState, snapshot: Snapshot, previous: PodIndex | None = None) -> PodIndex:
    """The index synced to `snapshot`, synced once per cycle whichever plugin asks first.

    `previous` is the caller's last index: reused when the snapshot cache was
    cleared (a node's labels changed) but the rows are the same, so a label
    change does not cost a full rebuild.
    """
    got = state.get(INDEX_KEY)
    if isinstance(got, PodIndex) and got.snapshot is snapshot and got.layout == snapshot.layout_version:
        return got
    index = snapshot.cache.get(INDEX_KEY)
    if not isinstance(index, PodIndex):
        if (
            previous is not None
            and previous.snapshot is snapshot
            and previous.layout == snapshot.layout_version
        ):
            index = previous
        else:
            index = PodIndex()
        snapshot.cache[INDEX_KEY] = index
    index.sync(snapshot)
    state.write(INDEX_KEY, index)
    return index


# ---------------------------------------------------------------- topology values


@dataclass(slots=True, frozen=True)
class LabelCodes:
    """One node label over the snapshot rows, as small integers.

    `codes[row]` indexes `values`, or is -1 where the node lacks the label.
    Arrays indexed by code are allocated with one extra trailing slot kept at
    zero, so `arr[codes[rows]]` reads 0 for rows without the label.
    """

    codes: IntArray
    values: tuple[str, ...]
    index: Mapping[str, int]

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def present(self) -> BoolArray:
        return self.codes >= 0

    def sum_rows(self, row_values: IntArray, mask: BoolArray | None = None) -> IntArray:
        """Per code (plus the zero slot): the sum of row_values over rows with that value."""
        valid = self.codes >= 0
        if mask is not None:
            valid &= mask
        out = np.bincount(self.codes[valid], weights=row_values[valid], minlength=self.size + 1)
        return np.rint(out).astype(np.int64)


def label_codes(snapshot: Snapshot, key: str) -> LabelCodes:
    """Codes of node label `key`, cached in the snapshot (cleared when labels change)."""
    ck = f"codes:{key}"
    got = snapshot.cache.get(ck)
    if isinstance(got, LabelCodes):
        return got
    index: dict[str, int] = {}
    out = []
    for v in snapshot.label_column(key).tolist():
        if v is None:
            out.append(-1)
        else:
            c = index.get(v)
            if c is None:
                c = index[v] = len(index)
            out.append(c)
    codes = LabelCodes(np.asarray(out, dtype=np.int64), tuple(index), index)
    snapshot.cache[ck] = codes
    return codes
