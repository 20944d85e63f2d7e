"""deploy/README.md's steps, as written, against the fake API server with RBAC.

Every bash block of deploy/README.md marked "tested" runs here, in order, in bash from the
checkout, with `kubectl` being netsched.testing.kubectl (apply -k, create token, port-forward:
the requests kubectl makes, against the fake API server) and netsched's HTTPS endpoints served
with delegated authentication and authorization by that server. The one change to a block:
port 10259 becomes the port the test serves on. What the blocks do is then checked where it
lands: every object the manifests render is stored; the token the doc creates reads /metrics
(200) because the applied RBAC allows it, and the token of `default` (what the doc used to
create) gets 403; kube-prometheus' account may discover targets in netsched-system and, with
the Istio component, pods in every namespace.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.fakeapi.resources import resource_of
from netsched.kube import KubeAPI, build_api_client
from netsched.serve import start_secure_server
from netsched.testing.configs import NETSCHED_PROFILE
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.kustomize import load_kustomization
from netsched.testing.serving import delegating_serving

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- tested: tests/integration/test_deploy_docs.py runs this block as written -->"
APPLIED = [
    "deploy/",
    "deploy/optional/servicemonitor",
    "deploy/optional/grafana-dashboards",
    "deploy/optional/istio",
]


def _tested_blocks() -> list[str]:
    """The marked blocks of deploy/README.md, in order (a block indented in a list keeps its indent)."""
    text = (REPO / "deploy" / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(re.escape(MARKER) + r"\n( *)```sh\n(.*?)\n\1```", text, re.S)
    return [re.sub(rf"(?m)^{indent}", "", body) + "\n" for indent, body in blocks]


BLOCKS = _tested_blocks()


def test_the_marked_blocks_are_the_apply_steps_and_the_metrics_check() -> None:
    applies = [b for b in BLOCKS if b.startswith("kubectl apply -k ")]
    assert [b.split()[-1] for b in applies] == APPLIED
    (check,) = [b for b in BLOCKS if b not in applies]
    assert "create token" in check and "/metrics" in check


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeAPIServer, dict[str, str]]]:
    """The fake API server and an environment whose `kubectl` is the stand-in for it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kubectl"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m netsched.testing.kubectl "$@"\n')
    shim.chmod(0o755)
    with FakeAPIServer() as server:
        env = dict(
            os.environ,
            KUBECONFIG=str(server.write_kubeconfig(tmp_path / "kubeconfig")),
            PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            PYTHONPATH=str(REPO),
        )
        yield server, env


def bash(block: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (block, done.stdout, done.stderr)
    return done.stdout


@contextlib.contextmanager
def endpoints(server: FakeAPIServer, tmp_path: Path) -> Iterator[int]:
    """netsched's HTTPS endpoints, authenticating and authorizing with `server`, synced; their port."""
    kubeconfig = str(tmp_path / "kubeconfig")
    registry = build_registry()
    options = AppOptions(secure=delegating_serving(kubeconfig, tmp_path / "certs"), watch_timeout=5)
    api = KubeAPI(build_api_client(kubeconfig))
    app = SchedulerApp(load_config(NETSCHED_PROFILE, registry), registry, api, options=options)
    serving = start_secure_server(app)
    assert serving is not None
    try:
        assert app.start_informers(sync_timeout=30)  # /readyz: synced
        yield serving.port
    finally:
        serving.stop()
        app.shutdown(timeout=2)


def get(port: int, path: str, token: str) -> int:
    conn = http.client.HTTPSConnection(
        "127.0.0.1", port, context=ssl._create_unverified_context(), timeout=10
    )
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def may(server: FakeAPIServer, user: str, **attributes: str) -> bool:
    """What a SubjectAccessReview for `user` (a service account) answers."""
    groups = ["system:serviceaccounts", "system:authenticated"]
    key = "nonResourceAttributes" if "path" in attributes else "resourceAttributes"
    review = {"spec": {"user": user, "groups": groups, key: attributes}}
    return bool(server.review_access(review)["status"]["allowed"])


def test_the_docs_apply_the_manifests_and_their_token_reads_metrics(
    cluster: tuple[FakeAPIServer, dict[str, str]], tmp_path: Path
) -> None:
    server, env = cluster
    applies = [b for b in BLOCKS if b.startswith("kubectl apply -k ")]
    for block in applies:
        bash(block, env)
    # Everything the manifests render is stored.
    for directory in APPLIED:
        for obj in load_kustomization(REPO / directory):
            rt = resource_of(obj["apiVersion"], obj["kind"])
            assert rt is not None, obj["kind"]
            assert server.get(rt.key, obj["metadata"]["name"], obj["metadata"].get("namespace"))

    (check,) = [b for b in BLOCKS if b not in applies]
    with endpoints(server, tmp_path) as port:
        out = bash(check.replace("10259", str(port)), env)
        lines = out.splitlines()
        assert lines[0].startswith("ok"), out  # /readyz
        assert any(line.startswith("netsched_leader") for line in lines), out
        assert any(line.startswith("scheduler_pending_pods") for line in lines), out
        # The account the doc used to name is not bound to netsched-metrics-reader: 403.
        server.create("serviceaccounts", {"metadata": {"name": "default", "namespace": "default"}})
        default_token = bash("kubectl create token default", env).strip()
        assert get(port, "/metrics", default_token) == 403
        scraper = bash("kubectl -n netsched-system create token netsched-metrics-scraper", env).strip()
        assert get(port, "/metrics", scraper) == 200
        assert get(port, "/debug/explain?pod=default/x", scraper) == 403  # /metrics only


def test_kube_prometheus_may_discover_netsched_and_the_meshs_pods(
    cluster: tuple[FakeAPIServer, dict[str, str]],
) -> None:
    server, env = cluster
    prometheus = "system:serviceaccount:monitoring:prometheus-k8s"
    bash("kubectl apply -k deploy/optional/servicemonitor", env)
    for resource in ("services", "endpoints", "pods"):
        for verb in ("get", "list", "watch"):
            assert may(server, prometheus, namespace="netsched-system", resource=resource, verb=verb)
        assert not may(server, prometheus, namespace="shop", resource=resource, verb="list")
    assert not may(server, prometheus, namespace="netsched-system", resource="secrets", verb="list")
    bash("kubectl apply -k deploy/optional/istio", env)
    assert may(server, prometheus, namespace="shop", resource="pods", verb="list")
    assert may(server, prometheus, resource="pods", verb="watch")  # every namespace at once
    assert not may(server, prometheus, namespace="shop", resource="services", verb="list")
    assert not may(server, "system:serviceaccount:monitoring:prometheus", resource="pods", verb="list")
