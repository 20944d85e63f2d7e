"""Another binder wins the race for a pod netsched has popped (a second scheduler, a controller).

As kube's handleSchedulingFailure: an ordinary failure (counted as an error attempt) that, seeing
the pod assigned, drops it from the queue with an info line. No traceback, no warning or error,
no FailedScheduling event, nothing left queued or assumed. Whether the watch shows the binding
while the scheduling cycle runs (AssumePod fails) or between Reserve and Bind (the bind gets 409).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from netsched.app import build_registry
from netsched.clock import ManualClock
from netsched.config import load_config
from netsched.framework import PreBindPlugin, PreFilterPlugin, PreFilterResult
from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
from netsched.framework.types import PodInfo
from netsched.inmemory import InMemoryCluster
from netsched.kube.errors import Conflict
from netsched.testing.builders import make_node, make_pod

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
  plugins:
    preFilter:
      enabled: [{name: Thief}]
    preBind:
      enabled: [{name: Thief}]
"""


class Thief(PreFilterPlugin[None], PreBindPlugin[None]):
    """At the point `at` ("cycle": PreFilter, "bind": PreBind), delivers the watch event of another
    binder binding the pod to a node (`stolen_to`; at PreBind, not the one chosen) through the
    cluster's event handlers, as the pod reflector would; at PreBind the API server then answers
    our binding as it answers the losing binder."""

    name = "Thief"
    at = ""
    stolen_to = ""
    cluster: InMemoryCluster | None = None

    def _steal(self, pod: PodInfo, node: str) -> None:
        assert self.cluster is not None
        self.stolen_to = node
        raw: dict[str, Any] = dict(pod.raw)
        raw["spec"] = dict(raw.get("spec") or {}, nodeName=node)
        raw["metadata"] = dict(raw.get("metadata") or {}, uid=pod.uid, resourceVersion="99")
        self.cluster.handlers.on_pod_event("MODIFIED", raw)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if self.at == "cycle":
            self._steal(pod, "n2")
        return None, Status.success()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if self.at == "bind":
            self._steal(pod, "n1" if node_name == "n2" else "n2")
            assert self.cluster is not None
            self.cluster.api.fail_bind = Conflict(
                409, "Conflict", f'pod {pod.key} is already assigned to node "{self.stolen_to}"'
            )
        return Status.success()


def _cluster(at: str) -> tuple[InMemoryCluster, Thief]:
    reg = build_registry([Thief])
    c = InMemoryCluster(load_config(CONFIG, reg), reg, clock=ManualClock(), keep_events=True, observe=True)
    c.add_nodes([make_node(n).capacity(cpu="4", memory="8Gi", pods="10").obj() for n in ("n1", "n2")])
    thief = c.frameworks["a"].plugins["Thief"]
    assert isinstance(thief, Thief)
    thief.cluster, thief.at = c, at
    return c, thief


def _attempts(c: InMemoryCluster, result: str) -> float:
    assert c.metrics is not None
    value = c.metrics.registry.get_sample_value(
        "scheduler_schedule_attempts_total", {"result": result, "profile": "a"}
    )
    return value or 0.0


@pytest.mark.parametrize("at", ["cycle", "bind"])
def test_a_pod_bound_by_another_binder_leaves_the_queue_with_an_info_line(
    at: str, caplog: pytest.LogCaptureFixture
) -> None:
    c, thief = _cluster(at)
    c.add_pod(make_pod("p").scheduler("a").uid("u1").req(cpu="1").obj())
    with caplog.at_level(logging.DEBUG):
        assert c.schedule_pending() == 1
    assert c.queue.where("u1") is None  # not requeued: nothing left to schedule
    assert not any(c.pending().values())
    assert c.cache.bound_node("u1") == thief.stolen_to and not c.cache.is_assumed("u1")
    assert c.cache.assumed_count() == 0
    assert _attempts(c, "error") == 1 and _attempts(c, "scheduled") == 0
    assert not [e for e in c.events.events if e[2] in ("FailedScheduling", "Scheduled")]
    assert not c.api.conditions  # no PodScheduled=False written for a pod that is bound
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [r for r in caplog.records if r.exc_info]
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    line = "Pod has been assigned to node. Abort adding it back to queue. pod=default/p node=%s profile=a"
    assert line % thief.stolen_to in lines
