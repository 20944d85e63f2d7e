"""The fake API server's HTTPS and realistic-objects modes (what bench_e2e runs against by default)."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from netsched.framework.parse import parse_pod
from netsched.kube import KubeAPI, build_api_client
from netsched.kube.resources import NODES
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer


def _get(url: str, ctx: ssl.SSLContext) -> dict[str, object]:
    with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
        body: dict[str, object] = json.loads(resp.read())
        return body


def test_https_handshake_verifies_against_the_ca_in_the_kubeconfig(tmp_path: Path) -> None:
    with FakeAPIServer(tls=True) as server:
        assert server.url.startswith("https://127.0.0.1:")
        server.create("nodes", make_node("n1").obj())
        kubeconfig = json.loads(server.write_kubeconfig(tmp_path / "kc").read_text())
        cluster = kubeconfig["clusters"][0]["cluster"]
        assert cluster["server"] == server.url
        ca = tmp_path / "ca.crt"
        ca.write_bytes(server.ca_pem)

        verifying = ssl.create_default_context(cafile=str(ca))
        body = _get(f"{server.url}/api/v1/nodes", verifying)
        assert [n["metadata"]["name"] for n in body["items"]] == ["n1"]  # type: ignore[attr-defined]
        raw = socket.create_connection(("127.0.0.1", server.port))
        with verifying.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")

        # Without the CA, verification fails: the server is really self-signed.
        with pytest.raises(urllib.error.URLError) as err:
            _get(f"{server.url}/api/v1/nodes", ssl.create_default_context())
        assert isinstance(err.value.reason, ssl.SSLCertVerificationError)


def test_netsched_client_lists_and_binds_over_https(tmp_path: Path) -> None:
    with FakeAPIServer(tls=True) as server:
        server.create("nodes", make_node("n1").obj())
        server.create("pods", make_pod("p1").obj())
        client = build_api_client(str(server.write_kubeconfig(tmp_path / "kc")))
        api = KubeAPI(client)
        listed = api.list_raw(NODES)
        assert [n["metadata"]["name"] for n in listed.items] == ["n1"]
        api.bind(parse_pod(server.get("pods", "p1")), "n1")
        assert server.get("pods", "p1")["spec"]["nodeName"] == "n1"
        assert ("create", "", "pods", "binding", "default") in server.requests


def test_realistic_objects_have_real_sizes_on_list_get_and_watch() -> None:
    with FakeAPIServer(realistic=True) as server:
        server.create("nodes", make_node("n1").capacity(cpu="8", memory="32Gi", pods="110").obj())
        server.create("pods", make_pod("p1").req(cpu="100m").obj())
        node, pod = server.get("nodes", "n1"), server.get("pods", "p1")
        node_size = len(json.dumps(node, separators=(",", ":")))
        pod_size = len(json.dumps(pod, separators=(",", ":")))
        assert 5000 <= node_size <= 8000, node_size
        assert 3000 <= pod_size <= 5000, pod_size
        assert node["metadata"]["managedFields"] and pod["metadata"]["managedFields"]
        assert {c["type"] for c in node["status"]["conditions"]} >= {"Ready", "MemoryPressure"}
        # What the scheduler decides on is untouched.
        assert node["status"]["allocatable"]["cpu"] == "8"
        assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m"}
        assert "nodeName" not in pod["spec"] and not node["spec"].get("taints")

        with urllib.request.urlopen(f"{server.url}/api/v1/pods", timeout=10) as resp:
            listed = json.loads(resp.read())["items"]
        assert listed[0]["metadata"]["managedFields"] == pod["metadata"]["managedFields"]
        rv = server.resource_version
        server.create("pods", make_pod("p2").obj())
        url = f"{server.url}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1"
        with urllib.request.urlopen(url, timeout=10) as resp:
            event = json.loads(resp.readline())
        assert event["type"] == "ADDED"
        assert len(json.dumps(event["object"], separators=(",", ":"))) >= 3000
        assert event["object"]["metadata"]["managedFields"]
