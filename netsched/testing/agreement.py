"""Check a plugin's per-node and batch forms agree, and return what they decided.

Every Filter plugin implements filter() (one NodeInfo) and filter_nodes() (the
snapshot's node table); every Score plugin score() and score_nodes().  The
runtime calls the batch forms, preemption the per-node filter.  These helpers
run both forms over the same rows and fail the test when they disagree, so a
plugin test asserts on one answer knowing the other form gives it too.

- `filter_statuses`: row -> the per-node Status (checked against the batch).
- `filter_verdicts`: PreFilter + both forms over a cluster built from builders.
- `score_outcomes`: raw scores of rows (PreScore first, both forms checked).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.extension_points import (
    AnyArgs,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from netsched.framework.snapshot import IntArray, Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import PodInfo
from netsched.testing.builders import PodBuilder, node_infos

OK = "ok"

Verdict = tuple[Code, tuple[str, ...]] | None


def verdict(st: Status) -> Verdict:
    """None when the node fits, else (code, reasons)."""
    return None if st.ok else (st.code, tuple(st.reasons))


def filter_statuses(
    plugin: FilterPlugin[AnyArgs],
    pod: PodInfo,
    snapshot: Snapshot,
    idx: IntArray | None = None,
    *,
    state: CycleState | None = None,
    fresh_state_per_node: bool = False,
) -> dict[int, Status]:
    """row -> filter()'s Status for each row of `idx` (default: all, in that order).

    filter_nodes() over `idx` must reject exactly the rows filter() rejects, with
    the same code and reasons, each row at most once.  `state` is the cycle state
    (after PreFilter, if the caller ran it); with `fresh_state_per_node` every
    filter() call gets a new CycleState (the plugin computes afresh).
    """
    idx = snapshot.all_rows if idx is None else idx
    state = state if state is not None else CycleState()
    batch: dict[int, Verdict] = dict.fromkeys(idx.tolist())
    for rej in plugin.filter_nodes(state, pod, snapshot, idx):
        assert rej.mask.shape == (len(idx),), f"mask of shape {rej.mask.shape} for {len(idx)} rows"
        for j in np.flatnonzero(rej.mask).tolist():
            row = int(idx[j])
            assert batch[row] is None, f"node {snapshot.nodes[row].name} rejected twice"
            batch[row] = (rej.code, tuple(rej.reasons))
    out: dict[int, Status] = {}
    for row in idx.tolist():
        out[row] = plugin.filter(CycleState() if fresh_state_per_node else state, pod, snapshot.nodes[row])
    per_node = {row: verdict(st) for row, st in out.items()}
    assert per_node == batch, f"per-node {per_node} != batch {batch}"
    return out


def filter_verdicts(
    plugin: FilterPlugin[AnyArgs],
    pod: PodInfo | PodBuilder,
    nodes: Sequence[Any],
    existing: Sequence[Any] = (),
) -> dict[str, Any]:
    """node -> OK | (code, first reason) | "skip" (when PreFilter skips), both forms checked equal."""
    pi = pod.info() if isinstance(pod, PodBuilder) else pod
    snap = Snapshot.of(node_infos(list(nodes), list(existing)))
    state = CycleState()
    if isinstance(plugin, PreFilterPlugin):
        _, st = plugin.pre_filter(state, pi, snap)
        if st.is_skip:
            return dict.fromkeys((n.name for n in snap.nodes), "skip")
        assert st.ok, st
    statuses = filter_statuses(plugin, pi, snap, state=state)
    return {snap.nodes[row].name: OK if s.ok else (s.code, s.reasons[0]) for row, s in statuses.items()}


def score_outcomes(
    plugin: ScorePlugin[AnyArgs],
    pod: PodInfo,
    snapshot: Snapshot,
    idx: IntArray | None = None,
    *,
    state: CycleState | None = None,
) -> list[int]:
    """Raw scores of rows `idx` (default all): score_nodes() checked equal to score() per node.

    A PreScore plugin's pre_score runs first on a fresh state (it must succeed);
    pass `state` to score on a state the caller prepared instead.  Either way the state's
    score_rows are `idx` unless the caller set others, as the runtime sets them.
    """
    idx = snapshot.all_rows if idx is None else idx
    if state is None:
        state = CycleState()
        state.score_rows = idx
        if isinstance(plugin, PreScorePlugin):
            st = plugin.pre_score(state, pod, snapshot, idx)
            assert st.ok, st
    if state.score_rows is None:
        state.score_rows = idx
    batch: list[int] = np.asarray(plugin.score_nodes(state, pod, snapshot, idx)).tolist()
    per_node = [plugin.score(state, pod, snapshot.nodes[i]) for i in idx.tolist()]
    assert batch == per_node, f"batch {batch} != per-node {per_node}"
    return per_node
