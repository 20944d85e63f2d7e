"""Runs one scheduling profile: builds its plugins and calls them point by point.

The Framework is built once per profile from the resolved configuration and
fails fast on a profile that cannot work (no queue sort, no binder, a score
plugin without weight).  At run time it owns the rules every plugin relies on:
PreFilter Skip skips that plugin's Filter, rejections stop at the first
failing filter per node, normalised scores must be in [0, 100], Unreserve runs
in reverse order after any later failure, the first non-Skip Bind wins.  It is
also the Handle plugins see.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.interfaces import (
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    Clock,
    ClusterAPI,
    Diagnosis,
    EventRecorder,
    FilterPlugin,
    IntArray,
    PermitPlugin,
    Plugin,
    PluginArgs,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    WaitingPod,
)
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.framework.waiting import WaitingPodImpl, WaitingPods

log = logging.getLogger(__name__)

# kube: percentageOfNodesToScore adaptive defaults.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 50
PLUGIN_METRICS_SAMPLE_PERCENT = 10


class FrameworkBuildError(ValueError):
    """A profile that cannot schedule anything; raised at start-up."""


class PluginRefLike(Protocol):
    name: str
    weight: int


class ProfileLike(Protocol):
    """What the runtime needs of a resolved config profile (netsched.config.Profile)."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None

    @property
    def plugins(self) -> Mapping[str, Sequence[Any]]: ...

    @property
    def plugin_config(self) -> Mapping[str, PluginArgs]: ...


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    evaluated_nodes: int
    feasible_nodes: int


class FitError(Exception):
    """No node fits; carries the Diagnosis whose message() is kube's FailedScheduling text."""

    def __init__(self, pod: PodInfo, diagnosis: Diagnosis, nominated_node_name: str = "") -> None:
        super().__init__(diagnosis.message())
        self.pod = pod
        self.diagnosis = diagnosis
        # Set when PostFilter (preemption) made room: the pod retries for that node.
        self.nominated_node_name = nominated_node_name


class PluginFault(Exception):
    """A plugin raised or returned Error; the pod is retried with backoff."""

    def __init__(self, status: Status) -> None:
        super().__init__(str(status))
        self.status = status


@dataclass
class Services:
    """What the runtime hands plugins through the Handle; shared by all profiles."""

    api: ClusterAPI
    events: EventRecorder
    clock: Clock
    parallelism: int = 16
    metrics: Any = None  # netsched.metrics hub
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    nominated_pods: Callable[[str], list[PodInfo]] = lambda _node: []
    nominated_node_names: Callable[[], Iterable[str]] = lambda: ()
    pdbs: Callable[[], list[Mapping[str, Any]]] = lambda: []
    # Labels of a namespace (None when unknown): InterPodAffinity's namespaceSelector.
    namespace_labels: Callable[[str], Mapping[str, str] | None] = lambda _ns: None
    observe: Any = None  # netsched.observability.SchedulerMetrics or None


