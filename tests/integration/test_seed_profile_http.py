"""Seed 003 over HTTP: its profile file, unchanged, and its three-replica deployment, with the real command.

`examples/sample_scheduler.yaml` (v1beta1: CheckCSIStorageCapacity at preFilter
and filter, CheckPodCountLimit, CheckPodLimitResources, LvmVolumeCapacity) is
passed to `netsched --config` as it is in the repository.  The fake cluster
plays TopoLVM's parts that matter to scheduling: nodes annotated with their
free space per device class (the test lowers it as volumes are created, as
topolvm-node would), a StorageClass with a device class, and FakePVController
provisioning and binding each claim once the scheduler selects a node.
`examples/sample_scheduler_deployment.yaml` runs as three replicas of the
command with the ConfigMap's v1beta3 config: one leads on the Lease
kube-system/custom-scheduler, and when it stops another takes over.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from netsched.testing.builders import make_node, make_pod
from netsched.testing.cli import killed_if_left, sigterm, start_netsched
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.volumes import PVCS, STORAGECLASSES, FakePVController, pvc, storage_class

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED = EXAMPLES / "sample_scheduler.yaml"
DEPLOYMENT = EXAMPLES / "sample_scheduler_deployment.yaml"
SCHEDULER = "sample-scheduler"
GI = 1 << 30
CAPACITY = "capacity.topolvm.io/ssd"


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(watch_timeout=5.0, bookmark_interval=0.5) as srv:
        srv.create(
            STORAGECLASSES,
            storage_class("ssd", provisioner="topolvm.io", parameters={"topolvm.io/device-class": "ssd"}),
        )
        for name, free in (("small", 5), ("big", 50), ("bare", None)):
            node = make_node(name).capacity(cpu="4", memory="8Gi")
            srv.create("nodes", (node if free is None else node.annotation(CAPACITY, str(free * GI))).obj())
        yield srv


def set_free(server: FakeAPIServer, node: str, gi: int) -> None:
    """What topolvm-node does when a volume group's free space changes."""
    server.patch("nodes", node, {"metadata": {"annotations": {CAPACITY: str(gi * GI)}}})


def lvm_pod(server: FakeAPIServer, name: str, size: str | None = None, **limits: str) -> None:
    pod = make_pod(name).scheduler(SCHEDULER).req(cpu="100m").limit(**{"cpu": "100m", **limits})
    if size is not None:
        server.create(PVCS, pvc(f"data-{name}", storage_class="ssd", size=size))
        pod = pod.pvc(f"data-{name}")
    server.create("pods", pod.obj())


def node_of(server: FakeAPIServer, pod: str) -> str:
    return str(server.get("pods", pod)["spec"].get("nodeName") or "")


def bound(server: FakeAPIServer, pod: str, timeout: float = 30) -> str:
    return server.wait_for(lambda: node_of(server, pod), timeout=timeout)


def failed(server: FakeAPIServer, pod: str, *parts: str, timeout: float = 30) -> str:
    """The pod's FailedScheduling note holding every one of `parts` (an earlier attempt may have
    seen the cluster before the scheduler's informers caught up: a claim not yet listed)."""

    def notes() -> list[str]:
        return [
            str(e.get("note") or "")
            for e in server.list("events.k8s.io/events", None)
            if e.get("regarding", {}).get("name") == pod and e.get("reason") == "FailedScheduling"
        ]

    return server.wait_for(
        lambda: next((n for n in notes() if all(p in n for p in parts)), ""), timeout=timeout
    )


def stop(proc: subprocess.Popen[str]) -> str:
    with killed_if_left(proc):
        out = sigterm(proc, 30)
    assert proc.returncode == 0, out
    return out


