"""The one wrapper around every plugin call: error tagging, timing and metrics.

A plugin that raises must not take the scheduler down: the fault becomes an
Error status naming the plugin (the pod is retried with backoff) and is logged
with its traceback.  Per-plugin durations are sampled (kube times plugins in
10 % of cycles, chosen per cycle state); per-extension-point durations are
always recorded, with a cached label child per (point, code).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from netsched.framework.cycle_state import CycleState
from netsched.framework.extension_points import AnyPlugin
from netsched.framework.seams import RuntimeMetrics
from netsched.framework.status import Status
from netsched.framework.types import PodInfo

log = logging.getLogger("netsched.framework.runtime")

R = TypeVar("R")

PLUGIN_METRICS_SAMPLE_PERCENT = 10  # kube samples per-plugin durations in 10 % of cycles


class PluginCalls:
    """Calls plugins for one profile and records what they cost."""

    def __init__(self, profile_name: str, observe: RuntimeMetrics | None) -> None:
        self.profile_name = profile_name
        self._obs = observe
        self._ep_timers: dict[tuple[str, str], Any] = {}
        self._rng = random.Random()

    def seed(self, seed: int) -> None:
        """Make the sampling repeatable (simulations, tests)."""
        self._rng.seed(seed)

    def new_cycle_state(self) -> CycleState:
        """A cycle's state, sampled (or not) for per-plugin timing."""
        state = CycleState()
        state.record_plugin_metrics = self._rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        return state

    def call(
        self,
        point: str,
        p: AnyPlugin,
        state: CycleState | None,
        pod: PodInfo,
        fn: Callable[..., R],
        *args: Any,
    ) -> tuple[R | None, Status | None]:
        """(fn(*args), None), or (None, an Error status naming the plugin) when fn raises."""
        obs = self._obs
        timed = obs is not None and state is not None and state.record_plugin_metrics
        t0 = time.perf_counter() if timed else 0.0
        try:
            out = fn(*args)
        except Exception as e:
            log.exception("Plugin failed extensionPoint=%s plugin=%s pod=%s", point, p.name, pod.key)
            err = Status.as_error(e, p.name)
            if timed and obs is not None:
                obs.plugin_execution_duration.labels(p.name, point, "Error").observe(time.perf_counter() - t0)
            return None, err
        if timed and obs is not None:
            st = _status_of(out)
            code = st.code.label if st is not None else "Success"
            obs.plugin_execution_duration.labels(p.name, point, code).observe(time.perf_counter() - t0)
        return out, None

    def observe(self, point: str, started: float, status: Status | None = None) -> None:
        """One extension point's duration (scheduler_framework_extension_point_duration_seconds)."""
        if self._obs is None:
            return
        code = "Success" if status is None else status.code.label
        child = self._ep_timers.get((point, code))
        if child is None:
            child = self._ep_timers[(point, code)] = self._obs.framework_extension_point_duration.labels(
                point, code, self.profile_name
            )
        child.observe(time.perf_counter() - started)


def _status_of(out: object) -> Status | None:
    """The Status inside a plugin's return value (a Status, or a tuple holding one)."""
    if isinstance(out, Status):
        return out
    if isinstance(out, tuple):
        return next((x for x in out if isinstance(x, Status)), None)
    return None