class Framework:
    """One profile's plugins, and the Handle they see."""

    def __init__(
        self, profile: ProfileLike, registry: Mapping[str, type[Plugin]], services: Services
    ) -> None:
        self.profile_name = profile.scheduler_name
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        self._services = services
        self._snapshot = Snapshot()
        self._instances: dict[str, Plugin] = {}
        self.weights: dict[str, int] = {}
        points: dict[str, list[Plugin]] = {ep: [] for ep in EXTENSION_POINTS}
        problems: list[str] = []
        for ep, refs in profile.plugins.items():
            if ep == "multiPoint":
                continue
            if ep not in EXTENSION_POINTS:
                problems.append(f"unknown extension point {ep!r}")
                continue
            for ref in refs:
                plugin = self._instance(ref.name, registry, profile.plugin_config, problems)
                if plugin is None:
                    continue
                if not isinstance(plugin, EXTENSION_POINTS[ep]):
                    problems.append(f"plugin {ref.name!r} does not extend {ep}")
                    continue
                points[ep].append(plugin)
                if ep == "score":
                    weight = int(getattr(ref, "weight", 0) or 0)
                    if weight <= 0:
                        problems.append(f"score plugin {ref.name!r} is not configured with weight")
                    self.weights[ref.name] = weight
        if len(points["queueSort"]) != 1:
            problems.append(f"only one queue sort plugin can be enabled, found {len(points['queueSort'])}")
        if not points["bind"]:
            problems.append("at least one bind plugin is needed")
        if problems:
            raise FrameworkBuildError(f"profile {self.profile_name!r}: " + "; ".join(problems))
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = points["preEnqueue"]  # type: ignore[assignment]
        self.queue_sort: QueueSortPlugin = points["queueSort"][0]  # type: ignore[assignment]
        self.pre_filter_plugins: list[PreFilterPlugin] = points["preFilter"]  # type: ignore[assignment]
        self.filter_plugins: list[FilterPlugin] = points["filter"]  # type: ignore[assignment]
        self.post_filter_plugins: list[PostFilterPlugin] = points["postFilter"]  # type: ignore[assignment]
        self.pre_score_plugins: list[PreScorePlugin] = points["preScore"]  # type: ignore[assignment]
        self.score_plugins: list[ScorePlugin] = points["score"]  # type: ignore[assignment]
        self.reserve_plugins: list[ReservePlugin] = points["reserve"]  # type: ignore[assignment]
        self.permit_plugins: list[PermitPlugin] = points["permit"]  # type: ignore[assignment]
        self.pre_bind_plugins: list[PreBindPlugin] = points["preBind"]  # type: ignore[assignment]
        self.bind_plugins: list[BindPlugin] = points["bind"]  # type: ignore[assignment]
        self.post_bind_plugins: list[PostBindPlugin] = points["postBind"]  # type: ignore[assignment]
        self._next_start_node_index = 0
        self._rng = random.Random()
        self._ep_timers: dict[tuple[str, str], Any] = {}

    # ------------------------------------------------------------ building

    def _instance(
        self,
        name: str,
        registry: Mapping[str, type[Plugin]],
        config: Mapping[str, PluginArgs],
        problems: list[str],
    ) -> Plugin | None:
        got = self._instances.get(name)
        if got is not None:
            return got
        cls = registry.get(name)
        if cls is None:
            problems.append(f"plugin {name!r} is not registered")
            return None
        args = config.get(name)
        if args is None and cls.Args is not None:
            args = cls.Args.default()
        try:
            plugin = cls(args, self)
        except Exception as e:  # a plugin constructor fault is a start-up error, with its name
            problems.append(f"plugin {name!r} failed to initialise: {e}")
            return None
        self._instances[name] = plugin
        return plugin

    @property
    def plugins(self) -> Mapping[str, Plugin]:
        return self._instances

    # ------------------------------------------------------------ Handle

    @property
    def clock(self) -> Clock:
        return self._services.clock

    @property
    def parallelism(self) -> int:
        return self._services.parallelism

    @property
    def api(self) -> ClusterAPI:
        return self._services.api

    @property
    def events(self) -> EventRecorder:
        return self._services.events

    @property
    def metrics(self) -> Any:
        return self._services.metrics

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def set_snapshot(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def iterate_waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(self._services.waiting_pods)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._services.waiting_pods.get(uid)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self._services.nominated_pods(node_name)

    def list_pdbs(self) -> list[Mapping[str, Any]]:
        return self._services.pdbs()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._services.namespace_labels(namespace)

    # ------------------------------------------------------------ metrics helpers

    def _observe(self, ep: str, started: float, status: Status | None = None) -> None:
        obs = self._services.observe
        if obs is None:
            return
        code = "Success" if status is None else _status_label(status)
        key = (ep, code)
        child = self._ep_timers.get(key)
        if child is None:
            child = obs.framework_extension_point_duration.labels(ep, code, self.profile_name)
            self._ep_timers[key] = child
        child.observe(time.perf_counter() - started)

    def _observe_plugin(
        self, state: CycleState, plugin: str, ep: str, started: float, status: Status | None = None
    ) -> None:
        obs = self._services.observe
        if obs is None or not state.record_plugin_metrics:
            return
        code = "Success" if status is None else _status_label(status)
        obs.plugin_execution_duration.labels(plugin, ep, code).observe(time.perf_counter() - started)

    def seed(self, seed: int) -> None:
        """Make tie-breaks and plugin-metric sampling repeatable (simulations, tests)."""
        self._rng.seed(seed)

    def new_cycle_state(self) -> CycleState:
        state = CycleState()
        state.record_plugin_metrics = self._rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        return state

    # ------------------------------------------------------------ queueing

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for p in self.pre_enqueue_plugins:
            try:
                st = p.pre_enqueue(pod)
            except Exception as e:
                log.exception("PreEnqueue plugin failed plugin=%s pod=%s", p.name, pod.key)
                return Status.as_error(e, p.name)
            if not st.ok:
                return st.with_plugin(p.name)
        return Status.success()

    # ------------------------------------------------------------ scheduling cycle

    def schedule(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> ScheduleResult:
        """PreFilter -> Filter -> (PostFilter on failure) -> PreScore -> Score -> pick a node.

        Raises FitError (no node fits; diagnosis attached, PostFilter already run)
        or PluginFault (a plugin error).
        """
        self._snapshot = snapshot
        n = len(snapshot)
        if n == 0:
            raise FitError(
                pod,
                Diagnosis(
                    0, np.zeros(0, dtype=np.int8), pre_filter_msg="no nodes available to schedule pods"
                ),
            )
        pre_result, st = self.run_pre_filter(state, pod, snapshot)
        diagnosis = Diagnosis(n, np.zeros(n, dtype=np.int8))
        if not st.ok:
            if st.code == Code.ERROR:
                raise PluginFault(st)
            diagnosis.pre_filter_msg = st.message()
            diagnosis.node_codes[:] = st.code
            diagnosis.unschedulable_plugins.add(st.plugin)
            raise self._fit_error(state, pod, diagnosis)
        feasible, evaluated = self.find_feasible(state, pod, snapshot, pre_result, diagnosis)
        if len(feasible) == 0:
            raise self._fit_error(state, pod, diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(snapshot.nodes[int(feasible[0])].name, evaluated, 1)
        totals, _ = self.prioritize(state, pod, snapshot, feasible)
        best = np.flatnonzero(totals == totals.max())
        pick = int(best[self._rng.randrange(len(best))]) if len(best) > 1 else int(best[0])
        return ScheduleResult(snapshot.nodes[int(feasible[pick])].name, evaluated, len(feasible))

    def _fit_error(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> FitError:
        if self.post_filter_plugins:
            if self._services.observe is not None:
                self._services.observe.preemption_attempts.inc()
            result, st = self.run_post_filter(state, pod, diagnosis)
            if st.ok and result is not None and result.nominated_node_name:
                if self._services.observe is not None and result.victims:
                    self._services.observe.preemption_victims.observe(result.victims)
                return FitError(pod, diagnosis, result.nominated_node_name)
            if st.code != Code.ERROR and st.message():
                diagnosis.post_filter_msg = f"preemption: {st.message()}"
        return FitError(pod, diagnosis)

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        started = time.perf_counter()
        merged: set[str] | None = None
        narrowing: list[str] = []
        status: Status = Status.success()
        for p in self.pre_filter_plugins:
            t0 = time.perf_counter()
            try:
                result, st = p.pre_filter(state, pod, snapshot)
            except Exception as e:
                log.exception("PreFilter plugin failed plugin=%s pod=%s", p.name, pod.key)
                st, result = Status.as_error(e, p.name), None
            self._observe_plugin(state, p.name, "PreFilter", t0, st)
            if st.is_skip:
                state.skip_filter_plugins.add(p.name)
                continue
            if not st.ok:
                status = st.with_plugin(p.name)
                break
            if result is not None and result.node_names is not None:
                narrowing.append(p.name)
                merged = set(result.node_names) if merged is None else merged & result.node_names
                if not merged:
                    if len(narrowing) == 1:
                        msg = f"node(s) didn't satisfy plugin {p.name}"
                    else:
                        msg = f"node(s) didn't satisfy plugin(s) [{', '.join(narrowing)}] simultaneously"
                    status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [msg], p.name)
                    break
        self._observe("PreFilter", started, status)
        return (PreFilterResult(merged) if merged is not None else None), status

    def num_feasible_nodes_to_find(self, num_all: int) -> int:
        """kube's adaptive percentageOfNodesToScore."""
        if num_all < MIN_FEASIBLE_NODES_TO_FIND:
            return num_all
        pct = self.percentage_of_nodes_to_score
        if pct is None or pct <= 0:
            pct = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE - num_all // 125
            pct = max(pct, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
        if pct >= 100:
            return num_all
        return max(num_all * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)

    def find_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        pre_result: PreFilterResult | None,
        diagnosis: Diagnosis,
    ) -> tuple[IntArray, int]:
        """Feasible rows, searching from a rotating start and stopping after enough are found.

        Returns (feasible rows, number of nodes evaluated).
        """
        started = time.perf_counter()
        n = len(snapshot)
        if pre_result is not None and pre_result.node_names is not None:
            rows = sorted(snapshot.index[name] for name in pre_result.node_names if name in snapshot.index)
            candidates = np.asarray(rows, dtype=np.int64)
            start = 0
        else:
            start = self._next_start_node_index % n
            candidates = (
                np.roll(np.arange(n, dtype=np.int64), -start) if start else np.arange(n, dtype=np.int64)
            )
        want = self.num_feasible_nodes_to_find(len(candidates))
        filters = [p for p in self.filter_plugins if p.name not in state.skip_filter_plugins]
        nominated_rows = self._rows_with_nominated_pods(pod, snapshot, candidates)
        found: list[IntArray] = []
        n_found = 0
        processed = 0
        chunk = max(want, 128)
        while processed < len(candidates) and n_found < want:
            idx = candidates[processed : processed + chunk]
            processed += len(idx)
            ok = self._filter_chunk(state, pod, snapshot, idx, filters, nominated_rows, diagnosis)
            if len(ok):
                if n_found + len(ok) > want:
                    # Stop at the want-th feasible node, as kube does, so the next
                    # search starts right after it.
                    cut = ok[want - n_found - 1]
                    pos = int(np.flatnonzero(idx == cut)[0])
                    processed -= len(idx) - pos - 1
                    ok = ok[: want - n_found]
                found.append(ok)
                n_found += len(ok)
            chunk *= 2
        if pre_result is None or pre_result.node_names is None:
            self._next_start_node_index = (start + processed) % n
        self._observe("Filter", started)
        feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return feasible, processed

    def _rows_with_nominated_pods(
        self, pod: PodInfo, snapshot: Snapshot, candidates: IntArray
    ) -> dict[int, list[PodInfo]]:
        out: dict[int, list[PodInfo]] = {}
        for name in self._services.nominated_node_names():
            row = snapshot.index.get(name)
            if row is None:
                continue
            pods = [
                p
                for p in self._services.nominated_pods(name)
                if p.uid != pod.uid and p.priority >= pod.priority
            ]
            if pods:
                out[row] = pods
        return out

    def _filter_chunk(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        idx: IntArray,
        filters: list[FilterPlugin],
        nominated_rows: dict[int, list[PodInfo]],
        diagnosis: Diagnosis,
    ) -> IntArray:
        special = np.zeros(0, dtype=np.int64)
        if nominated_rows:
            is_special = np.isin(idx, np.fromiter(nominated_rows, dtype=np.int64))
            special = idx[is_special]
            idx = idx[~is_special]
        alive = idx
        for p in filters:
            if len(alive) == 0:
                break
            t0 = time.perf_counter()
            try:
                rejections = p.filter_nodes(state, pod, snapshot, alive)
            except Exception as e:
                log.exception("Filter plugin failed plugin=%s pod=%s", p.name, pod.key)
                raise PluginFault(Status.as_error(e, p.name)) from e
            self._observe_plugin(state, p.name, "Filter", t0)
            if not rejections:
                continue
            failed = np.zeros(len(alive), dtype=bool)
            for rej in rejections:
                if rej.code == Code.ERROR:
                    raise PluginFault(Status(Code.ERROR, list(rej.reasons), p.name))
                cnt = int(rej.mask.sum())
                if not cnt:
                    continue
                failed |= rej.mask
                rows = alive[rej.mask]
                codes = diagnosis.node_codes
                codes[rows] = np.maximum(codes[rows], int(rej.code))
                for reason in rej.reasons:
                    diagnosis.reasons[reason] = diagnosis.reasons.get(reason, 0) + cnt
                diagnosis.unschedulable_plugins.add(p.name)
            alive = alive[~failed]
        if len(special):
            ok_special = []
            for row in special.tolist():
                st = self.run_filter_plugins_with_nominated_pods(
                    state, pod, snapshot.nodes[row], nominated_rows.get(row)
                )
                if st.ok:
                    ok_special.append(row)
                else:
                    if st.code == Code.ERROR:
                        raise PluginFault(st)
                    diagnosis.node_codes[row] = int(st.code)
                    for reason in st.reasons:
                        diagnosis.reasons[reason] = diagnosis.reasons.get(reason, 0) + 1
                    diagnosis.unschedulable_plugins.add(st.plugin)
            if ok_special:
                # Keep the caller's (rotated) order: merge back by position.
                merged = np.concatenate([alive, np.asarray(ok_special, dtype=np.int64)])
                return merged
        return alive

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Per-node filters in order; the first rejection wins (used by preemption and nominated pods)."""
        for p in self.filter_plugins:
            if p.name in state.skip_filter_plugins:
                continue
            try:
                st = p.filter(state, pod, node)
            except Exception as e:
                log.exception("Filter plugin failed plugin=%s pod=%s node=%s", p.name, pod.key, node.name)
                return Status.as_error(e, p.name)
            if not st.ok:
                return st.with_plugin(p.name)
        return Status.success()

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, nominated: list[PodInfo] | None = None
    ) -> Status:
        """kube's two-pass check: the pod must fit with higher-or-equal priority nominated pods
        added to the node, and also without them (their affinity might be what lets it fit)."""
        if nominated is None:
            nominated = [
                p
                for p in self._services.nominated_pods(node.name)
                if p.uid != pod.uid and p.priority >= pod.priority
            ]
        if nominated:
            state_with = state.clone()
            node_with = node.clone()
            for np_pod in nominated:
                node_with.add_pod(np_pod)
                st = self.run_pre_filter_extension_add_pod(state_with, pod, np_pod, node_with)
                if not st.ok:
                    return st
            st = self.run_filter_plugins(state_with, pod, node_with)
            if not st.ok:
                return st
        return self.run_filter_plugins(state, pod, node)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(state, pod, to_add, node, adding=True)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(state, pod, to_remove, node, adding=False)

    def _run_pre_filter_extension(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, *, adding: bool
    ) -> Status:
        """PreFilterExtensions AddPod/RemovePod of every PreFilter plugin that did not Skip."""
        for p in self.pre_filter_plugins:
            if p.name in state.skip_filter_plugins:
                continue
            try:
                st = p.add_pod(state, pod, other, node) if adding else p.remove_pod(state, pod, other, node)
            except Exception as e:
                return Status.as_error(e, p.name)
            if not st.ok:
                return st.with_plugin(p.name)
        return Status.success()

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        started = time.perf_counter()
        reasons: list[Status] = []
        result: PostFilterResult | None = None
        final: Status | None = None
        for p in self.post_filter_plugins:
            try:
                r, st = p.post_filter(state, pod, diagnosis)
            except Exception as e:
                log.exception("PostFilter plugin failed plugin=%s pod=%s", p.name, pod.key)
                r, st = None, Status.as_error(e, p.name)
            if st.ok:
                result, final = r, st
                break
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                final = st.with_plugin(p.name)
                break
            reasons.append(st.with_plugin(p.name))
        if final is None:
            final = reasons[-1] if reasons else Status.unschedulable(plugin="")
            if len(reasons) > 1:
                final = Status(final.code, [r for s in reasons for r in s.reasons], final.plugin, final.error)
        self._observe("PostFilter", started, final)
        return result, final

    def prioritize(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        feasible: IntArray,
        *,
        breakdown: bool = False,
    ) -> tuple[IntArray, dict[str, tuple[IntArray, IntArray]]]:
        """Total weighted scores aligned with `feasible`; with breakdown, per plugin (normalised, weighted)."""
        st = self.run_pre_score(state, pod, snapshot, feasible)
        if not st.ok:
            raise PluginFault(st)
        started = time.perf_counter()
        total = np.zeros(len(feasible), dtype=np.int64)
        detail: dict[str, tuple[IntArray, IntArray]] = {}
        for p in self.score_plugins:
            if p.name in state.skip_score_plugins:
                continue
            t0 = time.perf_counter()
            try:
                scores = np.asarray(p.score_nodes(state, pod, snapshot, feasible), dtype=np.int64)
                p.normalize_scores(state, pod, scores)
            except Exception as e:
                log.exception("Score plugin failed plugin=%s pod=%s", p.name, pod.key)
                raise PluginFault(Status.as_error(e, p.name)) from e
            self._observe_plugin(state, p.name, "Score", t0)
            if len(scores) != len(feasible):
                raise PluginFault(
                    Status(Code.ERROR, [f"returned {len(scores)} scores for {len(feasible)} nodes"], p.name)
                )
            if len(scores) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
                bad = int(np.flatnonzero((scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE))[0])
                node = snapshot.nodes[int(feasible[bad])].name
                raise PluginFault(
                    Status(
                        Code.ERROR,
                        [
                            f"plugin {p.name!r} returns an invalid score {int(scores[bad])} for node {node!r}, "
                            f"it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                        ],
                        p.name,
                    )
                )
            weighted = scores * self.weights[p.name]
            total += weighted
            if breakdown:
                detail[p.name] = (scores, weighted)
        self._observe("Score", started)
        return total, detail

    def run_pre_score(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, feasible: IntArray
    ) -> Status:
        started = time.perf_counter()
        status = Status.success()
        for p in self.pre_score_plugins:
            t0 = time.perf_counter()
            try:
                st = p.pre_score(state, pod, snapshot, feasible)
            except Exception as e:
                log.exception("PreScore plugin failed plugin=%s pod=%s", p.name, pod.key)
                st = Status.as_error(e, p.name)
            self._observe_plugin(state, p.name, "PreScore", t0, st)
            if st.is_skip:
                state.skip_score_plugins.add(p.name)
                continue
            if not st.ok:
                status = st.with_plugin(p.name)
                break
        self._observe("PreScore", started, status)
        return status

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._run_each(
            "Reserve", self.reserve_plugins, pod, lambda p: p.reserve(state, pod, node_name)
        )

    def _run_each(
        self, point: str, plugins: Sequence[Plugin], pod: PodInfo, call: Callable[[Any], Status]
    ) -> Status:
        """Call each plugin in order until one does not succeed; a raise becomes its Error."""
        started = time.perf_counter()
        status = Status.success()
        for p in plugins:
            try:
                st = call(p)
            except Exception as e:
                log.exception("%s plugin failed plugin=%s pod=%s", point, p.name, pod.key)
                st = Status.as_error(e, p.name)
            if not st.ok:
                status = st.with_plugin(p.name)
                break
        self._observe(point, started, status)
        return status

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Every reserve plugin, in reverse order; errors are logged, never raised."""
        started = time.perf_counter()
        for p in reversed(self.reserve_plugins):
            try:
                p.unreserve(state, pod, node_name)
            except Exception:
                log.exception("Unreserve plugin failed plugin=%s pod=%s node=%s", p.name, pod.key, node_name)
        self._observe("Unreserve", started)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Success, a rejection, or Wait (the pod was parked in the waiting map)."""
        started = time.perf_counter()
        timeouts: dict[str, float] = {}
        status = Status.success()
        for p in self.permit_plugins:
            try:
                st, timeout = p.permit(state, pod, node_name)
            except Exception as e:
                log.exception("Permit plugin failed plugin=%s pod=%s", p.name, pod.key)
                st, timeout = Status.as_error(e, p.name), 0.0
            if st.code == Code.WAIT:
                timeouts[p.name] = float(timeout)
                continue
            if not st.ok:
                status = st.with_plugin(p.name)
                if st.is_rejection:
                    status = Status(
                        st.code, st.reasons or [f"rejected pod {pod.name!r} (UID: {pod.uid})"], p.name
                    )
                break
        if status.ok and timeouts:
            self._services.waiting_pods.add(WaitingPodImpl(pod, node_name, timeouts, self._services.clock))
            status = Status.wait()
        self._observe("Permit", started, status)
        return status

    def wait_on_permit(self, pod: PodInfo) -> Status:
        wp = self._services.waiting_pods.get(pod.uid)
        if wp is None:
            return Status.success()
        started = time.perf_counter()
        try:
            st = wp.wait()
        finally:
            self._services.waiting_pods.remove(pod.uid)
        self._observe("WaitOnPermit", started, st)
        return st

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._run_each(
            "PreBind", self.pre_bind_plugins, pod, lambda p: p.pre_bind(state, pod, node_name)
        )

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        started = time.perf_counter()
        status: Status = Status.skip()
        for p in self.bind_plugins:
            try:
                st = p.bind(state, pod, node_name)
            except Exception as e:
                log.exception("Bind plugin failed plugin=%s pod=%s", p.name, pod.key)
                st = Status.as_error(e, p.name)
            if st.is_skip:
                continue
            status = st.with_plugin(p.name)
            break
        if status.is_skip:
            status = Status(Code.ERROR, ["no bind plugin bound the pod (all returned Skip)"])
        self._observe("Bind", started, status)
        return status

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        started = time.perf_counter()
        for p in self.post_bind_plugins:
            try:
                p.post_bind(state, pod, node_name)
            except Exception:
                log.exception("PostBind plugin failed plugin=%s pod=%s", p.name, pod.key)
        self._observe("PostBind", started)


def _status_label(st: Status) -> str:
    return {
        Code.SUCCESS: "Success",
        Code.ERROR: "Error",
        Code.UNSCHEDULABLE: "Unschedulable",
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
        Code.WAIT: "Wait",
        Code.SKIP: "Skip",
        Code.PENDING: "Pending",
    }[st.code]
