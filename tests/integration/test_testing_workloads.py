"""The kit's workload controllers on a FakeAPIServer: FakeReplicaSetController and FakeKubelet.

They run against the server's store (no scheduler here: pods are bound with the server's hook),
so each assertion waits on the state the controller leaves, never on a sleep.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from netsched.testing.builders import make_pod
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until
from netsched.testing.workloads import (
    FakeKubelet,
    FakeReplicaSetController,
    pod_disruption_budget,
    replica_set,
)

pytestmark = pytest.mark.integration

RS = "apps/replicasets"


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(disruption_controller=True) as srv:
        yield srv


def pods(server: FakeAPIServer) -> list[dict[str, Any]]:
    return sorted(server.list("pods"), key=lambda p: p["metadata"]["name"])


def names(server: FakeAPIServer) -> list[str]:
    return [p["metadata"]["name"] for p in pods(server)]


def template(**labels: str) -> dict[str, Any]:
    pod = make_pod("ignored").scheduler("netsched").req(cpu="250m").annotation("team", "a")
    return pod.labels(**labels).obj() if labels else pod.obj()


def test_replica_set_builder_is_deployment_like() -> None:
    rs = replica_set("web", template(app="web", tier="front"), replicas=4, namespace="shop")
    digest = rs["metadata"]["name"].removeprefix("web-")
    assert len(digest) == 10
    labels = {"app": "web", "tier": "front", "pod-template-hash": digest}
    assert rs["metadata"] == {"name": f"web-{digest}", "namespace": "shop", "labels": labels}
    assert rs["spec"]["replicas"] == 4
    assert rs["spec"]["selector"] == {"matchLabels": labels}
    assert rs["spec"]["template"]["metadata"] == {"labels": labels, "annotations": {"team": "a"}}
    assert rs["spec"]["template"]["spec"]["schedulerName"] == "netsched"
    # The same template makes the same hash; another spec another; no labels: app=<name>.
    assert replica_set("web", template(app="web", tier="front"))["metadata"]["name"] == rs["metadata"]["name"]
    other = template(app="web", tier="front")
    other["spec"]["containers"][0]["image"] = "nginx"
    assert replica_set("web", other)["metadata"]["name"] != rs["metadata"]["name"]
    assert replica_set("api", template(), template_hash="abc")["spec"]["selector"] == {
        "matchLabels": {"app": "api", "pod-template-hash": "abc"}
    }


def test_pdb_builder_defaults_the_observed_generation_of_a_written_status() -> None:
    pdb = pod_disruption_budget("web", {"app": "web"}, min_available="50%", status={"disruptionsAllowed": 2})
    assert pdb["spec"] == {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": "50%"}
    assert pdb["status"] == {"observedGeneration": 1, "disruptionsAllowed": 2}
    assert "status" not in pod_disruption_budget("web", {"app": "web"}, max_unavailable=1)


def test_the_controller_keeps_the_replica_count_from_the_template(server: FakeAPIServer) -> None:
    rs = server.create(RS, replica_set("web", template(app="web"), replicas=3))
    with FakeReplicaSetController(server) as controller:
        wait_until(lambda: len(pods(server)) == 3, what="three pods")
        for pod in pods(server):
            assert pod["metadata"]["name"].startswith(rs["metadata"]["name"] + "-")
            assert pod["metadata"]["labels"] == rs["spec"]["template"]["metadata"]["labels"]
            assert pod["metadata"]["annotations"] == {"team": "a"}
            assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
            assert pod["spec"]["schedulerName"] == "netsched"
            assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "250m"}
        wait_until(lambda: (server.get(RS, rs["metadata"]["name"]).get("status") or {}).get("replicas") == 3)

        # A pod of no owner is not counted; deleted (or evicted) pods come back.
        server.create("pods", make_pod("stray").labels(**rs["spec"]["template"]["metadata"]["labels"]).obj())
        first = owned(server, rs)[0]
        server.delete("pods", first)
        wait_until(
            lambda: len(owned(server, rs)) == 3 and first not in owned(server, rs), what="a replacement"
        )
        # A pod that ended (Succeeded) no longer counts: it is replaced, not deleted.
        done = owned(server, rs)[0]
        server.patch("pods", done, {"status": {"phase": "Succeeded"}})
        wait_until(lambda: len(owned(server, rs)) == 3 and done not in owned(server, rs), what="another")
        # Events are handled in order: by now the stray pod's was, and made nothing.
        assert len(controller.created) == 5
        assert done in names(server) and "stray" in names(server)
        assert not controller.errors


def owned(server: FakeAPIServer, rs: dict[str, Any]) -> list[str]:
    """Names of the ReplicaSet's active pods."""
    return [
        p["metadata"]["name"]
        for p in pods(server)
        if (p["metadata"].get("ownerReferences") or [{}])[0].get("uid") == rs["metadata"]["uid"]
        and p["status"]["phase"] not in ("Succeeded", "Failed")
    ]


