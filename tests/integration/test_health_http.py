"""/livez and /healthz over real HTTP for a scheduler on the fake API server, on a manual clock.

A wedged scheduling loop (a Filter plugin that does not return), a leader whose lease renewal
hangs on the API server, a leader whose lease writes are refused, and an informer that stopped
watching: each shows in the probe's answer with its reason, and recovers. Time only moves when
the test steps the clock; waits are on conditions, never sleeps.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.clock import ManualClock
from netsched.config import load_config
from netsched.framework import CycleState, FilterPlugin, NodeInfo, PodInfo, Status
from netsched.health import LOOP_STALL, ProcessHealth
from netsched.kube import KubeAPI, build_api_client
from netsched.leaderelection import WATCHDOG_GRACE
from netsched.observability.server import ObservabilityServer
from netsched.serve import endpoints_server, start_election
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

NS = "kube-system"
# A renew deadline long in real seconds too: a held renewal's request timeout is the time left
# before it, and the test must see the watchdog fire while the request is still held.
LEASE, RENEW, RETRY = 60, 50, 2


class Gate:
    """What the Wedge plugin blocks on: `entered` once a pod named "stuck" is in Filter."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()


def wedge_plugin(gate: Gate) -> type[FilterPlugin[None]]:
    class Wedge(FilterPlugin[None]):
        name = "Wedge"

        def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
            if pod.name == "stuck":
                gate.entered.set()
                gate.release.wait(60)
            return Status.success()

    return Wedge


def config(leader_elect: bool) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: {str(leader_elect).lower()}
  leaseDuration: {LEASE}s
  renewDeadline: {RENEW}s
  retryPeriod: {RETRY}s
  resourceNamespace: {NS}
  resourceName: netsched
profiles:
- schedulerName: netsched
  plugins:
    filter:
      enabled:
      - name: Wedge
