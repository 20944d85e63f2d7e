"""Two electors over real HTTP against the fake API server, through the official client.

Durations are short (lease 1.5 s, renew deadline 1 s, retry 0.2 s) and the
clock is real, so these tests exercise request timeouts, 409s on the wire and
the fake server's resourceVersion checks together.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netsched.kube.kubeconfig import build_api_client
from netsched.kube.lease import KubeLeaseClient
from netsched.leaderelection import ElectorConfig, LeaderElector
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.rbac import allows, grants_from_deploy

pytestmark = pytest.mark.integration

NS, NAME = "netsched-system", "netsched"
LEASE_PATH = rf"^/apis/coordination\.k8s\.io/v1/namespaces/{NS}/leases/{NAME}$"
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


class Replica:
    """One scheduler replica: an elector (on its own thread once started) and a log of its leadership."""

    def __init__(self, identity: str, kubeconfig: Path, log: list[tuple[float, str, str]]) -> None:
        self.identity = identity
        self.log = log
        self.stopped = threading.Event()
        self.exit_on_loss = False
        cfg = ElectorConfig(
            name=NAME,
            namespace=NS,
            identity=identity,
            lease_duration=1.5,
            renew_deadline=1.0,
            retry_period=0.2,
        )
        self.elector = LeaderElector(
            cfg,
            # A client of its own with no rate limit, as the app builds it.
            KubeLeaseClient(build_api_client(kubeconfig=str(kubeconfig), qps=-1)),
            on_started_leading=lambda: self._record("started"),
            on_stopped_leading=self._on_stopped,
        )

    def _record(self, what: str) -> None:
        self.log.append((time.monotonic(), self.identity, what))

    def _on_stopped(self) -> None:
        self._record("stopped")
        self.stopped.set()
        if self.exit_on_loss:
            # What kube-scheduler does on a lost lease: exit, leaving the field to the standby.
            self.elector.stop(release=False)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeAPIServer]:
    with FakeAPIServer() as server:
        server.write_kubeconfig(tmp_path / "kubeconfig")
        yield server


@pytest.fixture
def log() -> list[tuple[float, str, str]]:
    return []


@pytest.fixture
def replicas(
    server: FakeAPIServer, tmp_path: Path, log: list[tuple[float, str, str]]
) -> Iterator[tuple[Replica, Replica]]:
    a = Replica("replica-a", tmp_path / "kubeconfig", log)
    b = Replica("replica-b", tmp_path / "kubeconfig", log)
    a.elector.start()
    b.elector.start()
    yield a, b
    for r in (a, b):
        r.elector.stop()
        assert r.elector._thread is not None and not r.elector._thread.is_alive()


def wait_until(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def leader_of(replicas: tuple[Replica, Replica]) -> tuple[Replica, Replica]:
    wait_until(lambda: any(r.elector.is_leader for r in replicas))
    a, b = replicas
    return (a, b) if a.elector.is_leader else (b, a)


def assert_never_two_leaders(log: list[tuple[float, str, str]]) -> None:
    leading: set[str] = set()
    for _, who, what in sorted(log):
        if what == "started":
            assert not leading, f"{who} started leading while {leading} led"
            leading.add(who)
        else:
            leading.discard(who)


def test_exactly_one_leader(
    server: FakeAPIServer, replicas: tuple[Replica, Replica], log: list[tuple[float, str, str]]
) -> None:
    leader, standby = leader_of(replicas)
    time.sleep(1.0)  # five renew periods
    assert leader.elector.is_leader and not standby.elector.is_leader
    assert standby.elector.leader == leader.identity
    lease = server.get("coordination.k8s.io/leases", NAME, NS)
    assert lease["spec"]["holderIdentity"] == leader.identity
    assert lease["spec"]["leaseDurationSeconds"] == 2
    # MicroTime as the API server requires it: six fraction digits, even for .000000.
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", lease["spec"]["renewTime"])
    assert_never_two_leaders(log)

    # Every lease call the electors made is allowed by the Role in deploy/.
    grants = grants_from_deploy(DEPLOY)
    calls = {r for r in server.requests if r.resource == "leases"}
    assert {r.verb for r in calls} <= {"get", "create", "update"}
    for r in calls:
        assert allows(grants, r.api_group, r.resource, r.verb, r.namespace, NAME), r


def test_release_hands_over_quickly(
    replicas: tuple[Replica, Replica], log: list[tuple[float, str, str]]
) -> None:
    leader, standby = leader_of(replicas)
    released_at = time.monotonic()
    assert leader.elector.release()
    wait_until(lambda: standby.elector.is_leader, timeout=3.0)
    # Well inside one lease duration: the standby did not wait for expiry.
    assert time.monotonic() - released_at < 1.5
    assert not leader.elector.is_leader
    assert_never_two_leaders(log)


def test_cut_off_leader_stops_before_the_standby_takes_over(
    server: FakeAPIServer, replicas: tuple[Replica, Replica], log: list[tuple[float, str, str]]
) -> None:
    leader, standby = leader_of(replicas)
    leader.exit_on_loss = True
    time.sleep(0.3)
    # Writes fail from now on; reads still work, so the standby keeps watching the record.
    cut_at = time.monotonic()
    fault = server.inject_fault("PUT", LEASE_PATH, status=503, count=-1)
    assert leader.stopped.wait(3.0)
    server.clear_faults()
    wait_until(lambda: standby.elector.is_leader, timeout=5.0)

    stopped = next(t for t, who, what in log if (who, what) == (leader.identity, "stopped"))
    started = next(t for t, who, what in log if (who, what) == (standby.identity, "started"))
    assert fault.hits >= 1
    # The last good renew was before cut_at; the deadline is 1 s, leases last 2 s on the record.
    assert stopped - cut_at <= 1.0 + 0.25
    assert started > stopped
    assert started - cut_at >= 1.5
    assert_never_two_leaders(log)


def test_taking_over_a_released_lease_keeps_its_metadata(server: FakeAPIServer, tmp_path: Path) -> None:
    server.create(
        "coordination.k8s.io/leases",
        {
            "metadata": {"name": NAME, "labels": {"team": "sched"}, "annotations": {"note": "keep"}},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 7},
        },
        NS,
    )
    replica = Replica("replica-c", tmp_path / "kubeconfig", [])
    replica.elector.start()
    try:
        wait_until(lambda: replica.elector.is_leader)
    finally:
        replica.elector.stop()
    lease = server.get("coordination.k8s.io/leases", NAME, NS)
    assert lease["metadata"]["labels"] == {"team": "sched"}
    assert lease["metadata"]["annotations"] == {"note": "keep"}
    # Stopping released it again: holder empty, transitions counted once.
    assert lease["spec"]["holderIdentity"] == ""
    assert lease["spec"]["leaseTransitions"] == 8
