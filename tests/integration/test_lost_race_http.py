"""Another binder binds pods behind the scheduler's back during a burst, over HTTP.

The fake API server binds a third of the pods while netsched's scheduling cycle runs for them
(its cache hears of it before the pod is assumed) and another third between Reserve and Bind
(netsched's binding then gets the API server's 409). As kube-scheduler: each is an ordinary
failure that, seeing the pod assigned, leaves the queue with an info line. No traceback, no
warning or error, nothing lost: every pod ends bound once, netsched's own with their Scheduled
event, the queue and the assumed pods empty.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.framework import PreBindPlugin, PreFilterPlugin, PreFilterResult
from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
from netsched.framework.types import PodInfo
from netsched.kube import KubeAPI, build_api_client
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE_FAST_BACKOFF
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

PODS = 30
CONFIG = (
    NETSCHED_PROFILE_FAST_BACKOFF
    + """\
  plugins:
    preFilter:
      enabled: [{name: Rival}]
    preBind:
      enabled: [{name: Rival}]
"""
)


class Rival(PreFilterPlugin[None], PreBindPlugin[None]):
    """Another binder: binds pod i on the API server itself, to n0 or n1, during netsched's
    scheduling cycle (i % 3 == 0, at PreFilter) or its binding cycle (i % 3 == 1, at PreBind, to
    the node netsched did not choose), then waits until netsched's cache has heard of it from
    its watch, so the race is decided the same way on every run."""

    name = "Rival"
    server: FakeAPIServer | None = None
    app: SchedulerApp | None = None
    stolen: dict[str, str] = {}  # pod name -> node the rival bound it to

    def _steal(self, pod: PodInfo, node: str) -> None:
        assert self.server is not None and self.app is not None
        self.server.bind(pod.namespace, pod.name, node)
        self.stolen[pod.name] = node
        app = self.app
        wait_until(lambda: app.cache.bound_node(pod.uid) == node, what=f"{pod.key} seen bound to {node}")

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if int(pod.name.split("-")[1]) % 3 == 0:
            self._steal(pod, "n0")
        return None, Status.success()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if int(pod.name.split("-")[1]) % 3 == 1:
            self._steal(pod, "n1" if node_name == "n0" else "n0")
        return Status.success()


@pytest.fixture
def app(server: FakeAPIServer, kubeconfig: Path) -> Iterator[SchedulerApp]:
    registry = build_registry([Rival])
    app = SchedulerApp(
        load_config(CONFIG, registry),
        registry,
        KubeAPI(build_api_client(str(kubeconfig), qps=500, burst=1000, pool_size=24)),
        options=AppOptions(metrics_bind_address="127.0.0.1:0", watch_timeout=5),
    )
    Rival.server, Rival.app, Rival.stolen = server, app, {}
    try:
        yield app
    finally:
        app.shutdown(timeout=5)
        Rival.server = Rival.app = None


def test_pods_another_binder_takes_during_a_burst_leave_the_queue_quietly(
    server: FakeAPIServer, app: SchedulerApp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="netsched")
    for i in range(3):
        server.create("nodes", make_node(f"n{i}").capacity(cpu="64", memory="64Gi", pods="110").obj())
    names = [f"p-{i}" for i in range(PODS)]
    for name in names:
        server.create("pods", make_pod(name).scheduler("netsched").req(cpu="100m").obj())
    assert app.start_informers(sync_timeout=10)
    app.start_background()
    app.start_scheduling()

    def node_of(name: str) -> str:
        return str(server.get("pods", name, "default")["spec"].get("nodeName") or "")

    wait_until(lambda: all(node_of(n) for n in names), timeout=30, what="every pod bound")
    ours = [n for n in names if n not in Rival.stolen]
    assert len(Rival.stolen) == 2 * PODS // 3 and len(ours) == PODS // 3
    assert all(node_of(n) == node for n, node in Rival.stolen.items())

    def scheduled() -> set[str]:
        events = server.list("events.k8s.io/events", None)
        return {e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled"}

    assert wait_until(lambda: scheduled() == set(ours), what="a Scheduled event for each of ours")
    wait_until(lambda: app.scheduler.binder.inflight == 0, what="bindings finished")
    assert app.cache.assumed_count() == 0
    assert not any(app.queue.counts().values())
    assert not [e for e in server.list("events.k8s.io/events", None) if e.get("reason") == "FailedScheduling"]
    assert app.metrics.bind_errors.labels("bind", "netsched")._value.get() == PODS // 3
    # One binding request each for ours and for those lost at Bind (answered 409), none for the rest.
    bindings = [r for r in server.requests if r.subresource == "binding"]
    assert len(bindings) == 2 * PODS // 3

    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert not [r for r in caplog.records if r.exc_info], caplog.text
    dropped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Pod has been assigned")]
    assert sorted(dropped) == sorted(
        f"Pod has been assigned to node. Abort adding it back to queue. pod=default/{n} node={node} "
        "profile=netsched"
        for n, node in Rival.stolen.items()
    )
