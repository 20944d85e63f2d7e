"""Volume scheduling end to end: the real scheduler against the fake API server over HTTP.

Nothing in the fake cluster runs a PV controller: FakePVController (the test
kit) plays it, provisioning a PV in the selected node's zone or binding a claim
to the PV the scheduler chose, so every step PreBind waits for really crosses
the wire and comes back through the informers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from netsched.app import SchedulerApp
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE_FAST_BACKOFF
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.volumes import (
    HOSTNAME,
    PVCS,
    PVS,
    SELECTED_NODE,
    STORAGECLASSES,
    ZONE,
    FakePVController,
    node_affinity,
    pv,
    pvc,
    storage_class,
)
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

CONFIG = (
    NETSCHED_PROFILE_FAST_BACKOFF
    + """\
  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: {timeout}
"""
)
ZONES = ("a", "b", "c")


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(watch_timeout=5.0, bookmark_interval=0.5) as srv:
        for z in ZONES:
            node = (
                make_node(f"n-{z}").capacity(cpu="1", memory="4Gi").label(ZONE, z).label(HOSTNAME, f"n-{z}")
            )
            srv.create("nodes", node.obj())
        srv.create(STORAGECLASSES, storage_class("fast"))
        srv.create(STORAGECLASSES, storage_class("local", provisioner="kubernetes.io/no-provisioner"))
        yield srv


@pytest.fixture
def app_factory(scheduler_app: Callable[..., SchedulerApp]) -> Callable[..., SchedulerApp]:
    """A started scheduler over `server`, with VolumeBinding's bindTimeoutSeconds = timeout."""

    def make(timeout: int = 600) -> SchedulerApp:
        return scheduler_app(CONFIG.format(timeout=timeout), start=True)

    return make


def node_of(server: FakeAPIServer, pod: str) -> str:
    return str(server.get("pods", pod, "default")["spec"].get("nodeName") or "")


def events(server: FakeAPIServer, pod: str, reason: str = "FailedScheduling") -> list[str]:
    return [
        str(e.get("note") or "")
        for e in server.list("events.k8s.io/events", None)
        if e.get("regarding", {}).get("name") == pod and e.get("reason") == reason
    ]


def volume_writes(server: FakeAPIServer) -> list[Any]:
    return [r for r in server.requests if r.verb == "patch" and r.resource in (PVS, PVCS)]


def sts_pod(i: int) -> Any:
    return (
        make_pod(f"web-{i}")
        .scheduler("netsched")
        .req(cpu="1")
        .label("app", "web")
        .owner("StatefulSet", "web")
        .pvc(f"data-web-{i}")
    )


def test_statefulset_with_wait_for_first_consumer_claims_across_three_zones(
    server: FakeAPIServer, app_factory: Any
) -> None:
    with FakePVController(server) as controller:
        app_factory()
        for i in range(3):
            server.create(PVCS, pvc(f"data-web-{i}", storage_class="fast", size="5Gi", uid=""))
            server.create("pods", sts_pod(i).obj())
        wait_until(
            lambda: all(node_of(server, f"web-{i}") for i in range(3)), timeout=20, what="3 pods bound"
        )
    nodes = {node_of(server, f"web-{i}") for i in range(3)}
    assert nodes == {"n-a", "n-b", "n-c"}  # one cpu each: one pod per zone
    for i in range(3):
        claim = server.get(PVCS, f"data-web-{i}", "default")
        node = node_of(server, f"web-{i}")
        assert claim["metadata"]["annotations"][SELECTED_NODE] == node
        volume = server.get(PVS, claim["spec"]["volumeName"])
        zone = server.get("nodes", node)["metadata"]["labels"][ZONE]
        terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [zone]
    assert len(controller.provisioned) == 3


def test_static_local_pvs_with_node_affinity(server: FakeAPIServer, app_factory: Any) -> None:
    server.create(
        PVS, pv("local-b-big", storage_class="local", size="100Gi", affinity=node_affinity(HOSTNAME, "n-b"))
    )
    server.create(
        PVS, pv("local-b", storage_class="local", size="10Gi", affinity=node_affinity(HOSTNAME, "n-b"))
    )
    server.create(PVCS, pvc("data", storage_class="local", size="10Gi", uid=""))
    with FakePVController(server):
        app_factory()
        server.create("pods", make_pod("db").scheduler("netsched").pvc("data").obj())
        wait_until(lambda: node_of(server, "db"), timeout=20, what="db bound")
    assert node_of(server, "db") == "n-b"
    volume = server.get(PVS, "local-b")  # the smallest PV that fits
    claim = server.get(PVCS, "data", "default")
    assert volume["spec"]["claimRef"]["name"] == "data"
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert claim["spec"]["volumeName"] == "local-b"
    assert "claimRef" not in server.get(PVS, "local-b-big")["spec"]


