"""Check a filter plugin's per-node and batch forms agree, and return its verdicts.

Every Filter plugin implements filter() (one NodeInfo) and filter_nodes() (the
snapshot's node table); the runtime calls the batch form, preemption the
per-node one.  `filter_verdicts` runs PreFilter and both forms over the same
cluster and fails the test when they disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.interfaces import FilterPlugin, PreFilterPlugin
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo
from netsched.testing.builders import PodBuilder, node_infos

OK = "ok"


def filter_verdicts(
    plugin: FilterPlugin, pod: PodInfo | PodBuilder, nodes: Sequence[Any], existing: Sequence[Any] = ()
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
    per_node: dict[str, Any] = {}
    for n in snap.nodes:
        s = plugin.filter(state, pi, n)
        per_node[n.name] = OK if s.ok else (s.code, s.reasons[0])
    batch: dict[str, Any] = {n.name: OK for n in snap.nodes}
    for rej in plugin.filter_nodes(state, pi, snap, snap.all_rows):
        for row in np.flatnonzero(rej.mask).tolist():
            assert batch[snap.nodes[row].name] == OK, "a node rejected twice"
            batch[snap.nodes[row].name] = (rej.code, rej.reasons[0])
    assert per_node == batch, f"per-node {per_node} != batch {batch}"
    return per_node
