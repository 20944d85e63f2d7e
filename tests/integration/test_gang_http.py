"""Gang scheduling over real HTTP: the SchedulerApp with a Coscheduling profile against the fake
API server, which serves PodGroups (list/watch and the status subresource); and with
GangTopology, gangs placed whole in one rack of a racked fake cluster, the link load measured
by a real Prometheus.

Each test ends by checking that nothing is held: no assumed pods in the cache, no pods waiting
at Permit, and no binding of a gang that did not start whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from netsched.app import SchedulerApp
from netsched.plugins.coscheduling import POD_GROUP_LABEL
from netsched.plugins.gangs import GANGS, TOPOLOGY_PREFERRED, TOPOLOGY_REQUIRED
from netsched.queue import UNSCHEDULABLE
from netsched.serve import debug_handlers
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import COSCHEDULING_PLUGINS, NETSCHED_PROFILE_FAST_BACKOFF
from netsched.testing.exporter import SyntheticExporter, fake_nodes
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.prometheus import PrometheusServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

PG = "scheduling.x-k8s.io/podgroups"

CONFIG = (
    NETSCHED_PROFILE_FAST_BACKOFF
    + COSCHEDULING_PLUGINS
    + """\
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 30
      podGroupBackoffSeconds: 1
"""
)


@pytest.fixture
def app(scheduler_app: Callable[..., SchedulerApp], server: FakeAPIServer) -> SchedulerApp:
    server.create_crd(PG)  # PodGroups are served from before the scheduler starts
    return scheduler_app(CONFIG)


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


def test_a_gated_member_arriving_after_its_sibling_was_turned_away_completes_the_gang(
    server: FakeAPIServer, app: SchedulerApp
) -> None:
    nodes(server)
    podgroup(server, "late", 2, scheduleTimeoutSeconds=1)
    member(server, "late", "late0")
    start(app)
    wait_until(lambda: events(server, "late0", "FailedScheduling"), what="late0 turned away: too few")
    # Never tried itself, the gated member still completes the count: late0 goes to Permit.
    member(server, "late", "late1", gated=True)
    wait_until(lambda: events(server, "late0", "WaitingForGang"), what="late0 waiting at Permit")
    wait_until(lambda: events(server, "late", "GangReleased", kind="PodGroup"), timeout=15, what="released")
    wait_until(lambda: holds_nothing(app), what="nothing held")
    assert bound(server, "late") == []


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


# ------------------------------------------------------------------ gangs placed whole in one rack
# Three racks of two 4-cpu nodes, 1 Gb/s links, load measured by a real Prometheus scraping the
# synthetic exporter: r1 has the coldest links but one of its nodes is taken, r2 is lukewarm,
# r3 hot. A gang of four 2-cpu members of 100 Mbit/s needs a whole rack.

RACK = "example.com/rack"
WINDOW = "4s"
RACK_OF = {"node-0": "r1", "node-1": "r1", "node-2": "r2", "node-3": "r2", "node-4": "r3", "node-5": "r3"}
RX = {"node-0": 1e6, "node-1": 1e6, "node-2": 40e6, "node-3": 40e6, "node-4": 90e6, "node-5": 90e6}

# The Coscheduling profile above plus GangTopology (racks) and NetworkTraffic on one Prometheus.
TOPOLOGY_CONFIG = (
    CONFIG.replace(
        "      - name: Coscheduling\n",
        "      - name: Coscheduling\n      - {name: GangTopology, weight: 2}\n      - {name: NetworkTraffic, weight: 3}\n",
    )
    + """\
  - name: GangTopology
    args:
      levels: [topology.kubernetes.io/zone, example.com/rack]
      prometheus: &prom {prometheusAddress: URL, pollIntervalSeconds: 1, timeoutSeconds: 0.5,
                         maxSampleAgeSeconds: 4, rateWindow: WINDOW}
  - name: NetworkTraffic
    args: {prometheus: *prom}
