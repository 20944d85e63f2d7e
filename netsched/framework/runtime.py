"""Runs one scheduling profile: calls its plugins point by point.

Its plugins are built once per profile by points.py, which fails fast on a
profile that cannot work (no queue sort, no binder, a score plugin without
weight, args of the wrong type).  Its `run_*` methods own the rules plugins rely on: PreFilter Skip skips that
plugin's Filter, the first failing filter rejects a node, normalised scores
are in [0, 100], Unreserve runs in reverse, the first non-Skip Bind wins.
Every call goes through one wrapper (instrument.PluginCalls).  The Framework
is the Handle its plugins see.  Finding a node for a pod is search.py's job,
as kube keeps it in schedule_one.go; PreFilter and Filter over snapshot rows
(the search's first pass, the Handle's "what if") are whatif.py's.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import TypeVar

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.debug_pages import DebugPages
from netsched.framework.diagnosis import Diagnosis
from netsched.framework.errors import PluginFault
from netsched.framework.extension_points import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    AnyArgs,
    AnyPlugin,
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PluginFactory,
    PluginScores,
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
)
from netsched.framework.handle import FrameworkHandle, ProfileLike, Services
from netsched.framework.instrument import PluginCalls
from netsched.framework.periodic import PeriodicTasks
from netsched.framework.points import build_profile
from netsched.framework.snapshot import IntArray, Snapshot
from netsched.framework.status import Code, Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.framework.waiting import SHUTTING_DOWN, WaitingPodImpl
from netsched.framework.whatif import filter_rows

log = logging.getLogger(__name__)

P = TypeVar("P", bound=AnyPlugin)
R = TypeVar("R")


class Framework(FrameworkHandle):
    """One profile's plugins, and the Handle they see."""

    def __init__(
        self, profile: ProfileLike, registry: Mapping[str, PluginFactory], services: Services
    ) -> None:
        super().__init__(profile.scheduler_name, services)
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        self._profile = profile
        self._registry = registry
        built = build_profile(profile, registry, self)
        self._instances = built.instances
        self.weights = built.weights
        points = built.points

        def at(ep: str, kind: type[P]) -> list[P]:
            return [p for p in points[ep] if isinstance(p, kind)]

        self.pre_enqueue_plugins = at("preEnqueue", PreEnqueuePlugin)
        self.queue_sort = at("queueSort", QueueSortPlugin)[0]
        self.pre_filter_plugins = at("preFilter", PreFilterPlugin)
        self.filter_plugins = at("filter", FilterPlugin)
        self.post_filter_plugins = at("postFilter", PostFilterPlugin)
        self.pre_score_plugins = at("preScore", PreScorePlugin)
        self.score_plugins = at("score", ScorePlugin)
        self.reserve_plugins = _one_per_shared_reservation(at("reserve", ReservePlugin))
        self.permit_plugins = at("permit", PermitPlugin)
        self.pre_bind_plugins = at("preBind", PreBindPlugin)
        self.bind_plugins = at("bind", BindPlugin)
        self.post_bind_plugins = at("postBind", PostBindPlugin)
        self._calls = PluginCalls(self.profile_name, services.observe)

    def replica(self) -> Framework:
        """A second instance of this profile (its own plugins and snapshot, the same services):
        explanations run on it so they never touch the scheduling thread's plugins (nor take
        over their periodic tasks or debug pages)."""
        # Its plugins' periodic tasks and pages go where nobody runs or serves them: the live
        # ones keep theirs.
        idle = PeriodicTasks(self._services.clock)
        services = dataclasses.replace(self._services, periodic=idle, debug_pages=DebugPages())
        return Framework(self._profile, self._registry, services)

    @property
    def plugins(self) -> Mapping[str, AnyPlugin]:
        return self._instances

    def seed(self, seed: int) -> None:
        self._calls.seed(seed)

    def new_cycle_state(self) -> CycleState:
        return self._calls.new_cycle_state()

    def observe_point(self, point: str, started: float) -> None:  # Filter: driven by the node search
        self._calls.observe(point, started)

    def _run_each(
        self,
        point: str,
        plugins: Sequence[P],
        state: CycleState | None,
        pod: PodInfo,
        call: Callable[[P], Status | None],
    ) -> Status:
        """Call each plugin in order until one does not succeed (Skip continues); its status."""
        started = time.perf_counter()
        status = Status.success()
        for p in plugins:
            st, err = self._calls.call(point, p, state, pod, call, p)
            st = err or st or Status.success()
            if not st.ok and not st.is_skip:
                status = st.with_plugin(p.name)
                break
        self._calls.observe(point, started, status)
        return status

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        return self._run_each("PreEnqueue", self.pre_enqueue_plugins, None, pod, lambda p: p.pre_enqueue(pod))

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, skip: Collection[str] = ()
    ) -> tuple[PreFilterResult | None, Status]:
        """Every PreFilter plugin (but those in `skip`) until one rejects; their node sets intersect."""
        started = time.perf_counter()
        merged: set[str] | None = None
        narrowing: list[str] = []
        status: Status = Status.success()
        for p in self.pre_filter_plugins:
            if p.name in skip:
                continue
            out, err = self._calls.call("PreFilter", p, state, pod, p.pre_filter, state, pod, snapshot)
            result, st = out if out is not None else (None, err or Status.success())
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
        self._calls.observe("PreFilter", started, status)
        return (PreFilterResult(merged) if merged is not None else None), status

    def run_filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray, diagnosis: Diagnosis
    ) -> IntArray:
        """Batch Filter over snapshot rows `idx`: the rows every filter passed. Each rejected row is
        recorded in `diagnosis` (its first rejection, as kube); PluginFault on a plugin error."""
        alive = idx
        for p in self.filter_plugins:
            if len(alive) == 0:
                break
            if p.name in state.skip_filter_plugins:
                continue
            rejections, err = self._calls.call(
                "Filter", p, state, pod, p.filter_nodes, state, pod, snapshot, alive
            )
            if err is not None:
                raise PluginFault(err)
            if rejections:
                failed, error = diagnosis.record(p.name, alive, rejections)
                if error is not None:
                    raise PluginFault(error)
                alive = alive[~failed]
        return alive

    def filter_rows(
        self, pod: PodInfo, snapshot: Snapshot, rows: IntArray, *, skip: Collection[str] = ()
    ) -> tuple[IntArray, Diagnosis]:
        """The Handle's "what if" (whatif.filter_rows): the rows where `pod` passes PreFilter and
        Filter, and the diagnosis of the others."""
        return filter_rows(self, pod, snapshot, rows, skip)

    def filter_statuses(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Iterator[tuple[FilterPlugin[AnyArgs], Status]]:
        """Each filter's verdict on one node, in order (Skipped plugins left out)."""
        for p in self.filter_plugins:
            if p.name in state.skip_filter_plugins:
                continue
            st, err = self._calls.call("Filter", p, state, pod, p.filter, state, pod, node)
            yield p, (err or st or Status.success()).with_plugin(p.name)

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Per-node filters in order; the first rejection wins (preemption, nominated pods)."""
        return next((st for _, st in self.filter_statuses(state, pod, node) if not st.ok), Status.success())

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, nominated: list[PodInfo] | None = None
    ) -> Status:
        """kube's two-pass check: the pod must fit with higher-or-equal priority nominated pods
        added to the node, and also without them (their affinity might be what lets it fit)."""
        if nominated is None:
            nominated = self.nominated_pods_ahead_of(pod, node.name)
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
        return self._run_pre_filter_extension(state, pod, lambda p: p.add_pod(state, pod, to_add, node))

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(state, pod, lambda p: p.remove_pod(state, pod, to_remove, node))

    def _run_pre_filter_extension(
        self, state: CycleState, pod: PodInfo, call: Callable[[PreFilterPlugin[AnyArgs]], Status]
    ) -> Status:
        """PreFilterExtensions AddPod/RemovePod of every PreFilter plugin that did not Skip."""
        plugins = [p for p in self.pre_filter_plugins if p.name not in state.skip_filter_plugins]
        return self._run_each("PreFilterExtension", plugins, state, pod, call)

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        started = time.perf_counter()
        reasons: list[Status] = []
        result: PostFilterResult | None = None
        final: Status | None = None
        for p in self.post_filter_plugins:
            out, err = self._calls.call("PostFilter", p, state, pod, p.post_filter, state, pod, diagnosis)
            r, st = out if out is not None else (None, err or Status.success())
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
        self._calls.observe("PostFilter", started, final)
        return result, final

    def run_pre_score(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, feasible: IntArray
    ) -> Status:
        state.score_rows = feasible

        def call(p: PreScorePlugin[AnyArgs]) -> Status:
            st = p.pre_score(state, pod, snapshot, feasible)
            if st.is_skip:  # its Score is skipped for this pod
                state.skip_score_plugins.add(p.name)
            return st

        return self._run_each("PreScore", self.pre_score_plugins, state, pod, call)

    def run_score_plugins(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        feasible: IntArray,
        breakdown: dict[str, PluginScores] | None = None,
    ) -> IntArray:
        """The score loop: Score + NormalizeScore x weight per plugin, summed per feasible node.

        With `breakdown`, each plugin's raw, normalised and weighted scores are added to it.
        Raises PluginFault on a plugin error or a normalised score outside [0, 100].
        """
        started = time.perf_counter()
        n = len(feasible)
        # One row per plugin that scores; checked and weighted once, after every plugin has
        # scored and normalised, as kube's applyScoreWeights does.
        block = np.empty((len(self.score_plugins), n), dtype=np.int64)
        scored: list[str] = []
        weights: list[int] = []
        for p in self.score_plugins:
            if p.name in state.skip_score_plugins:
                continue
            got, err = self._calls.call(
                "Score", p, state, pod, _score, p, state, pod, snapshot, feasible, breakdown
            )
            if got is None:
                raise PluginFault(err or Status(Code.ERROR, ["no scores"], p.name))
            raw, scores = got
            if len(scores) != n:
                msg = f"returned {len(scores)} scores for {n} nodes"
                raise PluginFault(Status(Code.ERROR, [msg], p.name))
            block[len(scored)] = scores
            weight = self.weights[p.name]
            scored.append(p.name)
            weights.append(weight)
            if breakdown is not None:
                breakdown[p.name] = PluginScores(raw, scores, scores * weight)
        used = block[: len(scored)]
        _check_scores(scored, used, feasible, snapshot)
        total: IntArray = np.array(weights, dtype=np.int64) @ used
        self._calls.observe("Score", started)
        return total

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._run_each(
            "Reserve", self.reserve_plugins, state, pod, lambda p: p.reserve(state, pod, node_name)
        )

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Every reserve plugin, in reverse order; errors are logged, never raised."""
        started = time.perf_counter()
        for p in reversed(self.reserve_plugins):
            self._calls.call("Unreserve", p, state, pod, p.unreserve, state, pod, node_name)
        self._calls.observe("Unreserve", started)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Success, a rejection, or Wait (the pod was parked in the waiting map)."""
        started = time.perf_counter()
        timeouts: dict[str, float] = {}
        status = Status.success()
        for p in self.permit_plugins:
            out, err = self._calls.call("Permit", p, state, pod, p.permit, state, pod, node_name)
            st, timeout = out if out is not None else (err or Status.success(), 0.0)
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
            wp = WaitingPodImpl(pod, node_name, timeouts, self._services.clock)
            self._services.waiting_pods.add(wp)
            if self._services.stopping.is_set():  # after cancel_binding_waits() went through the map
                wp.reject("", SHUTTING_DOWN)
            status = Status.wait()
        self._calls.observe("Permit", started, status)
        return status

    def cancel_binding_waits(self) -> None:
        """Shutting down: every wait of the binding cycle ends now (pods at Permit are rejected,
        PreBind waits see Handle.shutting_down()); the pods stay pending, as kube leaves them."""
        self._services.stopping.set()
        for wp in self._services.waiting_pods:
            wp.reject("", SHUTTING_DOWN)

    def wait_on_permit(self, pod: PodInfo) -> Status:
        wp = self._services.waiting_pods.get(pod.uid)
        if wp is None:
            return Status.success()
        started = time.perf_counter()
        try:
            st = wp.wait()
        finally:
            self._services.waiting_pods.remove(pod.uid)
        self._calls.observe("WaitOnPermit", started, st)
        return st

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._run_each(
            "PreBind", self.pre_bind_plugins, state, pod, lambda p: p.pre_bind(state, pod, node_name)
        )

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """The first bind plugin that does not Skip binds."""
        started = time.perf_counter()
        status = Status(Code.ERROR, ["no bind plugin bound the pod (all returned Skip)"])
        for p in self.bind_plugins:
            st, err = self._calls.call("Bind", p, state, pod, p.bind, state, pod, node_name)
            if not (st := err or st or status).is_skip:
                status = st.with_plugin(p.name)
                break
        self._calls.observe("Bind", started, status)
        return status

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Every post-bind plugin; errors are logged, never raised."""
        started = time.perf_counter()
        for p in self.post_bind_plugins:
            self._calls.call("PostBind", p, state, pod, p.post_bind, state, pod, node_name)
        self._calls.observe("PostBind", started)


def _one_per_shared_reservation(plugins: list[ReservePlugin[AnyArgs]]) -> list[ReservePlugin[AnyArgs]]:
    """The Reserve plugins to call: the first of those sharing a reservation (ReservePlugin.
    shared_reservation), and every plugin that shares none."""
    seen: set[int] = set()
    out = []
    for p in plugins:
        shared = p.shared_reservation()
        if shared is not None:
            if id(shared) in seen:
                continue
            seen.add(id(shared))
        out.append(p)
    return out


def _score(
    p: ScorePlugin[AnyArgs],
    state: CycleState,
    pod: PodInfo,
    snapshot: Snapshot,
    feasible: IntArray,
    breakdown: dict[str, PluginScores] | None,
) -> tuple[IntArray, IntArray]:
    """(raw scores, normalised scores); raw is a copy only when a breakdown is asked for."""
    scores = np.asarray(p.score_nodes(state, pod, snapshot, feasible), dtype=np.int64)
    raw = scores.copy() if breakdown is not None else scores
    p.normalize_scores(state, pod, scores)
    return raw, scores


def _check_scores(plugins: list[str], scores: IntArray, feasible: IntArray, snapshot: Snapshot) -> None:
    """PluginFault unless every score of `scores` (int64, (plugins, feasible nodes): row i is
    plugins[i]'s normalised scores) is in [MIN_NODE_SCORE, MAX_NODE_SCORE]; it names the first
    such plugin, and its first such node."""
    # One reduction for both bounds and every plugin (MIN_NODE_SCORE is 0): read as unsigned,
    # a negative int64 is far above MAX_NODE_SCORE.
    if not scores.size or np.maximum.reduce(scores.view(np.uint64), axis=None) <= MAX_NODE_SCORE:
        return
    bad = np.argwhere((scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE))[0]
    plugin, row = plugins[int(bad[0])], int(bad[1])
    node = snapshot.nodes[int(feasible[row])].name
    msg = (
        f"plugin {plugin!r} returns an invalid score {int(scores[bad[0], row])} for node {node!r}, "
        f"it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
    )
    raise PluginFault(Status(Code.ERROR, [msg], plugin))