def test_scaling_down_deletes_the_least_useful_pods_first(server: FakeAPIServer) -> None:
    rs = server.create(RS, replica_set("web", template(), replicas=4))
    name = rs["metadata"]["name"]
    made: list[str] = []
    with (
        FakeReplicaSetController(server) as controller,
        FakeKubelet(server, ready=lambda p: p["metadata"]["name"] == made[1]),
    ):
        wait_until(lambda: len(pods(server)) == 4)
        made += [key.split("/")[1] for key in controller.created]
        server.bind("default", made[0], "n1")  # bound, not Ready
        server.bind("default", made[1], "n1")  # bound and Ready (its name ends in 1)
        server.bind("default", made[2], "n1")  # bound, not Ready
        wait_until(lambda: server.get("pods", made[1])["status"]["phase"] == "Running")
        server.patch(RS, name, {"spec": {"replicas": 2}})
        # The unbound pod goes first, then the newer of the two unready bound ones.
        wait_until(lambda: len(pods(server)) == 2, what="scaled down")
        assert set(names(server)) == {made[0], made[1]}
        wait_until(
            lambda: (
                server.get(RS, name)["status"]
                == {
                    "replicas": 2,
                    "fullyLabeledReplicas": 2,
                    "readyReplicas": 1,
                    "availableReplicas": 1,
                    "observedGeneration": 2,
                }
            )
        )


def test_the_kubelet_starts_bound_pods_and_holds_readiness_while_told(server: FakeAPIServer) -> None:
    held = {"a"}
    for name in ("a", "b", "unbound"):
        server.create("pods", make_pod(name).obj())
    with FakeKubelet(server, ready=lambda p: p["metadata"]["name"] not in held) as kubelet:
        server.bind("default", "a", "n1")
        server.bind("default", "b", "n1")

        def conditions(name: str) -> dict[str, str]:
            return {c["type"]: c["status"] for c in server.get("pods", name)["status"].get("conditions", [])}

        wait_until(lambda: conditions("b").get("Ready") == "True", what="b Ready")
        wait_until(lambda: server.get("pods", "a")["status"]["phase"] == "Running", what="a started")
        assert conditions("a") == {
            "PodScheduled": "True",
            "Initialized": "True",
            "ContainersReady": "False",
            "Ready": "False",
        }
        assert server.get("pods", "b")["status"]["startTime"]
        assert server.get("pods", "unbound")["status"] == {"phase": "Pending"}
        held.clear()
        kubelet.resync()
        wait_until(lambda: conditions("a").get("Ready") == "True", what="a Ready")
        assert not kubelet.errors


def test_a_budget_follows_pods_becoming_ready(server: FakeAPIServer) -> None:
    """The fake's disruption controller recomputes on every pod write: the kubelet's Ready is
    what brings disruptionsAllowed up."""
    rs = server.create(RS, replica_set("web", template(), replicas=3))
    server.create("poddisruptionbudgets", pod_disruption_budget("web", {"app": "web"}, max_unavailable=1))
    with FakeReplicaSetController(server), FakeKubelet(server):
        wait_until(lambda: len(pods(server)) == 3)
        budget = server.get("poddisruptionbudgets", "web")["status"]
        assert (budget["disruptionsAllowed"], budget["currentHealthy"], budget["expectedPods"]) == (0, 0, 3)
        for pod in pods(server):
            server.bind("default", pod["metadata"]["name"], "n1")
        wait_until(lambda: server.get("poddisruptionbudgets", "web")["status"]["currentHealthy"] == 3)
        assert server.get("poddisruptionbudgets", "web")["status"]["disruptionsAllowed"] == 1
        # Scaling the ReplicaSet changes expectedPods at once.
        server.patch(RS, rs["metadata"]["name"], {"spec": {"replicas": 4}})
        wait_until(lambda: server.get("poddisruptionbudgets", "web")["status"]["expectedPods"] == 4)