"""
)


@pytest.fixture
def racks(
    server: FakeAPIServer,
    prometheus: Callable[..., PrometheusServer],
    scheduler_app: Callable[..., SchedulerApp],
) -> Iterator[tuple[FakeAPIServer, SchedulerApp]]:
    nodes = fake_nodes(6)
    with SyntheticExporter(nodes) as exporter:
        for name, rx in RX.items():
            exporter.set_load(name, rx=rx)
        for n in nodes:
            b = make_node(n.name).capacity(cpu="4", memory="16Gi", pods="110").address("InternalIP", n.ip)
            server.create("nodes", b.zone("z1").label(RACK, RACK_OF[n.name]).obj())
        # r1's coldest links sit next to a node already full.
        server.create("pods", make_pod("tenant").node("node-0").req(cpu="4").obj())
        prom = prometheus([exporter.target])
        prom.wait_for(
            f'rate(node_network_receive_bytes_total{{node="node-4",device="eth0"}}[{WINDOW}])',
            lambda r: bool(r) and abs(float(r[0]["value"][1]) - RX["node-4"]) < 0.02 * RX["node-4"],
            timeout=30,
        )
        server.create_crd(PG)
        app = scheduler_app(TOPOLOGY_CONFIG.replace("URL", prom.url).replace("WINDOW", WINDOW))
        assert app.start_informers(sync_timeout=10)
        app.start_background()
        assert app.hub.trigger(timeout=10)
        app.start_scheduling()
        yield server, app


def rack_gang(server: FakeAPIServer, name: str, members: int, **annotations: str) -> None:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": annotations}
    server.create(
        PG,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": meta,
            "spec": {"minMember": members},
        },
    )
    for i in range(members):
        pod = make_pod(f"{name}-{i}").scheduler("netsched").label(POD_GROUP_LABEL, name).req(cpu="2")
        server.create("pods", pod.annotation("kubernetes.io/ingress-bandwidth", "100M").obj())


def nodes_of(server: FakeAPIServer, prefix: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in server.list("pods", "default")
        if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
    }


def test_a_gang_lands_whole_in_the_rack_with_the_most_headroom_that_can_hold_it(
    racks: tuple[FakeAPIServer, SchedulerApp],
) -> None:
    server, app = racks
    rack_gang(server, "train", 4, **{TOPOLOGY_PREFERRED: RACK})
    got = wait_until(
        lambda: len(nodes_of(server, "train")) == 4 and nodes_of(server, "train"), what="gang bound"
    )
    # r1 (coldest links) holds 2 of 4; r3's links are too hot for it.
    assert {RACK_OF[n] for n in got.values()} == {"r2"}, got
    placement = app.shared.find(GANGS).placement("default/train")  # type: ignore[union-attr]
    assert placement is not None and placement.chosen == f"{RACK}=r2"
    by = {v.value: v for v in placement.considered}
    assert not by["r1"].feasible and "too small" in by["r1"].reason
    # r2's links: 32 % measured, plus two members of 100 Mbit/s (10 % each) per node.
    assert by["r2"].peak == pytest.approx(0.52, abs=0.02)
    # r3's links (72 %) would go above the 80 % threshold with one member (10 %).
    assert not by["r3"].feasible and "link above 80%" in by["r3"].reason
    assert (
        app.metrics.registry.get_sample_value(
            "netsched_gang_placements_total", {"outcome": "placed", "level": RACK, "profile": "netsched"}
        )
        == 1
    )
    # /debug/explain for a member: the gang's decision, each rack and why, the chosen one.
    explain = debug_handlers(app)["/debug/explain"]
    status, _, body = explain({"pod": ["default/train-0"], "format": ["text"]})
    text = body.decode()
    assert status == 200 and f"gang default/train (preferred {RACK}, 4 member(s) to place): placed in" in text
    assert f"{RACK}=r2: holds the gang (peak link 52%" in text and f"{RACK}=r1: too small" in text
    status, _, body = explain({"pod": ["default/train-1"]})
    doc = json.loads(body)
    assert doc["gang"]["chosen"] == f"{RACK}=r2"
    by_domain = {d["domain"]: d for d in doc["gang"]["domains"]}
    assert by_domain["r2"]["linkHeadroom"] == pytest.approx(0.48, abs=0.02)


def test_a_gang_no_rack_can_hold_waits_holds_nothing_and_the_events_say_why(
    racks: tuple[FakeAPIServer, SchedulerApp],
) -> None:
    server, app = racks
    rack_gang(server, "wide", 5, **{TOPOLOGY_REQUIRED: RACK})  # 10 cpu: every rack has 8 at most
    # Members created before the fifth are turned away for too few siblings; once the gang is
    # whole, a member's FailedScheduling names every rack and why it cannot hold the gang.
    msgs = wait_until(
        lambda: [m for i in range(5) for m in events(server, f"wide-{i}", "FailedScheduling") if RACK in m],
        timeout=15,
        what="FailedScheduling naming the racks",
    )
    for rack in ("r1", "r2", "r3"):
        assert f"{RACK}={rack}: too small" in msgs[0], msgs[0]
    assert wait_until(
        lambda: events(server, "wide", "FailedScheduling", kind="PodGroup"), what="PodGroup event"
    )
    wait_until(lambda: holds_nothing(app), what="nothing held")
    assert nodes_of(server, "wide") == {}
    # A gang that fits goes on being placed meanwhile.
    rack_gang(server, "small", 2, **{TOPOLOGY_REQUIRED: RACK})
    got = wait_until(
        lambda: len(nodes_of(server, "small")) == 2 and nodes_of(server, "small"), what="small gang bound"
    )
    assert len({RACK_OF[n] for n in got.values()}) == 1
    assert nodes_of(server, "wide") == {}
