"""The scaffolding the metric score plugins share.

NetworkTraffic and LoadAware score every candidate at once (vector operations
over the metrics cache) in score_nodes; a per-node score() scores the rows the
cycle scores (CycleState.score_rows) the same way and picks its node's, so the
two forms always agree.  Both also reserve the pod with the estimator so a
burst between two polls is counted.  A subclass names its args type
(`MetricScorePlugin[NetworkTrafficArgs]`), sets `name` and its `source` and
implements `candidate_scores`.

QueryScorePlugin is the short road for a user's own metric plugin: declare
one PromQL `query` (polled by the shared poller, never by the plugin) and
read each node's value from the cache in score().  Its args are the `prometheus:`
block (`QueryScorePlugin[MetricArgs]`) or a MetricArgs subclass adding the plugin's own.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar

import numpy as np

from netsched.framework.cluster_events import ClusterEventWithHint
from netsched.framework.cycle_state import CycleState
from netsched.framework.extension_points import (
    MAX_NODE_SCORE,
    ArgsT,
    PluginArgs,
    ReservePlugin,
    ScorePlugin,
)
from netsched.framework.fields import Fields
from netsched.framework.seams import Handle
from netsched.framework.snapshot import BoolArray, FloatArray, IntArray, Snapshot
from netsched.framework.status import Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.metrics.args import PrometheusArgs
from netsched.metrics.source import MetricSource
from netsched.metrics.utilisation import METRICS_EVENTS, source_for


@dataclass(slots=True)
class RowScores:
    index: dict[str, int]  # snapshot.index the rows refer to
    idx: IntArray  # the candidates' rows, as the cycle scores them
    scores: IntArray  # their scores, aligned with idx
    n: int  # rows in the snapshot
    _rows: IntArray | None = None

    def rows(self) -> IntArray:
        """Score per snapshot row (candidates only; others 0), built when first asked for."""
        if self._rows is None:
            self._rows = np.zeros(self.n, dtype=np.int64)
            self._rows[self.idx] = self.scores
        return self._rows

    def of(self, idx: IntArray) -> IntArray:
        """The scores of rows `idx` (a new array: NormalizeScore works in place)."""
        if idx is self.idx:  # the rows these were computed for: no scatter and gather
            return self.scores.copy()
        return self.rows()[idx]

    def of_node(self, name: str) -> int | None:
        """The score of the node named `name`; None when the cycle's snapshot has no such node."""
        row = self.index.get(name)
        return None if row is None else int(self.rows()[row])


class SourceReservation(ReservePlugin[ArgsT]):
    """Reserve / Unreserve of a plugin reading a MetricSource: the pod's expected load is counted
    with the source's estimator until metrics cover it.  Every plugin of a profile doing only
    this with one source records the same thing, so one of them is called (shared_reservation)."""

    source: MetricSource

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.source.reserve(pod, node_name, state)
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.source.unreserve(pod)

    def shared_reservation(self) -> object | None:
        """The source; None for a subclass whose reserve() or unreserve() does more."""
        cls = type(self)
        if cls.reserve is SourceReservation.reserve and cls.unreserve is SourceReservation.unreserve:
            return self.source
        return None


class MetricScorePlugin(ScorePlugin[ArgsT], SourceReservation[ArgsT]):
    """Scores computed in Score, for every candidate at once: no PreScore stage (a subclass
    that needs one, e.g. to Skip a pod, adds PreScorePlugin and its own pre_score)."""

    source: MetricSource

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return METRICS_EVENTS

    @functools.cached_property
    def _state_key(self) -> str:
        return f"{self.name}/scores"

    def candidate_scores(self, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        """Scores in [0, 100] of snapshot rows `idx` for `pod` (a new array: NormalizeScore
        works in place)."""
        raise NotImplementedError

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        return self.candidate_scores(pod, snapshot, idx)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """The node's score among the rows the cycle scores (state.score_rows; the node alone
        when no runtime set them), computed for all of them once per cycle."""
        snapshot = self.handle.snapshot()
        rows = state.score_rows
        if rows is None:
            row = snapshot.index.get(node.name)
            rows = np.array([] if row is None else [row], dtype=np.int64)
        st: RowScores | None = state.get(self._state_key)
        if st is None or st.idx is not rows or st.index is not snapshot.index:
            st = RowScores(snapshot.index, rows, self.candidate_scores(pod, snapshot, rows), len(snapshot))
            state.write(self._state_key, st)
        got = st.of_node(node.name)
        if got is None:  # not a node of this cycle's snapshot: nothing is known about it
            return 0 if self.source.fail_closed else MAX_NODE_SCORE // 2
        return got


@dataclass(frozen=True)
class MetricArgs(PluginArgs):
    """Args of a metric plugin that needs only the shared `prometheus:` block."""

    prometheus: PrometheusArgs = field(default_factory=PrometheusArgs)

    @classmethod
    def decode(cls, fields: Fields) -> Self:
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        fields.finish()
        return cls(prometheus)

    def encode(self) -> dict[str, Any]:
        return {"prometheus": self.prometheus.encode()}


MetricArgsT = TypeVar("MetricArgsT", bound=MetricArgs, covariant=True)


class QueryScorePlugin(ScorePlugin[MetricArgsT]):
    """A Score plugin fed by one PromQL query: set `name` and `query`, implement score().

    `query` must return one series per node ($by and $window are substituted);
    the process-wide poller runs it, under the metric name `name`, and
    node_value() reads the node's latest fresh sample from the cache.
    """

    Args: ClassVar[type[PluginArgs] | None] = MetricArgs  # a subclass that names no args type
    query: ClassVar[str] = ""

    def __init__(self, args: MetricArgsT | None, handle: Handle) -> None:
        super().__init__(args, handle)
        if not self.query:
            raise ValueError(f"plugin {self.name} declares no query")
        self.source = source_for(handle, self.args.prometheus, self.name)
        self.source.require_query(self.name, self.query)

    _read: tuple[FloatArray, BoolArray] | None = None  # the cache, read once per score_nodes call

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray) -> IntArray:
        # One read of the cache for all candidates, then the user's per-node score().
        self._read = self.source.fresh(self.name, snapshot)
        try:
            return super().score_nodes(state, pod, snapshot, idx)
        finally:
            self._read = None

    def node_value(self, node: NodeInfo, default: float = 0.0) -> float:
        """The node's value from the cache; `default` when it has no fresh sample."""
        snapshot = self.handle.snapshot()
        row = snapshot.index.get(node.name)
        if row is None:
            return default
        values, fresh = self._read or self.source.fresh(self.name, snapshot)
        return float(values[row]) if fresh[row] else default
