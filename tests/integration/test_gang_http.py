"""Gang scheduling over real HTTP: the SchedulerApp with a Coscheduling profile against the fake
API server, which serves PodGroups (list/watch and the status subresource).

Each test ends by checking that nothing is held: no assumed pods in the cache, no pods waiting
at Permit, and no binding of a gang that did not start whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.kube import KubeAPI, build_api_client
from netsched.plugins.coscheduling import POD_GROUP_LABEL
from netsched.queue import UNSCHEDULABLE
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

PG = "scheduling.x-k8s.io/podgroups"

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
profiles:
- schedulerName: netsched
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 30
      podGroupBackoffSeconds: 1
"""


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(watch_timeout=5.0, bookmark_interval=0.5) as srv:
        yield srv


@pytest.fixture
def app(server: FakeAPIServer, tmp_path: Path) -> Iterator[SchedulerApp]:
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    registry = build_registry()
    cfg = load_config(CONFIG, registry)
    client = build_api_client(str(kubeconfig), qps=500, burst=1000, pool_size=24)
    a = SchedulerApp(
        cfg,
        registry,
        KubeAPI(client),
        options=AppOptions(metrics_bind_address="127.0.0.1:0", watch_timeout=5),
    )
    yield a
    a.shutdown(timeout=5)


def start(app: SchedulerApp) -> None:
    assert app.start_informers(sync_timeout=10)
    app.start_background()
    app.start_scheduling()


def nodes(server: FakeAPIServer, n: int = 2, cpu: str = "4") -> None:
    for i in range(n):
        server.create("nodes", make_node(f"n{i}").capacity(cpu=cpu, pods="110").obj())


def podgroup(server: FakeAPIServer, name: str, min_member: int, **spec: Any) -> None:
    server.create(
        PG,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, **spec},
        },
    )


def member(server: FakeAPIServer, group: str, name: str, cpu: str = "2", gated: bool = False) -> None:
    b = make_pod(name).scheduler("netsched").label(POD_GROUP_LABEL, group).req(cpu=cpu)
    server.create("pods", (b.gate("hold") if gated else b).obj())


def bound(server: FakeAPIServer, prefix: str) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in server.list("pods", "default")
        if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
    )


def waiting(app: SchedulerApp) -> int:
    return sum(1 for _ in app.frameworks["netsched"].iterate_waiting_pods())


def holds_nothing(app: SchedulerApp) -> bool:
    return app.cache.assumed_count() == 0 and waiting(app) == 0


def group_status(server: FakeAPIServer, name: str) -> dict[str, Any]:
    return dict(server.get(PG, name, "default").get("status") or {})


def events(server: FakeAPIServer, name: str, reason: str, kind: str = "Pod") -> list[str]:
    return [
        str(e.get("note") or "")
        for e in server.list("events.k8s.io/events", None)
        if e.get("regarding", {}).get("name") == name
        and e.get("regarding", {}).get("kind") == kind
        and e.get("reason") == reason
    ]


def status_patches(server: FakeAPIServer) -> int:
    return sum(
        1
        for r in server.requests
        if (r.api_group, r.resource, r.subresource, r.verb)
        == ("scheduling.x-k8s.io", "podgroups", "status", "patch")
    )


def test_two_gangs_competing_for_room_for_one_get_all_or_nothing(
    server: FakeAPIServer, app: SchedulerApp
) -> None:
    nodes(server)  # room for 4 pods of 2 cpu
    podgroup(server, "a", 4)
    podgroup(server, "b", 4)
    for i in range(4):
        member(server, "b", f"b{i}")
        member(server, "a", f"a{i}")
    start(app)
    winner = wait_until(
        lambda: next((g for g in ("a", "b") if len(bound(server, g)) == 4), None),
        timeout=20,
        what="one gang bound",
    )
    loser = "b" if winner == "a" else "a"
    wait_until(lambda: group_status(server, winner).get("phase") == "Scheduled", what="winner status")
    assert group_status(server, winner)["scheduled"] == 4
    wait_until(lambda: events(server, f"{loser}0", "FailedScheduling"), what="loser FailedScheduling")
    wait_until(lambda: holds_nothing(app), what="nothing held")
    assert bound(server, loser) == []
    # The status writer is asynchronous: the loser's phase settles back once nothing waits.
    wait_until(
        lambda: group_status(server, loser).get("phase") in (None, "Pending", "PreScheduling"),
        what="loser status back to PreScheduling",
    )
    assert status_patches(server) > 0