def test_a_claim_nothing_can_satisfy_fails_clearly_and_writes_nothing(
    server: FakeAPIServer, app_factory: Any
) -> None:
    server.create(PVCS, pvc("data", storage_class="local", size="10Gi"))
    app_factory()
    server.create("pods", make_pod("db").scheduler("netsched").pvc("data").obj())
    wait_until(lambda: events(server, "db"), timeout=20, what="FailedScheduling")
    assert (
        events(server, "db")[0]
        == (
            "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. "
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."  # kube's double dot
        )
    )
    assert volume_writes(server) == []
    assert node_of(server, "db") == ""
    # A PV appearing moves the pod back to the queue (PersistentVolumeAdd), and it binds.
    with FakePVController(server):
        server.create(PVS, pv("late", storage_class="local", size="10Gi", affinity=node_affinity(ZONE, "c")))
        wait_until(lambda: node_of(server, "db"), timeout=20, what="db bound after the PV appeared")
    assert node_of(server, "db") == "n-c"


def test_binding_that_times_out(server: FakeAPIServer, app_factory: Any) -> None:
    server.create(PVCS, pvc("data", storage_class="fast", uid=""))
    app_factory(timeout=1)  # and nobody provisions
    server.create("pods", make_pod("db").scheduler("netsched").pvc("data").obj())
    wait_until(
        lambda: any("binding volumes: context deadline exceeded" in e for e in events(server, "db")),
        timeout=20,
        what="PreBind timeout",
    )
    assert node_of(server, "db") == ""
    assert server.get(PVCS, "data", "default")["metadata"]["annotations"][SELECTED_NODE] in {
        "n-a",
        "n-b",
        "n-c",
    }


def test_claim_deleted_while_its_pod_waits_in_prebind(server: FakeAPIServer, app_factory: Any) -> None:
    server.create(PVCS, pvc("data", storage_class="fast", uid=""))
    app_factory()
    server.create("pods", make_pod("db").scheduler("netsched").pvc("data").obj())
    wait_until(
        lambda: SELECTED_NODE in (server.get(PVCS, "data", "default")["metadata"].get("annotations") or {}),
        timeout=20,
        what="selected-node written",
    )
    server.delete(PVCS, "data", "default")
    wait_until(
        lambda: any('persistentvolumeclaim "default/data" not found' in e for e in events(server, "db")),
        timeout=20,
        what="PreBind failure",
    )
    # Retried: the claim is gone for good now.
    wait_until(
        lambda: any(
            e.startswith('0/3 nodes are available: persistentvolumeclaim "data" not found.')
            for e in events(server, "db")
        ),
        timeout=20,
        what="PreFilter rejection",
    )
    assert node_of(server, "db") == ""


def test_bad_input_is_an_event_naming_object_and_field(server: FakeAPIServer, app_factory: Any) -> None:
    server.create(PVCS, pvc("typo", storage_class="fsat"))
    bound = pvc("old", storage_class="fast", volume="bad-pv", bound=True, uid="")
    server.create(PVCS, bound)
    server.create(PVS, pv("bad-pv", storage_class="fast", affinity=node_affinity(ZONE, "a", operator="Near")))
    app_factory()
    server.create("pods", make_pod("p1").scheduler("netsched").pvc("typo").obj())
    server.create("pods", make_pod("p2").scheduler("netsched").pvc("old").obj())
    wait_until(
        lambda: any(
            'PersistentVolumeClaim default/typo: spec.storageClassName: StorageClass "fsat" not found' in e
            for e in events(server, "p1")
        ),
        timeout=20,
        what="missing class event",
    )
    wait_until(
        lambda: any(
            "PersistentVolume bad-pv: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator"
            in e
            for e in events(server, "p2")
        ),
        timeout=20,
        what="malformed PV event",
    )
    # Still scheduling: a good pod goes through.
    server.create("pods", make_pod("ok").scheduler("netsched").obj())
    wait_until(lambda: node_of(server, "ok"), timeout=20, what="ok bound")
    assert node_of(server, "p1") == "" and node_of(server, "p2") == ""
