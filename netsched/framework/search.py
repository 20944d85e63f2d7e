"""Finding a node for one pod: kube's schedulePod (pkg/scheduler/schedule_one.go).

PreFilter, then Filter over the snapshot's node table from a rotating start
until enough feasible nodes are found (adaptive percentageOfNodesToScore),
PostFilter (preemption) when none is, then PreScore and the score loop, and a
random pick among the best totals (unless the cycle's PreFilter named the node that
wins a tie: CycleState.tie_break).  The plugins themselves are called through
the profile's Framework (runtime.py); what lives here is which nodes to ask,
how many, and which answer wins.  A NodeSearch belongs to the scheduler, one
per profile, because the rotating start is the scheduler's state, not a
plugin's.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.diagnosis import Diagnosis
from netsched.framework.errors import PluginFault
from netsched.framework.extension_points import PluginScores
from netsched.framework.runtime import Framework
from netsched.framework.snapshot import IntArray, Snapshot
from netsched.framework.status import Code
from netsched.framework.types import PodInfo
from netsched.framework.whatif import pre_filter_rows

# kube: percentageOfNodesToScore adaptive defaults.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 50
# The first chunk of nodes a search filters is at least this big (vector operations pay off).
MIN_CHUNK = 128


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    evaluated_nodes: int
    feasible_nodes: int
    feasible: IntArray | None = None  # snapshot rows that passed, when more than one was scored
    totals: IntArray | None = None  # their total weighted scores, aligned with `feasible`


class FitError(Exception):
    """No node fits; carries the Diagnosis whose message() is kube's FailedScheduling text."""

    def __init__(self, pod: PodInfo, diagnosis: Diagnosis, nominated_node_name: str = "") -> None:
        super().__init__(diagnosis.message())
        self.pod = pod
        self.diagnosis = diagnosis
        # Set when PostFilter (preemption) made room: the pod retries for that node.
        self.nominated_node_name = nominated_node_name