"""


class Rig:
    def __init__(self, server: FakeAPIServer, app: SchedulerApp, health: ProcessHealth, clock: ManualClock):
        self.server, self.app, self.health, self.clock = server, app, health, clock
        self.endpoints: ObservabilityServer = endpoints_server(app, "127.0.0.1", 0, health).start()

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.endpoints.port, timeout=10)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()


def _rig(
    server: FakeAPIServer, kubeconfig: Path, tmp_path: Path, gate: Gate, leader_elect: bool
) -> Iterator[Rig]:
    path = tmp_path / "config.yaml"
    path.write_text(config(leader_elect))
    registry = build_registry([wedge_plugin(gate)])
    clock = ManualClock()
    server.create("nodes", make_node("n0").capacity(cpu="4").obj())
    app = SchedulerApp(
        load_config(path, registry),
        registry,
        KubeAPI(build_api_client(str(kubeconfig))),
        clock=clock,
        options=AppOptions(watch_timeout=5),
    )
    health = ProcessHealth(app)
    rig = None
    try:
        assert app.start_informers(sync_timeout=10)
        app.start_background()
        rig = Rig(server, app, health, clock)
        yield rig
    finally:
        gate.release.set()
        if rig is not None:
            rig.endpoints.stop()
        app.shutdown(timeout=5)


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def rig(server: FakeAPIServer, kubeconfig: Path, tmp_path: Path, gate: Gate) -> Iterator[Rig]:
    yield from _rig(server, kubeconfig, tmp_path, gate, leader_elect=False)


@pytest.fixture
def elected(server: FakeAPIServer, kubeconfig: Path, tmp_path: Path, gate: Gate) -> Iterator[Rig]:
    yield from _rig(server, kubeconfig, tmp_path, gate, leader_elect=True)


def test_a_wedged_scheduling_loop_fails_livez_until_it_comes_round(rig: Rig, gate: Gate) -> None:
    rig.app.start_scheduling()
    assert rig.get("/livez?verbose") == (
        200,
        "[+]ping ok\n[+]schedulingLoop ok\n[+]informers ok\nlivez check passed\n",
    )
    # Idle with nothing to schedule: healthy however long nothing happens.
    rig.clock.step(10 * LOOP_STALL)
    assert rig.get("/livez") == (200, "ok\n")

    rig.server.create("pods", make_pod("stuck").scheduler("netsched").req(cpu="1").obj())
    assert gate.entered.wait(10), "the pod never reached the Wedge filter"
    assert rig.get("/livez")[0] == 200  # within the limit
    rig.clock.step(LOOP_STALL + 1)
    for path in ("/livez", "/healthz"):
        status, body = rig.get(path)
        assert status == 500, body
        assert "[-]schedulingLoop failed: scheduling loop has not come round for 61s (limit 60s)" in body
        assert "0 in activeQ, 1 in a scheduling cycle" in body
        assert "[+]informers ok" in body and body.endswith(f"{path[1:]} check failed\n")

    gate.release.set()
    wait_until(lambda: rig.server.get("pods", "stuck")["spec"].get("nodeName") == "n0", what="bound")
    wait_until(lambda: rig.get("/livez")[0] == 200, what="healthy again")


def test_pods_parked_as_unschedulable_leave_the_loop_healthy(rig: Rig) -> None:
    rig.app.start_scheduling()
    rig.server.create("pods", make_pod("huge").scheduler("netsched").req(cpu="64").obj())
    wait_until(lambda: rig.app.queue.counts()["unschedulable"] == 1, what="parked")
    rig.clock.step(LOOP_STALL + 1)
    assert rig.get("/livez") == (200, "ok\n")


def test_a_standby_loop_is_not_judged(rig: Rig, gate: Gate) -> None:
    # Not leading: nothing is popped, pods wait in activeQ, and that is no reason to restart.
    rig.server.create("pods", make_pod("waiting").scheduler("netsched").req(cpu="1").obj())
    wait_until(lambda: rig.app.queue.counts()["active"] == 1, what="queued")
    rig.clock.step(LOOP_STALL + 1)
    assert rig.get("/livez") == (200, "ok\n")


def test_an_informer_that_stopped_watching_fails_healthz(rig: Rig) -> None:
    nodes = next(r for r in rig.app.reflectors if r.name == "nodes")
    nodes.stop()
    status, body = rig.get("/healthz")
    assert status == 500
    assert "[-]informers failed: informers stopped watching: nodes\n" in body


def lease_path() -> str:
    return rf"^/apis/coordination\.k8s\.io/v1/namespaces/{NS}/leases/netsched$"


def lead(rig: Rig) -> threading.Event:
    stop = threading.Event()
    elector = start_election(rig.app, stop, rig.health)
    assert elector is not None
    wait_until(lambda: rig.app.leading, what="leading")
    return stop


def test_a_leader_whose_renewal_hangs_fails_the_watchdog(elected: Rig) -> None:
    rig = elected
    lead(rig)
    body = rig.get("/healthz?verbose")[1]
    assert body.startswith("[+]ping ok\n[+]leaderElection ok\n[+]schedulingLoop ok\n"), body
    hold = threading.Event()
    fault = rig.server.inject_fault("PUT", lease_path(), status=503, count=-1, hold=hold)
    try:
        rig.clock.step(RETRY)  # the renewal is sent, and hangs
        wait_until(lambda: fault.hits == 1, what="renewal held")
        rig.clock.step(LEASE + WATCHDOG_GRACE - RETRY)
        assert rig.get("/livez")[0] == 200  # exactly at the limit: not yet
        rig.clock.step(1)
        status, body = rig.get("/livez")
        assert status == 500
        limit = LEASE + WATCHDOG_GRACE
        assert (
            f"[-]leaderElection failed: leader has not renewed lease {NS}/netsched for {limit + 1:.0f}s "
            f"(limit {limit:.0f}s)\n"
        ) in body
    finally:
        hold.set()
    # The renewal fails, past its deadline: the replica stops leading and campaigns again.
    wait_until(lambda: not rig.app.leading, what="stopped leading")
    wait_until(lambda: rig.get("/livez")[0] == 200, what="a campaigning standby is healthy")
    assert "role=standby" in rig.get("/readyz")[1]


def test_a_leader_whose_lease_writes_are_refused_steps_down_and_stays_live(elected: Rig) -> None:
    rig = elected
    lead(rig)
    fault = rig.server.inject_fault("PUT", lease_path(), status=503, count=-1)
    for attempt in range(1, RENEW // RETRY + 1):
        assert rig.app.leading
        rig.clock.step(RETRY)
        wait_until(lambda n=attempt: fault.hits >= n, what=f"renewal {attempt} refused")
        assert rig.get("/livez")[0] == 200
    # kube's renew loop gives up at the renew deadline: leading stops, and with it scheduling; the
    # standby keeps trying (refused), which is healthy: a restart would not get the lease back.
    wait_until(lambda: not rig.app.leading, what="stopped leading")
    refused = fault.hits
    wait_until(lambda: step_until(rig, lambda: fault.hits > refused), what="campaigning")
    assert rig.get("/healthz?verbose")[1].startswith("[+]ping ok\n[+]leaderElection ok\n")
    rig.server.clear_faults()
    wait_until(lambda: step_until(rig, lambda: rig.health.elector.is_leader), what="elector leading again")
    wait_until(lambda: rig.app.leading, what="leading again")


def step_until(rig: Rig, done: Callable[[], bool]) -> bool:
    """done(), else time moves past the longest jittered retry wait (jitter factor 1.2): the
    elector may not be waiting yet when a step comes, so wait_until polls this."""
    if done():
        return True
    rig.clock.step(RETRY * 2.2)
    return False