def test_seed_profile_file_runs_unchanged_and_every_filter_holds(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    with FakePVController(server):
        proc = start_netsched(SEED, kubeconfig, "-v", "2")
        try:
            # 20Gi of ssd: only "big" has it ("small" 5Gi, "bare" publishes nothing).
            lvm_pod(server, "a", "20Gi")
            assert bound(server, "a") == "big"
            set_free(server, "big", 30)
            lvm_pod(server, "b", "20Gi")
            assert bound(server, "b") == "big"
            set_free(server, "big", 10)
            # "big" runs 2 pods (podCountLimit 2); 5Gi fits "small" exactly.
            lvm_pod(server, "c", "5Gi")
            assert bound(server, "c") == "small"
            set_free(server, "small", 1)
            # Nowhere: every filter says why, the LVM one with the class, the need and the shortfall.
            lvm_pod(server, "d", "20Gi")
            note = failed(
                server,
                "d",
                '1 node(s) did not have enough free space in LVM device class "ssd": the pod needs 20Gi; '
                "the roomiest node without enough has 10Gi (10Gi short)",
            )
            assert note.startswith("0/3 nodes are available: "), note
            assert "1 node(s) did not publish free space for LVM device class" in note
            assert "1 node(s) reached the pod count limit" in note
            assert node_of(server, "d") == ""
            # TopoLVM reports more room on "small": the annotation update retries the pod.
            set_free(server, "small", 100)
            assert bound(server, "d") == "small"
            # Limits above 0.7 x allocatable: CheckPodLimitResources holds on the node with room.
            lvm_pod(server, "e", cpu="3")
            failed(server, "e", "1 Insufficient cpu limit headroom", "2 node(s) reached the pod count limit")
            assert node_of(server, "e") == ""
        finally:
            out = stop(proc)
    assert "Successfully bound pod to node" in out
    # Every claim was provisioned where its pod went, never on a node short of space.
    selected = {
        c["metadata"]["name"]: c["metadata"]["annotations"].get("volume.kubernetes.io/selected-node")
        for c in server.list(PVCS)
    }
    assert selected == {"data-a": "big", "data-b": "big", "data-c": "small", "data-d": "small"}


class Replica:
    """One `netsched` process of the seed deployment, its output read as it comes."""

    def __init__(self, config: Path, kubeconfig: Path, args: list[str]) -> None:
        self.proc = start_netsched(config, kubeconfig, *args)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def is_(self, identity: str) -> bool:
        """Its own identity, as it logged it when it began to campaign."""
        return self.said(
            f'"Campaigning for leadership" lease="kube-system/custom-scheduler" identity="{identity}"'
        )

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(timeout=5)
        out = "".join(self.lines)
        assert self.proc.returncode == 0, out
        return out


def test_seed_deployment_three_replicas_one_leader_on_custom_scheduler(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    docs = {d["kind"]: d for d in yaml.safe_load_all(DEPLOYMENT.read_text())}
    deployment = docs["Deployment"]
    assert deployment["spec"]["replicas"] == 3
    (key, text), *_ = docs["ConfigMap"]["data"].items()
    config = tmp_path / key
    config.write_text(text)
    # The container's own flags, its --config pointing at the mounted ConfigMap key.
    args = [
        a
        for a in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        if not a.startswith("--config")
    ]
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")

    def holder() -> str:
        try:
            lease = server.get("leases", "custom-scheduler", "kube-system")
        except Exception:
            return ""
        return str(lease["spec"].get("holderIdentity") or "")

    replicas = [Replica(config, kubeconfig, args) for _ in range(deployment["spec"]["replicas"])]
    with FakePVController(server):
        try:
            # Three replicas running (each campaigning) before anything else is asked of them.
            server.wait_for(lambda: all(r.said("Campaigning for leadership") for r in replicas), timeout=60)
            first = server.wait_for(holder, timeout=60)
            leader = server.wait_for(lambda: next((r for r in replicas if r.is_(first)), None), timeout=30)
            lvm_pod(server, "a", "20Gi")
            assert bound(server, "a") == "big"
            # The leader stops (a rollout, a node drain): it releases the lease and another leads.
            out = leader.stop()
            assert "Stopped" in out
            second = server.wait_for(lambda: (h := holder()) and h != first and h, timeout=60)
            lvm_pod(server, "b", "5Gi")
            assert bound(server, "b") == "small"
            standbys = [r for r in replicas if r is not leader]
            assert sum(r.is_(second) for r in standbys) == 1
        finally:
            outs = [r.stop() for r in replicas if r.proc.poll() is None]
    assert outs and all("Stopped" in o for o in outs)
    # Exactly one replica bound each pod: the leader of its time.
    assert sum(o.count("Successfully bound pod to node") for o in [out, *outs]) == 2
