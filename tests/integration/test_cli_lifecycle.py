"""Starting and stopping the real `netsched` process, as kube-scheduler does.

- A serving address that cannot be bound is a start-up failure: exit 1 at once, the address
  named, nothing started (no lease campaign, no scheduling).
- SIGTERM ends every wait of the binding cycle (a pod waiting in VolumeBinding's PreBind for a
  volume nobody provisions, a gang member waiting at Permit, a binding the API server keeps
  refusing with 429 between two retries) and exits 0 promptly, the pods left pending, instead of
  hanging until the bind or permit timeout or the end of the retries.
- Start-up waits for every cache to sync, with no limit but SIGTERM, as kube-scheduler's
  WaitForCacheSync: against an API server that refuses connections or one that accepts them
  and never answers, SIGTERM ends the wait and the process exits 0, having scheduled nothing
  and campaigned for no lease; meanwhile one warning names the server and what it waits for
  (not a line per resource). Once the server answers, the same replica syncs and schedules.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from netsched.plugins.coscheduling import POD_GROUP_LABEL
from netsched.testing.builders import make_node, make_pod
from netsched.testing.cli import killed_if_left, start_netsched
from netsched.testing.configs import COSCHEDULING_PLUGINS, NETSCHED_PROFILE
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.volumes import PVCS, SELECTED_NODE, STORAGECLASSES, pvc, storage_class
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

PG = "scheduling.x-k8s.io/podgroups"
# Far longer than the test waits for the process to exit: only the shutdown can end the waits.
WAITS = (
    NETSCHED_PROFILE
    + COSCHEDULING_PLUGINS
    + """\
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: 600}
  - name: VolumeBinding
    args: {bindTimeoutSeconds: 600}
"""
)
ELECTED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceNamespace: default
profiles:
- schedulerName: netsched
"""


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.kill()
    out, _ = proc.communicate(timeout=10)
    return out


def _events(server: FakeAPIServer, pod: str, reason: str) -> list[object]:
    return [
        e
        for e in server.list("events.k8s.io/events", None)
        if e.get("regarding", {}).get("name") == pod and e.get("reason") == reason
    ]


def test_sigterm_ends_the_waits_in_prebind_and_at_permit(
    server: FakeAPIServer, kubeconfig: Path, tmp_path: Path
) -> None:
    server.create("nodes", make_node("n0").capacity(cpu="4", pods="110").obj())
    # WaitForFirstConsumer with a provisioner nobody runs: PreBind selects the node, then waits.
    server.create(STORAGECLASSES, storage_class("slow", provisioner="slow.example.com"))
    server.create(PVCS, pvc("data", storage_class="slow"))
    server.create("pods", make_pod("vol").scheduler("netsched").req(cpu="100m").pvc("data").obj())
    # A gang of two whose second member fits nowhere: the first waits at Permit.
    server.create_crd(PG)
    server.create(
        PG,
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"minMember": 2},
        },
    )
    for name, cpu in (("g0", "1"), ("g1", "64")):
        server.create(
            "pods", make_pod(name).scheduler("netsched").label(POD_GROUP_LABEL, "g").req(cpu=cpu).obj()
        )
    # A binding the API server keeps refusing with 429 and Retry-After: 25: the client waits
    # 25 s before each new attempt.
    stuck = server.inject_fault(
        "POST", "/namespaces/default/pods/retry/binding", status=429, count=-1, retry_after=25
    )
    server.create("pods", make_pod("retry").scheduler("netsched").req(cpu="100m").obj())
    cfg = tmp_path / "config.yaml"
    cfg.write_text(WAITS)
    proc = start_netsched(cfg, kubeconfig, "-v", "2")
    try:
        wait_until(lambda: stuck.hits >= 1, timeout=30, what="the binding of 'retry' refused, to be retried")
        wait_until(
            lambda: (
                (server.get(PVCS, "data", "default") or {})
                .get("metadata", {})
                .get("annotations", {})
                .get(SELECTED_NODE)
            ),
            timeout=30,
            what="PreBind selecting n0 for the claim (and waiting for it to be provisioned)",
        )
        wait_until(lambda: _events(server, "g0", "WaitingForGang"), timeout=30, what="g0 waiting at Permit")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)  # the waits would last 600 s
        out = _stop(proc)
    except BaseException:
        print(_stop(proc))
        raise
    assert code == 0, out
    assert "Stopped" in out
    # Left as kube leaves them: pending, not bound.
    for name in ("vol", "g0", "g1", "retry"):
        assert not server.get("pods", name, "default")["spec"].get("nodeName"), name


