"""Credentials and proxies on the lean request path, against the fake API server over HTTPS.

- An in-cluster service account's token (the kubernetes package re-reads its file through a
  refresh hook) is read once and reused; when the API server stops accepting it (rotated), the
  401 makes the client read it afresh and send the request again, once.
- HTTPS_PROXY with a NO_PROXY that covers the API server keeps netsched's own transport, as the
  kubernetes package's urllib3 pool bypasses the proxy for it; a proxy that applies does not.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.config.incluster_config import InClusterConfigLoader

from netsched.kube.client import KubeClient
from netsched.kube.errors import Unauthorized
from netsched.kube.kubeconfig import load_configuration
from netsched.kube.transport import Transport
from netsched.testing.builders import make_pod
from netsched.testing.fakeapi import FakeAPIServer

pytestmark = pytest.mark.integration

POD = "/api/v1/namespaces/default/pods/p0"


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(tls=True) as srv:
        srv.create("pods", make_pod("p0").obj())
        srv.add_token("t1", "system:serviceaccount:netsched-system:netsched")
        srv.require_authentication()
        yield srv


def in_cluster(server: FakeAPIServer, tmp_path: Path) -> tuple[Any, Path, list[int]]:
    """A Configuration as the in-cluster loader builds it (token file, CA, refresh hook) whose
    hook re-reads the token file every time it runs; and how often it read the file."""
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("t1")
    ca.write_bytes(server.ca_pem)
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    env = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
    loader = InClusterConfigLoader(str(token), str(ca), environ=env)
    loader._token_refresh_period = datetime.timedelta(0)  # re-read the file at every refresh
    cfg = k8s.Configuration()
    loader.load_and_set(cfg)
    reads = [0]
    read = loader._read_token_file

    def counted() -> None:
        reads[0] += 1
        read()

    loader._read_token_file = counted  # type: ignore[method-assign]
    return cfg, token, reads


def client_for(cfg: Any) -> KubeClient:
    transport = Transport.for_configuration(cfg, 2)
    assert transport is not None
    return KubeClient(k8s.ApiClient(cfg), transport=transport)


def test_the_token_is_read_once_and_again_after_a_401(server: FakeAPIServer, tmp_path: Path) -> None:
    cfg, token, runs = in_cluster(server, tmp_path)
    client = client_for(cfg)
    for _ in range(50):
        assert client.request("get", "pods", "GET", POD).status == 200
    assert runs[0] == 1  # the hook (and its environment scan) once, not once a request
    # The kubelet rotates the token; the API server no longer accepts the old one.
    token.write_text("t2")
    server.add_token("t2", "system:serviceaccount:netsched-system:netsched")
    server.remove_token("t1")
    before = len(server.requests)
    assert client.request("get", "pods", "GET", POD, retry=False).status == 200
    assert len(server.requests) - before == 2  # refused once, then sent with the new token
    assert runs[0] == 2


def test_a_token_nobody_accepts_is_refused_after_one_fresh_try(server: FakeAPIServer, tmp_path: Path) -> None:
    cfg, _token, runs = in_cluster(server, tmp_path)
    client = client_for(cfg)
    server.remove_token("t1")
    before = len(server.requests)
    with pytest.raises(Unauthorized):
        client.request("get", "pods", "GET", POD, retry=False)
    assert len(server.requests) - before == 2 and runs[0] == 2


def test_a_static_token_is_never_read_again(server: FakeAPIServer) -> None:
    cfg = k8s.Configuration(
        host=server.url, api_key={"BearerToken": "t1"}, api_key_prefix={"BearerToken": "Bearer"}
    )
    cfg.ssl_ca_cert = None
    cfg.verify_ssl = False
    client = client_for(cfg)
    assert client.request("get", "pods", "GET", POD).status == 200
    server.remove_token("t1")
    before = len(server.requests)
    with pytest.raises(Unauthorized):
        client.request("get", "pods", "GET", POD, retry=False)
    assert len(server.requests) - before == 1  # nothing could change: not sent again


@pytest.mark.parametrize(
    ("no_proxy", "lean"),
    [
        ("127.0.0.1,localhost", True),
        (".svc,10.0.0.0/8,127.0.0.0/8", True),  # a CIDR covers the address
        ("*", True),
        ("", False),
        ("example.com,10.0.0.0/8", False),
    ],
)
def test_a_proxy_the_server_bypasses_keeps_the_lean_transport(
    server: FakeAPIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_proxy: str, lean: bool
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    cfg = load_configuration(str(server.write_kubeconfig(tmp_path / "kubeconfig")))
    assert cfg.proxy == "http://proxy.invalid:3128"
    assert (Transport.for_configuration(cfg, 2) is not None) is lean
    if lean:  # and requests really go straight to the server
        server.require_authentication(False)
        client = KubeClient(k8s.ApiClient(cfg), transport=Transport.for_configuration(cfg, 2))
        assert client.request("get", "pods", "GET", POD).status == 200


def test_a_pipelined_batch_refused_for_a_rotated_token_is_sent_again_once(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    """request_many (the event writer's bursts) reads the token afresh on a 401 as `request` does."""
    cfg, token, runs = in_cluster(server, tmp_path)
    client = client_for(cfg)
    assert client.request("get", "pods", "GET", POD).status == 200
    token.write_text("t2")
    server.add_token("t2", "system:serviceaccount:netsched-system:netsched")
    server.remove_token("t1")
    before = len(server.requests)
    got = client.request_many("get", "pods", "GET", [(POD, None)] * 3, lanes=2)
    assert [getattr(r, "status", r) for r in got] == [200, 200, 200]
    assert len(server.requests) - before == 6 and runs[0] == 2  # 3 refused, 3 sent afresh
    server.remove_token("t2")  # nobody accepts it now: refused after the one fresh try
    before = len(server.requests)
    got = client.request_many("get", "pods", "GET", [(POD, None)] * 2)
    assert all(isinstance(r, Unauthorized) for r in got) and len(server.requests) - before == 4
