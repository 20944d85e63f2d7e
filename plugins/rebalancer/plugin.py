"""Rebalancer: move running pods off hot links, hot CPUs and away from their peers, planned
with the profile's own plugins, through the Eviction API.

Every `intervalSeconds`, on the leader only (a periodic task), a round:

1. reads the nodes as the profile's plugins read them (the source's LoadView:
   readings corrected by the ledger) on a copy of the cluster; a source in
   fallback, or without one fresh sample, moves nothing and the round says so
   (`netsched_rebalancer_skipped_rounds_total{cause}`);
2. counts, per node and resource, the rounds in a row above its high
   watermark: `consecutiveRounds` of them make it hot (one hot scrape moves
   nothing); a node without fresh samples is neither hot nor a target;
3. plans (plan.py): each move checked with the profile itself on a what-if
   copy, kept only when the profile prefers another node that stays under the
   target watermarks with the pod and the move relieves its trigger; greedy by
   relief, at most the limits' worth;
4. evicts the planned pods (policy/v1 Eviction: a PodDisruptionBudget's 429
   is a refusal, counted, retried in a later round, never forced), or in
   `dryRun` only reports them; an Event on each pod names the trigger, the
   figures and the round.

The replacement goes where the plan said: for `replacementTimeoutSeconds`
the plan's target keeps the evicted pod's load in the live ledger (a place
held, so other pods do not take it), the replacement's own cycle takes that
place back (PreFilter: it is the pod the place is for) and its Filter keeps
it off the node its predecessor left.  Cooldowns (per workload and per node),
the moves in flight and recent eviction times live in a ConfigMap (state.py)
so that a new leader honours the old one's.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from netsched.framework import (
    CycleState,
    EvictionResult,
    FilterPlugin,
    Handle,
    NodeInfo,
    ObjectRef,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    Snapshot,
    Status,
    names,
    workload_key,
)
from netsched.metrics.plugin_api import (
    CPU,
    LINK_SPEED,
    MEMORY,
    NETWORK_RX,
    NETWORK_TX,
    MetricSource,
    source_for,
)

from . import debug
from .args import NETWORK, RebalancerArgs
from .eligibility import why_not
from .plan import Plan, PlannedMove, Planner, Readings, replacement
from .state import Move, State, Store

log = logging.getLogger(__name__)

LEFT = "node(s) were left by a pod of this workload the rebalancer moved"
_PLANS_KEPT = 20  # rounds whose plans the debug page shows (debug.py)
_CLAIM = "Rebalancer/claim"  # cycle state: the move whose held place the pod took back


@dataclass(frozen=True, slots=True)
class RoundReport:
    """What one round saw and did (the debug page, tests)."""

    round: int
    at: float
    hot: dict[str, list[str]]
    moves: list[dict[str, Any]]
    blocked: dict[str, str]
    skipped: str = ""  # the cause when the round moved nothing by rule


class Rebalancer(
    PreFilterPlugin[RebalancerArgs], FilterPlugin[RebalancerArgs], ReservePlugin[RebalancerArgs]
):
    name = names.REBALANCER

    def __init__(self, args: RebalancerArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.source: MetricSource = source_for(handle, self.args.prometheus, self.name)
        marks = self.args.watermarks
        if NETWORK in marks or self.args.traffic_min_reduction > 0:
            self.source.require(NETWORK_RX, NETWORK_TX, LINK_SPEED)
        for kind in (CPU, MEMORY):
            if kind in marks:
                self.source.require(kind)
        self._store = Store(handle.api, self.args.state)
        self._state = State()
        self._loaded = False
        self._lock = threading.Lock()  # the round (periodic thread) and the cycle's extension points
        self._over: dict[tuple[str, str], int] = {}  # (node, kind) -> rounds in a row above high
        self._traffic_over: dict[str, int] = {}  # workload -> rounds in a row above the minimum
        self._reported: dict[str, float] = {}  # what an Event was sent about -> until when not again
        self.reports: deque[RoundReport] = deque(maxlen=_PLANS_KEPT)
        self._metrics = _Metrics(handle)
        handle.every(f"{self.name}/round/{handle.profile_name}", self.args.interval_seconds, self.run_round)
        handle.debug_page(debug.PATH, self._debug_view, debug.text)

    def _debug_view(self) -> dict[str, Any]:
        # list(deque) copies in one step: rounds append from the periodic thread meanwhile.
        return debug.view(list(self.reports), self.args, self.handle.what_if.leading())

    # ------------------------------------------------------------ the replacement's cycle

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        """A pod of a workload with a move in flight is its replacement: it takes back the place
        the plan held for it (its own load is counted by its Reserve), and Filter keeps it off
        the node its predecessor left.  Any other pod: Skip (no Filter)."""
        if not self._state.moves:
            return None, Status.skip()
        workload = workload_key(pod, self.args.workload_label)
        with self._lock:
            move = self._state.moves.get(workload)
            if move is None or move.pod == pod.key:
                return None, Status.skip()
            self.source.ledger.remove(_held(workload))
        state.write(_CLAIM, (workload, move))
        # The plan chose the target with these scores, ties to the first row (WhatIf.place):
        # among equal best totals the cycle takes the place held for it, not a random one.
        state.tie_break = move.target
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        claim: tuple[str, Move] | None = state.get(_CLAIM)
        if claim is not None and node.name == claim[1].source:
            return Status.unschedulable(LEFT, plugin=self.name)
        return Status.success()

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        claim: tuple[str, Move] | None = state.get(_CLAIM)
        if claim is not None:
            workload, move = claim
            with self._lock:
                if self._state.moves.get(workload) is move:
                    del self._state.moves[workload]  # the replacement is placed: the move is done
            self._metrics.replacements.labels(self.handle.profile_name, str(node_name == move.target)).inc()
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        claim: tuple[str, Move] | None = state.get(_CLAIM)
        if claim is not None:
            workload, move = claim
            with self._lock:
                self._state.moves[workload] = move
                self._hold(workload, move, pod)

    # ------------------------------------------------------------ a round

    def run_round(self) -> RoundReport | None:
        """One round (the periodic task; tests call it): None on a standby replica."""
        what_if = self.handle.what_if
        if not what_if.leading():
            self._loaded = False  # leading again later: read what the other leader kept
            return None
        now = self.handle.clock.wall()
        with self._lock:
            if not self._loaded:
                self._state = self._store.load()
                self._loaded = True
            self._state.expire(now)
            self._state.round += 1
            number = self._state.round
        src = self.source
        if src.in_fallback:
            return self._skip(number, now, "fallback")
        planner = Planner(self.handle, src, self.args, self._may_move)
        readings = planner.readings
        if not any(f.any() for f in readings.fresh.values()):
            return self._skip(number, now, "stale")
        hot = self._hot(planner.snapshot, readings)
        room = self.args.limits.per_minute - self._state.evictions_in_window(now)
        limit = min(self.args.limits.per_round, room) if not self.args.dry_run else self.args.limits.per_round
        if limit <= 0:
            return self._skip(number, now, "limit", hot)
        plan = planner.plan(hot, limit, self._traffic_hot(planner))
        moves = self._carry_out(plan, number, now)
        report = RoundReport(number, now, {n: list(k) for n, k in hot.items()}, moves, dict(plan.blocked))
        self.reports.append(report)
        self._metrics.rounds.labels(self.handle.profile_name, "moved" if moves else "idle").inc()
        return report

    def _skip(
        self, number: int, now: float, cause: str, hot: dict[str, list[str]] | None = None
    ) -> RoundReport:
        log.info(
            "Rebalancing round moves nothing round=%d cause=%s profile=%s",
            number,
            cause,
            self.handle.profile_name,
        )
        self._metrics.skipped.labels(self.handle.profile_name, cause).inc()
        self._metrics.rounds.labels(self.handle.profile_name, "skipped").inc()
        report = RoundReport(number, now, dict(hot or {}), [], {}, cause)
        self.reports.append(report)
        return report

    def _hot(self, snapshot: Snapshot, readings: Readings) -> dict[str, list[str]]:
        """Nodes above a high watermark for consecutiveRounds rounds in a row, with the kinds."""
        out: dict[str, list[str]] = {}
        seen: dict[tuple[str, str], int] = {}
        for kind, marks in self.args.watermarks.items():
            util, fresh = readings.util[kind], readings.fresh[kind]
            for row, node in enumerate(snapshot.nodes):
                if fresh[row] and util[row] > marks.high / 100:
                    n = seen[(node.name, kind)] = self._over.get((node.name, kind), 0) + 1
                    if n >= self.args.consecutive_rounds:
                        out.setdefault(node.name, []).append(kind)
        self._over = seen  # a round below the mark, or without fresh samples, starts over
        for kind in self.args.watermarks:
            self._metrics.hot.labels(self.handle.profile_name, kind).set(sum(kind in k for k in out.values()))
        return out

    def _traffic_hot(self, planner: Planner) -> set[str]:
        """Workloads whose measured crossing traffic is at least traffic.minCrossingMbps for
        consecutiveRounds rounds in a row (the traffic trigger's hysteresis, as _hot's)."""
        if self.args.traffic_min_reduction <= 0:
            return set()
        floor = self.args.traffic_min_crossing_mbps * 1e6 / 8
        seen = {
            w: self._traffic_over.get(w, 0) + 1
            for w, crossing in planner.crossing_by_workload().items()
            if crossing >= floor
        }
        self._traffic_over = seen  # a round below the minimum starts over
        return {w for w, n in seen.items() if n >= self.args.consecutive_rounds}

    def _may_move(self, pod: PodInfo) -> str:
        why = why_not(
            pod,
            profile=self.handle.profile_name,
            excluded_namespaces=self.args.excluded_namespaces,
            local_storage_allowed=self.args.evict_local_storage_pods,
        )
        if why:
            return why
        workload = workload_key(pod, self.args.workload_label)
        st = self._state
        if workload in st.moves:
            return "a pod of its workload is moving (one unavailable at a time)"
        if workload in st.workloads:
            return "its workload is cooling down after a move"
        if pod.node_name in st.nodes:
            return "its node is cooling down after a move"
        return ""

    # ------------------------------------------------------------ carrying a plan out

    def _carry_out(self, plan: Plan, number: int, now: float) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        evicted = False
        for move in plan.moves:
            text = self._describe(move, number)
            entry = {
                "pod": move.pod.key,
                "from": move.source,
                "to": move.target,
                "trigger": move.trigger,
                "why": text,
                "before": move.before,
                "after": move.after,
                "targetAfter": move.target_after,
            }
            self._metrics.planned.labels(self.handle.profile_name, move.trigger).inc()
            if self.args.dry_run:
                entry["result"] = "dryRun"
                if self._first_report(f"pod/{move.pod.uid}", now):
                    self.handle.events.event(
                        move.pod, "Normal", "RebalancePlanned", "Evict", f"dry run: {text}"
                    )
                out.append(entry)
                continue
            result = self._evict(move, text, number, now)
            entry["result"] = result
            evicted = evicted or result == EvictionResult.EVICTED.value
            out.append(entry)
        for node, why in plan.blocked.items():
            if self._first_report(f"node/{node}", now):
                ref = ObjectRef("Node", "v1", "", node)
                self.handle.events.event(
                    ref, "Warning", "RebalanceBlocked", "Evict", f"no pod can move off {node}: {why}"
                )
        if evicted:
            with self._lock:
                state = self._state
            self._store.save(state)
        return out

    def _evict(self, move: PlannedMove, text: str, number: int, now: float) -> str:
        # The move is in flight before the eviction is asked for: the ReplicaSet controller can
        # make the replacement, and the scheduler place it, before the eviction's answer is back
        # (seen over HTTP); its PreFilter must already find the move and the held place.
        workload = workload_key(move.pod, self.args.workload_label)
        record = Move(
            move.pod.key,
            move.source,
            move.target,
            now + self.args.replacement_timeout_seconds,
            move.trigger,
            number,
        )
        with self._lock:
            self._state.moves[workload] = record
            self._hold(workload, record, move.pod)
        try:
            got = self.handle.api.evict(move.pod)
        except Exception as e:  # an API error: nothing moved; the next round plans again
            self._not_moved(workload, record)
            log.warning("Rebalancing eviction failed pod=%s err=%s", move.pod.key, e)
            self._metrics.evictions.labels(self.handle.profile_name, move.trigger, "error").inc()
            return "error"
        result = got.result.value
        self._metrics.evictions.labels(self.handle.profile_name, move.trigger, result).inc()
        if got.result == EvictionResult.EVICTED:
            with self._lock:
                st = self._state
                st.workloads[workload] = now + self.args.workload_cooldown_seconds
                st.nodes[move.source] = now + self.args.node_cooldown_seconds
                st.evictions.append(now)
            self.handle.events.event(move.pod, "Normal", "Rebalanced", "Evict", text)
            return result
        self._not_moved(workload, record)
        if got.result == EvictionResult.REFUSED:
            log.info(
                "Rebalancing eviction refused by a disruption budget pod=%s message=%s",
                move.pod.key,
                got.message,
            )
            if self._first_report(f"refused/{move.pod.uid}", now):
                self.handle.events.event(
                    move.pod,
                    "Normal",
                    "RebalanceRefused",
                    "Evict",
                    f"{text}; refused: {got.message} (retried in a later round)",
                )
        return result

    def _not_moved(self, workload: str, record: Move) -> None:
        """The eviction did not happen: the move is not in flight, its place not held."""
        with self._lock:
            if self._state.moves.get(workload) is record:
                del self._state.moves[workload]
                self.source.ledger.remove(_held(workload))

    def _hold(self, workload: str, move: Move, pod: PodInfo) -> None:
        """Keep the plan's target for the replacement (lock held)."""
        twin = replacement(pod)
        self.source.ledger.hold(
            _held(workload), twin.key, move.target, self.source.pod_usage(pod), self.handle.clock.wall()
        )

    def _describe(self, move: PlannedMove, number: int) -> str:
        marks = self.args.watermarks.get(move.trigger)
        high = marks.high if marks is not None else 0.0
        return f"{move.describe(high, self.args.consecutive_rounds)} (round {number})"

    def _first_report(self, what: str, now: float) -> bool:
        """Whether an Event about `what` is due: once per cooldown, not every round."""
        if self._reported.get(what, 0.0) > now:
            return False
        if len(self._reported) > 4096:
            self._reported = {k: t for k, t in self._reported.items() if t > now}
        self._reported[what] = now + max(self.args.workload_cooldown_seconds, self.args.interval_seconds)
        return True