def test_timeout_releases_every_waiting_member(server: FakeAPIServer, app: SchedulerApp) -> None:
    nodes(server)
    podgroup(server, "t", 3, scheduleTimeoutSeconds=1)
    member(server, "t", "t0")
    member(server, "t", "t1")
    member(server, "t", "t2", gated=True)  # counts as a member, never schedulable
    start(app)
    msg = wait_until(
        lambda: events(server, "t", "GangReleased", kind="PodGroup"), timeout=15, what="GangReleased"
    )
    assert "group t timed out after 1s" in msg[0] and "released" in msg[0]
    wait_until(lambda: holds_nothing(app), what="nothing held")
    assert bound(server, "t") == []
    assert events(server, "t0", "WaitingForGang") or events(server, "t1", "WaitingForGang")
    wait_until(
        lambda: group_status(server, "t").get("phase") in ("PreScheduling", "Scheduling"), what="status"
    )


def test_member_deleted_while_others_wait(server: FakeAPIServer, app: SchedulerApp) -> None:
    nodes(server)
    podgroup(server, "d", 3, scheduleTimeoutSeconds=2)
    member(server, "d", "d0")
    member(server, "d", "d1")
    member(server, "d", "d2", gated=True)
    start(app)
    wait_until(lambda: waiting(app) == 2, what="two members waiting at Permit")
    wait_until(lambda: group_status(server, "d").get("phase") == "Scheduling", what="Scheduling status")
    server.delete("pods", "d2")
    # The gang can no longer reach minMember: its wait ends in the timeout, everything is
    # released, and the members stay parked (no event can help two of three; our own status
    # writes move nothing) instead of being retried on every cluster event.
    wait_until(lambda: events(server, "d", "GangReleased", kind="PodGroup"), timeout=15, what="released")
    wait_until(lambda: holds_nothing(app), what="nothing held")
    assert bound(server, "d") == []
    wait_until(lambda: group_status(server, "d").get("phase") == "Pending", what="Pending status")
    wait_until(
        lambda: sorted(p.name for p in app.queue.pending_pods()[UNSCHEDULABLE]) == ["d0", "d1"],
        what="members parked",
    )
    # A replacement member: it is tried itself, and at Permit wakes the parked ones.
    member(server, "d", "d3")
    wait_until(lambda: bound(server, "d") == ["d0", "d1", "d3"], timeout=15, what="gang bound")


def test_gang_larger_than_the_cluster_fails_clearly_and_holds_nothing(
    server: FakeAPIServer, app: SchedulerApp
) -> None:
    nodes(server)  # room for 4 of the 5
    podgroup(server, "big", 5)
    for i in range(5):
        member(server, "big", f"big{i}")
    start(app)
    got = wait_until(
        lambda: [
            m for i in range(5) for m in events(server, f"big{i}", "FailedScheduling") if "PodGroup" in m
        ],
        timeout=15,
        what="FailedScheduling",
    )
    assert any("PodGroup default/big gets rejected due to Pod" in m for m in got), got
    wait_until(lambda: events(server, "big", "GangReleased", kind="PodGroup"), what="GangReleased")
    wait_until(lambda: holds_nothing(app), what="nothing held")
    assert bound(server, "big") == []
    assert not any(r.resource == "pods" and r.subresource == "binding" for r in server.requests)
    wait_until(lambda: group_status(server, "big").get("phase") == "PreScheduling", what="status")
    assert group_status(server, "big")["scheduled"] == 0
