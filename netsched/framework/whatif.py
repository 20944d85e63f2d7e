"""PreFilter and Filter over snapshot rows: the node search's first pass and the Handle's "what if".

The node search asks which rows PreFilter leaves before it filters; a plugin asks
whether a pod that is not being scheduled (a group's member while the group's placement
is decided) would pass on rows of a snapshot it may have changed.  Both run the
profile's real PreFilter and Filter through the runtime, so the answer is the one a
scheduling cycle would give; nothing is reserved.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.diagnosis import Diagnosis
from netsched.framework.errors import PluginFault
from netsched.framework.extension_points import PreFilterResult
from netsched.framework.snapshot import IntArray, Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import PodInfo


class FilterRunner(Protocol):
    """The runtime's PreFilter and batch Filter (netsched.framework.runtime.Framework)."""

    def new_cycle_state(self) -> CycleState: ...

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, skip: Collection[str] = ()
    ) -> tuple[PreFilterResult | None, Status]: ...

    def run_filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray, diagnosis: Diagnosis
    ) -> IntArray: ...


def pre_filter_rows(
    fwk: FilterRunner,
    state: CycleState,
    pod: PodInfo,
    snapshot: Snapshot,
    rows: IntArray | None = None,
    skip: Collection[str] = (),
) -> tuple[IntArray | None, Diagnosis, Status]:
    """PreFilter (but `skip`) ahead of a Filter pass over snapshot `rows` (None: all rows).

    Returns the rows PreFilter's node set allows (those of `rows`, in their order; in
    row order when `rows` is None; None when PreFilter allows every node), the new
    Diagnosis the pass records into, and PreFilter's status.  A rejection is recorded
    in the diagnosis (message, code of each row, plugin); PluginFault on an error."""
    n = len(snapshot)
    diagnosis = Diagnosis(n, np.zeros(n, dtype=np.int8))
    pre, st = fwk.run_pre_filter(state, pod, snapshot, skip)
    if not st.ok:
        if st.code == Code.ERROR:
            raise PluginFault(st)
        diagnosis.pre_filter_msg = st.message()
        diagnosis.node_codes[slice(None) if rows is None else rows] = st.code
        diagnosis.unschedulable_plugins.add(st.plugin)
        return None, diagnosis, st
    if pre is None or pre.node_names is None:
        return None, diagnosis, st
    index = snapshot.index
    if rows is None:
        allowed = sorted(index[name] for name in pre.node_names if name in index)
        return np.asarray(allowed, dtype=np.int64), diagnosis, st
    named = np.asarray([index[name] for name in pre.node_names if name in index], dtype=np.int64)
    return rows[np.isin(rows, named)], diagnosis, st


def filter_rows(
    fwk: FilterRunner, pod: PodInfo, snapshot: Snapshot, rows: IntArray, skip: Collection[str] = ()
) -> tuple[IntArray, Diagnosis]:
    """PreFilter (but `skip`) and batch Filter for a pod that is not being scheduled: the rows
    that pass, and the diagnosis of the others. Raises PluginFault on a plugin error."""
    state = fwk.new_cycle_state()
    allowed, diagnosis, st = pre_filter_rows(fwk, state, pod, snapshot, rows, skip)
    if not st.ok:
        return rows[:0], diagnosis
    rows = rows if allowed is None else allowed
    return fwk.run_filter_nodes(state, pod, snapshot, rows, diagnosis), diagnosis
