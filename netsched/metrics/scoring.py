"""The scaffolding the metric score plugins share.

NetworkTraffic and LoadAware compute every candidate's score at once in
PreScore (vector operations over the metrics cache) and serve Score and
score_nodes from that, so the per-node and batch forms always agree.  Both
also reserve the pod with the estimator so a burst between two polls is
counted.  A subclass sets `name`, `Args`, its `source` and implements
`candidate_scores`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.interfaces import MAX_NODE_SCORE, IntArray, PreScorePlugin, ReservePlugin, ScorePlugin
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.metrics.source import MetricSource


@dataclass(frozen=True, slots=True)
class RowScores:
    index: dict[str, int]  # snapshot.index the rows refer to
    rows: IntArray  # score per snapshot row (candidates only; others 0)


class MetricScorePlugin(PreScorePlugin, ScorePlugin, ReservePlugin):
    source: MetricSource

    @property
    def _state_key(self) -> str:
        return f"{self.name}/scores"

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Scores in [0, 100] of snapshot rows `idx` for `pod`."""
        raise NotImplementedError

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> Status:
        rows = np.zeros(len(snapshot), dtype=np.int64)
        rows[idx] = self.candidate_scores(pod, snapshot, idx)
        state.write(self._state_key, RowScores(snapshot.index, rows))
        return Status.success()

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        st: RowScores = state.read(self._state_key)
        return st.rows[idx]

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        st: RowScores = state.read(self._state_key)
        row = st.index.get(node.name)
        if row is None:  # not a node of this cycle's snapshot: nothing is known about it
            return 0 if self.source.fail_closed else MAX_NODE_SCORE // 2
        return int(st.rows[row])

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.source.reserve(pod, node_name)
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.source.unreserve(pod)
