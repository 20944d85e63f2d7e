"""Which plugins a failed attempt records as its rejectors (scheduler_unschedulable_pods, hints).

As kube: pop clears the last attempt's rejectors; a rejection (Unschedulable, from Filter or
Reserve) records its plugin; an Error records none, whichever plugin it came from.
"""

from __future__ import annotations

import pytest

from netsched.app import build_registry
from netsched.clock import ManualClock
from netsched.config import load_config
from netsched.framework import FilterPlugin, ReservePlugin
from netsched.framework.cycle_state import CycleState
from netsched.framework.status import Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.inmemory import InMemoryCluster
from netsched.queue import BACKOFF, UNSCHEDULABLE
from netsched.testing.builders import make_node, make_pod

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
  plugins:
    filter:
      enabled: [{name: Flip}]
    reserve:
      enabled: [{name: Flip}]
"""


class Flip(FilterPlugin, ReservePlugin):
    """Rejects ("reject"), fails with an Error ("raise", "error") or lets through ("pass"), at
    Filter or at Reserve: whatever the test sets on `mode` and `at`."""

    name = "Flip"
    mode = "pass"
    at = "filter"

    def _outcome(self, point: str) -> Status:
        if point != self.at or self.mode == "pass":
            return Status.success()
        if self.mode == "raise":
            raise RuntimeError("broken")
        return Status.error("broken") if self.mode == "error" else Status.unschedulable("no")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return self._outcome("filter")

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._outcome("reserve")

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None


def _cluster() -> tuple[InMemoryCluster, Flip]:
    reg = build_registry([Flip])
    c = InMemoryCluster(load_config(CONFIG, reg), reg, clock=ManualClock())
    c.add_nodes([make_node("n1").capacity(cpu="4", memory="8Gi", pods="10").obj()])
    plugin = c.frameworks["a"].plugins["Flip"]
    assert isinstance(plugin, Flip)
    return c, plugin


def _attempt(c: InMemoryCluster, uid: str) -> None:
    c.queue.activate([uid])
    assert c.schedule_pending(limit=1) == 1


@pytest.mark.parametrize("at", ["filter", "reserve"])
def test_a_rejection_records_its_plugin(at: str) -> None:
    c, flip = _cluster()
    flip.mode, flip.at = "reject", at
    c.add_pod(make_pod("p").scheduler("a").uid("u1").obj())
    assert c.schedule_pending(limit=1) == 1
    assert c.queue.where("u1") == UNSCHEDULABLE
    assert c.queue.rejections() == {("Flip", "a"): 1}


@pytest.mark.parametrize(("mode", "at"), [("raise", "filter"), ("error", "reserve")])
def test_an_error_carrying_a_plugin_is_no_rejection_by_it(mode: str, at: str) -> None:
    c, flip = _cluster()
    flip.mode, flip.at = mode, at
    c.add_pod(make_pod("p").scheduler("a").uid("u1").obj())
    assert c.schedule_pending(limit=1) == 1
    assert c.queue.where("u1") == BACKOFF
    assert c.queue.rejections() == {}


def test_an_error_after_a_rejection_does_not_keep_the_old_rejector() -> None:
    c, flip = _cluster()
    flip.mode = "reject"
    c.add_pod(make_pod("p").scheduler("a").uid("u1").obj())
    assert c.schedule_pending(limit=1) == 1
    assert c.queue.rejections() == {("Flip", "a"): 1}
    flip.mode = "raise"
    _attempt(c, "u1")
    assert c.queue.where("u1") == BACKOFF
    assert c.queue.rejections() == {}  # kube's pop cleared it; the Error recorded none