def test_a_port_in_use_is_a_start_up_failure_naming_the_address(
    server: FakeAPIServer, kubeconfig: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(ELECTED)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = start_netsched(cfg, kubeconfig, "--secure-port", str(port), "--bind-address", "127.0.0.1")
        try:
            code = proc.wait(timeout=30)
        finally:
            out = _stop(proc)
    assert code == 1, out
    assert f"cannot listen on 127.0.0.1:{port}" in out and "Address already in use" in out, out
    assert "--secure-port" in out
    # Nothing else started: never campaigned for the lease, never listed the cluster.
    assert not server.list("coordination.k8s.io/leases", "default")
    assert "Caches synced" not in out


def test_a_signal_while_starting_stops_before_anything_runs(server: FakeAPIServer, kubeconfig: Path) -> None:
    # run() installs the signal handlers first thing; a SIGTERM that arrives while the config
    # loads or the client is built sets the event serve() starts from.
    from netsched.app import AppOptions, SchedulerApp, build_registry
    from netsched.config import load_config
    from netsched.kube import KubeAPI, build_api_client
    from netsched.serve import serve

    registry = build_registry()
    cfg = load_config(ELECTED, registry)
    app = SchedulerApp(cfg, registry, KubeAPI(build_api_client(str(kubeconfig))), options=AppOptions())
    stopped = threading.Event()
    stopped.set()
    before = len(server.requests)
    assert serve(app, stop=stopped) == 0
    assert len(server.requests) == before  # no list, no watch, no lease


CANNOT_LIST = "Cannot list from the API server; not scheduling until the caches sync"


def _wait_for_caches(
    server: FakeAPIServer, kubeconfig: Path, tmp_path: Path, config: str, outage: str
) -> tuple[subprocess.Popen[str], Path]:
    """netsched started against `server` in an outage, once it is waiting for its caches: a
    refusing server is named in the log at once; a hanging one holds the lists."""
    server.create("nodes", make_node("n0").capacity(cpu="4").obj())
    server.create("pods", make_pod("p").scheduler("netsched").req(cpu="100m").obj())
    server.outage(outage)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(config)
    log = tmp_path / "netsched.log"
    proc = start_netsched(cfg, kubeconfig, output=log)
    if outage == "refuse":
        wait_until(lambda: CANNOT_LIST in log.read_text(), timeout=60, what="the warning naming the server")
    else:
        wait_until(lambda: server.held_requests >= 2, timeout=60, what="the lists held by the hung server")
    return proc, log


@pytest.mark.parametrize(
    ("outage", "config"),
    [("refuse", NETSCHED_PROFILE), ("hang", ELECTED)],
    ids=["refusing-election-off", "hanging-election-on"],
)
def test_sigterm_ends_the_wait_for_caches_that_never_sync(
    server: FakeAPIServer, kubeconfig: Path, tmp_path: Path, outage: str, config: str
) -> None:
    proc, log = _wait_for_caches(server, kubeconfig, tmp_path, config, outage)
    with killed_if_left(proc):
        proc.send_signal(signal.SIGTERM)
        # Without an end on SIGTERM the wait would never end (no limit of its own, as kube's).
        code = proc.wait(timeout=25)
    out = log.read_text()
    assert code == 0, out
    assert "Stopped waiting for the caches to sync" in out and out.rstrip().endswith('"Stopped"'), out
    # Nothing ran on caches that never synced: no scheduling loop, no lease campaign.
    for never in ("Caches synced", "Starting scheduling loop", "Campaigning for leadership"):
        assert never not in out, out
    assert not server.list("coordination.k8s.io/leases", "default")
    assert not server.get("pods", "p")["spec"].get("nodeName")


def test_an_unreachable_server_is_named_once_for_all_resources_then_scheduled_from_when_it_answers(
    server: FakeAPIServer, kubeconfig: Path, tmp_path: Path
) -> None:
    proc, log = _wait_for_caches(server, kubeconfig, tmp_path, NETSCHED_PROFILE, "refuse")
    with killed_if_left(proc):
        server.recover()
        wait_until(lambda: server.get("pods", "p")["spec"].get("nodeName"), timeout=60, what="p bound")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=25)
    out = log.read_text()
    assert code == 0, out
    warned = [line for line in out.splitlines() if CANNOT_LIST in line]
    assert warned and all(line.startswith("W") for line in warned), out
    assert f'server="{server.url}"' in warned[0] and 'waitingFor="nodes,pods,' in warned[0], warned[0]
    # Not a line per resource per retry: the reflectors' own failures are at -v 4 until synced.
    assert "List/watch failed" not in out
    assert out.index(CANNOT_LIST) < out.index("Caches synced") < out.index("Starting scheduling loop")
    assert "Scheduling paused (not leading)" not in out  # shutting down with election off is no pause
    assert "Shutting down: taking no new pods, finishing the bindings in flight" in out