def _held(workload: str) -> str:
    return f"rebalancer-held/{workload}"


class _Metrics:
    def __init__(self, handle: Handle) -> None:
        m = handle.plugin_metrics
        self.rounds = _counter(
            m,
            "netsched_rebalancer_rounds_total",
            "Rebalancing rounds on the leader, by result (moved, idle, skipped).",
            ["profile", "result"],
        )
        self.skipped = _counter(
            m,
            "netsched_rebalancer_skipped_rounds_total",
            "Rounds that moved nothing by rule, by cause (fallback, stale, limit).",
            ["profile", "cause"],
        )
        self.planned = _counter(
            m,
            "netsched_rebalancer_planned_moves_total",
            "Moves planned (evicted or, in dry run, reported), by trigger.",
            ["profile", "trigger"],
        )
        self.evictions = _counter(
            m,
            "netsched_rebalancer_evictions_total",
            "Evictions asked for, by trigger and result (evicted, refused by a disruption budget, gone, conflict, error).",
            ["profile", "trigger", "result"],
        )
        self.replacements = _counter(
            m,
            "netsched_rebalancer_replacements_total",
            "Replacements placed while their move was in flight, by whether on the planned node.",
            ["profile", "on_target"],
        )
        self.hot = _gauge(
            m,
            "netsched_rebalancer_hot_nodes",
            "Nodes above a high watermark for consecutiveRounds rounds, by resource.",
            ["profile", "kind"],
        )


class _Nothing:
    def labels(self, *values: str) -> _Nothing:
        return self

    def inc(self, amount: float = 1) -> None:
        return None

    def set(self, value: float) -> None:
        return None


def _counter(m: Any, name: str, doc: str, labels: Sequence[str]) -> Any:
    return m.counter(name, doc, labels) if m is not None else _Nothing()


def _gauge(m: Any, name: str, doc: str, labels: Sequence[str]) -> Any:
    return m.gauge(name, doc, labels) if m is not None else _Nothing()