def _next_chunk(chunk: int, need: int, filtered: int, passed: int) -> int:
    """How many nodes to filter next: enough for the `need` feasible nodes still wanted at the
    pass rate seen so far, plus a quarter, but no more than double the last chunk.  (Doubling
    blindly filters up to twice the nodes a search needs when filters reject a few nodes.)
    Which nodes are found does not depend on it: the search stops at the want-th feasible one."""
    if passed == 0:
        return chunk * 2
    expected = -(-need * filtered // passed)  # ceil
    return min(chunk * 2, max(MIN_CHUNK, expected + expected // 4))


def num_feasible_nodes_to_find(num_all: int, percentage: int | None) -> int:
    """kube's adaptive percentageOfNodesToScore."""
    if num_all < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all
    pct = percentage
    if pct is None or pct <= 0:
        pct = max(
            DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE - num_all // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
        )
    if pct >= 100:
        return num_all
    return max(num_all * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


def prioritize(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    snapshot: Snapshot,
    feasible: IntArray,
    breakdown: dict[str, PluginScores] | None = None,
) -> IntArray:
    """PreScore, then the score loop: total weighted scores aligned with `feasible`."""
    st = fwk.run_pre_score(state, pod, snapshot, feasible)
    if not st.ok:
        raise PluginFault(st)
    return fwk.run_score_plugins(state, pod, snapshot, feasible, breakdown)


def choose_node(fwk: Framework, pod: PodInfo, snapshot: Snapshot, prefer: str = "") -> str | None:
    """The node `fwk`'s plugins choose for `pod` on `snapshot`, every node filtered and every
    feasible one scored (no percentageOfNodesToScore: a what-if compares against all of them,
    not a sample), ties going to `prefer` when it is among the best, else to the first row;
    None when no node fits.  No PostFilter (preemption), nothing reserved: a plan's question
    (netsched.explain.Planner)."""
    fwk.set_snapshot(snapshot)
    if not len(snapshot):
        return None
    state = fwk.new_cycle_state()
    allowed, diagnosis, st = pre_filter_rows(fwk, state, pod, snapshot)
    if not st.ok:
        return None
    rows = snapshot.all_rows if allowed is None else allowed
    feasible = fwk.run_filter_nodes(state, pod, snapshot, rows, diagnosis)
    if not len(feasible):
        return None
    if len(feasible) == 1:
        return snapshot.nodes[int(feasible[0])].name
    totals = prioritize(fwk, state, pod, snapshot, feasible)
    best = feasible[totals == totals.max()]
    row = snapshot.index.get(prefer) if prefer else None
    if row is not None and row in best:
        return prefer
    return snapshot.nodes[int(best[0])].name


class NodeSearch:
    """schedulePod for one profile: keeps where the next search starts, and breaks ties."""

    def __init__(self, fwk: Framework, rng: random.Random | None = None) -> None:
        self.fwk = fwk
        self.next_start_node_index = 0
        self._rng = rng or random.Random()
        self._pass_rate = 1.0  # feasible / filtered nodes in the last search

    def seed(self, seed: int) -> None:
        """Make tie-breaks and plugin-metric sampling repeatable (simulations, tests)."""
        self._rng.seed(seed)
        self.fwk.seed(seed)

    def schedule(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        breakdown: dict[str, PluginScores] | None = None,
    ) -> ScheduleResult:
        """PreFilter -> Filter -> (PostFilter on failure) -> PreScore -> Score -> pick a node.

        With `breakdown`, each score plugin's scores are added to it (explain, tests).
        Raises FitError (no node fits; diagnosis attached, PostFilter already run)
        or PluginFault (a plugin error).
        """
        fwk = self.fwk
        fwk.set_snapshot(snapshot)
        n = len(snapshot)
        if n == 0:
            empty = Diagnosis(
                0, np.zeros(0, dtype=np.int8), pre_filter_msg="no nodes available to schedule pods"
            )
            raise FitError(pod, empty)
        allowed, diagnosis, st = pre_filter_rows(fwk, state, pod, snapshot)
        if not st.ok:
            raise self._fit_error(state, pod, diagnosis)
        feasible, evaluated = self.find_feasible(state, pod, snapshot, allowed, diagnosis)
        if len(feasible) == 0:
            raise self._fit_error(state, pod, diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(snapshot.nodes[int(feasible[0])].name, evaluated, 1)
        totals = prioritize(fwk, state, pod, snapshot, feasible, breakdown)
        best = np.flatnonzero(totals == totals.max())
        held = snapshot.index.get(state.tie_break) if state.tie_break else None
        named = np.flatnonzero(feasible[best] == held) if held is not None else best[:0]
        if len(named):
            pick = int(best[int(named[0])])  # a tie the pod's PreFilter decided (CycleState.tie_break)
        else:
            pick = int(best[self._rng.randrange(len(best))]) if len(best) > 1 else int(best[0])
        node = snapshot.nodes[int(feasible[pick])].name
        return ScheduleResult(node, evaluated, len(feasible), feasible, totals)

    def _fit_error(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> FitError:
        """Run PostFilter (preemption) for a pod that fits nowhere; the FitError to raise."""
        fwk = self.fwk
        if not fwk.post_filter_plugins:
            return FitError(pod, diagnosis)
        obs = fwk.observe
        if obs is not None:
            obs.preemption_attempts.inc()
        result, st = fwk.run_post_filter(state, pod, diagnosis)
        if st.ok and result is not None and result.nominated_node_name:
            if obs is not None and result.victims:
                obs.preemption_victims.observe(result.victims)
            return FitError(pod, diagnosis, result.nominated_node_name)
        if st.code != Code.ERROR and st.message():
            diagnosis.post_filter_msg = f"preemption: {st.message()}"
        return FitError(pod, diagnosis)

    def find_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        allowed: IntArray | None,
        diagnosis: Diagnosis,
    ) -> tuple[IntArray, int]:
        """Feasible rows, searching from a rotating start and stopping after enough are found.

        `allowed` is the rows PreFilter's node set allows, in row order (None: every row).
        Returns (feasible rows, number of nodes evaluated).
        """
        started = time.perf_counter()
        n = len(snapshot)
        if allowed is not None:
            candidates = allowed
            start = 0
        else:
            start = self.next_start_node_index % n
            candidates = np.arange(n, dtype=np.int64)
            if start:
                candidates = np.roll(candidates, -start)
        want = num_feasible_nodes_to_find(len(candidates), self.fwk.percentage_of_nodes_to_score)
        nominated = self._rows_with_nominated_pods(pod, snapshot)
        found: list[IntArray] = []
        n_found = 0
        processed = 0
        filtered = passed = 0  # the pass rate of this search, for the next one's first chunk
        chunk = self._first_chunk(want)
        while processed < len(candidates) and n_found < want:
            idx = candidates[processed : processed + chunk]
            processed += len(idx)
            ok = self._filter_chunk(state, pod, snapshot, idx, nominated, diagnosis)
            filtered += len(idx)
            passed += len(ok)
            if len(ok):
                if n_found + len(ok) > want:
                    # Stop at the want-th feasible node, as kube does, so the next
                    # search starts right after it.
                    cut = ok[want - n_found - 1]
                    # Where the cut row sits in the chunk: rows rotate by one from the start (no
                    # PreFilter set), else look for it.
                    if allowed is None:
                        pos = (int(cut) - int(idx[0])) % n
                    else:
                        pos = int(np.flatnonzero(idx == cut)[0])
                    processed -= len(idx) - pos - 1
                    ok = ok[: want - n_found]
                found.append(ok)
                n_found += len(ok)
            chunk = _next_chunk(chunk, want - n_found, filtered, passed)
        if filtered:
            self._pass_rate = passed / filtered
        if allowed is None:
            self.next_start_node_index = (start + processed) % n
        self.fwk.observe_point("Filter", started)
        feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return feasible, processed

    def _first_chunk(self, want: int) -> int:
        """`want` nodes when the last search's filters passed every node it filtered; else as
        many as the last pass rate says will hold `want` feasible ones, plus a sixteenth, but
        no more than twice `want` (a pod that fitted nowhere says little about the next)."""
        if self._pass_rate >= 1.0:
            return max(want, MIN_CHUNK)
        expected = want / max(self._pass_rate, 0.01)
        return max(MIN_CHUNK, min(2 * want, math.ceil(expected + expected / 16)))

    def _rows_with_nominated_pods(self, pod: PodInfo, snapshot: Snapshot) -> dict[int, list[PodInfo]]:
        out: dict[int, list[PodInfo]] = {}
        for name in self.fwk.nominated_node_names():
            row = snapshot.index.get(name)
            if row is None:
                continue
            pods = self.fwk.nominated_pods_ahead_of(pod, name)
            if pods:
                out[row] = pods
        return out

    def _filter_chunk(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        idx: IntArray,
        nominated: dict[int, list[PodInfo]],
        diagnosis: Diagnosis,
    ) -> IntArray:
        """Rows of `idx` that pass, in the order of `idx` (the search stops at the want-th):
        in batch, except nodes with nominated pods, which take kube's two-pass per-node check."""
        special = np.zeros(0, dtype=np.int64)
        chunk = idx
        if nominated:
            is_special = np.isin(idx, np.fromiter(nominated, dtype=np.int64))
            special = idx[is_special]
            idx = idx[~is_special]
        alive = self.fwk.run_filter_nodes(state, pod, snapshot, idx, diagnosis)
        ok_special = []
        for row in special.tolist():
            st = self.fwk.run_filter_plugins_with_nominated_pods(
                state, pod, snapshot.nodes[row], nominated.get(row)
            )
            if st.ok:
                ok_special.append(row)
                continue
            if st.code == Code.ERROR:
                raise PluginFault(st)
            diagnosis.record_node(row, st)
        if ok_special:
            return chunk[np.isin(chunk, np.concatenate([alive, np.asarray(ok_special, dtype=np.int64)]))]
        return alive
