"""The Rebalancer over HTTP: two replicas electing a leader on the fake API server, each with
its HTTPS endpoints (delegated auth, as deployed), a fake Prometheus serving the node readings.

Only the leader runs rounds (the standby's periodic task returns at once: no report, no metric,
no API call), and /debug/rebalancer on each replica says so, behind the same authentication and
authorization as /debug/explain.  When the leader stops, the other replica leads, reads the
state ConfigMap the old one wrote, and honours its cooldowns: the node the old leader moved a
pod off is still hot, the workload's other pod is still on it, and nothing is evicted.
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from netsched.app import SchedulerApp
from netsched.leaderelection import LeaderElector
from netsched.metrics.estimation import EGRESS_BANDWIDTH
from netsched.observability.server import ObservabilityServer
from netsched.plugins.rebalancer import Rebalancer
from netsched.plugins.rebalancer.state import KEY, State
from netsched.serve import start_election, start_secure_server
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer, RecordedRequest
from netsched.testing.framework import plugin_of
from netsched.testing.kustomize import find_object
from netsched.testing.prometheus import FakePrometheus, FakePrometheusServer
from netsched.testing.rebalancing import NodeReadings, rebalancing_config
from netsched.testing.serving import delegating_serving
from netsched.testing.wait import wait_until
from netsched.testing.workloads import FakeKubelet, FakeReplicaSetController, replica_set, running_on

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NS, STATE = "netsched-system", "netsched-rebalancer"
PAGE = "/debug/rebalancer"
EVICTION = RecordedRequest("create", "", "pods", "eviction", "default")
OPERATOR, SCRAPER = "alice", "system:serviceaccount:monitoring:prometheus"


@dataclass
class Replica:
    app: SchedulerApp
    https: ObservabilityServer
    plugin: Rebalancer
    stop: threading.Event
    elector: LeaderElector | None = None

    def get(self, path: str, token: str = "") -> tuple[int, str]:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.https.port, context=ssl._create_unverified_context(), timeout=10
        )
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def page(self) -> dict[str, Any]:
        status, body = self.get(PAGE, "operator-token")
        assert status == 200, body
        data: dict[str, Any] = json.loads(body)["profiles"]["netsched"]
        return data

    def rounds(self) -> float:
        samples = [
            s.value
            for family in self.app.metrics_registry.collect()
            if family.name == "netsched_rebalancer_rounds"
            for s in family.samples
            if s.name.endswith("_total")
        ]
        return sum(samples)

    def close(self) -> None:
        if self.stop.is_set():
            return
        self.stop.set()
        if self.elector is not None:
            self.elector.stop(release=True)
        self.app.shutdown(timeout=5)
        self.https.stop()


@pytest.fixture
def prometheus() -> Iterator[FakePrometheusServer]:
    with FakePrometheusServer(FakePrometheus()) as prom:
        yield prom


@pytest.fixture
def replicas(
    server: FakeAPIServer,
    kubeconfig: Path,
    tmp_path: Path,
    scheduler_app: Callable[..., SchedulerApp],
    prometheus: FakePrometheusServer,
) -> Iterator[list[Replica]]:
    """Two replicas, both campaigning; a node hot after two rounds of a second, cooldowns of
    five minutes, a plan that holds its target for a second only (so what the new leader finds
    in the ConfigMap is the cooldowns, not a move in flight)."""
    server.add_token("operator-token", OPERATOR, ["operators"])
    server.add_token("scraper-token", SCRAPER, ["system:serviceaccounts"])
    server.allow(OPERATOR, PAGE)
    server.allow(SCRAPER, "/metrics")
    server.create("configmaps", find_object(DEPLOY, "ConfigMap", STATE))
    config = rebalancing_config(
        prometheus.url,
        election=True,
        intervalSeconds=1,
        consecutiveRounds=2,
        replacementTimeoutSeconds=1,
        cooldownSeconds={"workload": 300, "node": 300},
    )
    made: list[Replica] = []
    for name in ("a", "b"):
        app = scheduler_app(config, secure=delegating_serving(kubeconfig, tmp_path / f"certs-{name}"))
        https = start_secure_server(app)
        assert https is not None
        made.append(Replica(app, https, plugin_of(app.frameworks["netsched"], Rebalancer), threading.Event()))
    yield made
    for r in made:
        r.close()


def test_only_the_leader_rebalances_and_the_next_honours_its_cooldowns(
    server: FakeAPIServer, prometheus: FakePrometheusServer, replicas: list[Replica]
) -> None:
    for name in ("n0", "n1", "n2"):
        server.create("nodes", make_node(name).capacity(cpu="4", memory="8Gi", pods="20").obj())
    readings = NodeReadings(prometheus.fake, replicas[0].plugin.source, ["n0", "n1", "n2"], transmit=0.6)
    readings.set({"n0": 0.05})  # the quietest link: both pods of web go there
    with FakeReplicaSetController(server) as controller, FakeKubelet(server):
        for r in replicas:
            assert r.app.start_informers(sync_timeout=10)
            r.app.start_background()
            r.elector = start_election(r.app, r.stop)
        leader = wait_until(lambda: next((r for r in replicas if r.app.leading), None), what="a leader")
        standby = next(r for r in replicas if r is not leader)
        template = make_pod("t").scheduler("netsched").annotation(EGRESS_BANDWIDTH, "200M").obj()
        server.create("apps/replicasets", replica_set("web", template, replicas=2))
        wait_until(lambda: len(running_on(server, "n0")) == 2, what="both pods of web running on n0")
        # n0's link at 85 %, 20 % of it each pod's: one move brings it to 65 %, under the 70 % target.
        readings.set({"n0": 0.85, "n1": 0.1, "n2": 0.1})

        evicted = wait_until(lambda: _moves(leader.page(), "evicted"), what="the leader's eviction")
        assert [(m["from"], m["trigger"]) for m in evicted] == [("n0", "network")]
        assert re.fullmatch(
            r"n0 link \(busier direction\) \d+% > 80% for 2 rounds; planned n[12], \d+% with the pod .*",
            evicted[0]["why"],
        )
        assert server.requests.count(EVICTION) == 1
        stored = State.decode(server.get("configmaps", STATE, NS)["data"][KEY])
        assert set(stored.workloads) == {"default/web"} and set(stored.nodes) == {"n0"}
        wait_until(lambda: len(controller.created) == 3, what="the replacement")

        # The standby ran no round: no report, no metric, and its page says why.
        assert leader.rounds() > 0 and standby.rounds() == 0 and not standby.plugin.reports
        page = standby.page()
        assert (page["leading"], page["rounds"]) == (False, [])
        status, text = standby.get(f"{PAGE}?format=text", "operator-token")
        assert status == 200 and "standby; acting (evicts)" in text
        assert "no rounds yet (rounds run on the leader only)" in text
        status, text = leader.get(f"{PAGE}?format=text", "operator-token")
        assert status == 200 and f"  evicted   {evicted[0]['pod']} n0 -> " in text
        # Behind the endpoints' auth, as /debug/explain: no token 401, another path's grant 403.
        assert leader.get(PAGE)[0] == 401
        status, body = leader.get(PAGE, "scraper-token")
        assert status == 403 and f'User "{SCRAPER}" cannot get path "{PAGE}"' in body

        # The leader goes; the other replica leads, reads the ConfigMap and moves nothing: n0 is
        # still hot and web's other pod is still on it, but web and n0 are cooling down.
        leader.close()
        wait_until(lambda: standby.app.leading, what="the standby to lead")
        hot = wait_until(
            lambda: (
                [r for r in standby.plugin.reports if r.hot] if len(standby.plugin.reports) >= 4 else None
            ),
            what="the new leader's rounds with n0 hot",
        )
        assert all(r.moves == [] and "its workload is cooling down" in r.blocked["n0"] for r in hot)
        assert len(running_on(server, "n0")) == 1
        assert server.requests.count(EVICTION) == 1
        page = standby.page()
        assert page["leading"] is True and page["rounds"][0]["blocked"] == {"n0": hot[-1].blocked["n0"]}
        assert not controller.errors


def _moves(page: dict[str, Any], result: str) -> list[dict[str, Any]]:
    return [m for r in page["rounds"] for m in r["moves"] if m["result"] == result]
