"""HTTPS with delegated authentication and authorization, over real sockets.

The scheduler's endpoints are served over TLS with the certificate generated at
start, and every protected path is checked with a TokenReview and a
SubjectAccessReview sent to the fake API server (which answers from its
add_token / allow hooks and records each review as an API call).
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.kube import KubeAPI, build_api_client
from netsched.observability.server import ObservabilityServer
from netsched.serve import start_secure_server
from netsched.testing.configs import NETSCHED_PROFILE
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.serving import delegating_serving

pytestmark = pytest.mark.integration

CONFIG = NETSCHED_PROFILE


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    with FakeAPIServer() as srv:
        srv.add_token("prom-token", "system:serviceaccount:monitoring:prometheus", ["system:serviceaccounts"])
        srv.add_token("dev-token", "alice", ["developers"])
        srv.add_token("root-token", "admin", ["system:masters"])
        srv.allow("system:serviceaccount:monitoring:prometheus", "/metrics", "get")
        yield srv


@pytest.fixture
def secure(api: FakeAPIServer, tmp_path: Path) -> Iterator[tuple[ObservabilityServer, Path]]:
    kubeconfig = str(api.write_kubeconfig(tmp_path / "kubeconfig"))
    registry = build_registry()
    cfg = load_config(CONFIG, registry)
    options = AppOptions(secure=delegating_serving(kubeconfig, tmp_path / "certs"))
    app = SchedulerApp(cfg, registry, KubeAPI(build_api_client(kubeconfig)), options=options)
    server = start_secure_server(app)
    assert server is not None
    try:
        yield server, tmp_path / "certs" / "netsched.crt"
    finally:
        server.stop()
        app.shutdown(timeout=2)


def _get(
    server: ObservabilityServer,
    path: str,
    token: str = "",
    ca: Path | None = None,
    ctx: ssl.SSLContext | None = None,
) -> tuple[int, str]:
    if ctx is None:
        ctx = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _reviews(api: FakeAPIServer, resource: str) -> int:
    return sum(1 for r in api.requests if r.resource == resource and r.verb == "create")


def test_tls_handshake_verifies_against_the_generated_certificate(
    secure: tuple[ObservabilityServer, Path],
) -> None:
    server, crt = secure
    cert = x509.load_pem_x509_certificate(crt.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert server.url.startswith("https://")
    # A verifying client that trusts the generated certificate completes the handshake.
    assert _get(server, "/healthz", ca=crt) == (200, "ok\n")
    with pytest.raises(ssl.SSLCertVerificationError):
        _get(server, "/healthz", ctx=ssl.create_default_context())  # system CAs only


def test_plain_http_is_refused_on_the_secure_port(secure: tuple[ObservabilityServer, Path]) -> None:
    server, _ = secure
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    with pytest.raises((http.client.HTTPException, ConnectionError, OSError)):
        conn.request("GET", "/metrics")
        conn.getresponse().read()
    conn.close()
    assert _get(server, "/livez")[0] == 200  # the server survived it


def test_the_401_403_200_matrix(secure: tuple[ObservabilityServer, Path], api: FakeAPIServer) -> None:
    server, _ = secure
    # Always-allowed paths: no token, no review.
    for path in ("/healthz", "/livez"):
        assert _get(server, path)[0] == 200
    assert _get(server, "/readyz")[0] == 503  # not synced: served, not refused
    assert _reviews(api, "tokenreviews") == 0
    # No token / unknown token: 401.
    assert _get(server, "/metrics")[0] == 401
    assert _get(server, "/metrics", token="stolen")[0] == 401
    # Authenticated, not allowed: 403 naming the user and path; /debug/* is protected too.
    status, body = _get(server, "/metrics", token="dev-token")
    assert status == 403 and 'User "alice" cannot get path "/metrics"' in body
    assert _get(server, "/debug/explain?pod=default/p", token="prom-token")[0] == 403
    # Allowed: 200 with the metrics.
    status, body = _get(server, "/metrics", token="prom-token")
    assert status == 200 and "scheduler_pending_pods" in body
    # system:masters needs no SubjectAccessReview.
    before = _reviews(api, "subjectaccessreviews")
    assert _get(server, "/debug/explain", token="root-token")[0] == 400  # allowed, bad query
    assert _reviews(api, "subjectaccessreviews") == before


def test_reviews_are_cached(secure: tuple[ObservabilityServer, Path], api: FakeAPIServer) -> None:
    server, _ = secure
    for _ in range(5):
        assert _get(server, "/metrics", token="prom-token")[0] == 200
        assert _get(server, "/metrics", token="dev-token")[0] == 403
        assert _get(server, "/metrics", token="stolen")[0] == 401
    # One TokenReview per token (successes and failures cached), one SAR per (user, path, verb).
    assert _reviews(api, "tokenreviews") == 3
    assert _reviews(api, "subjectaccessreviews") == 2
    # A grant made now is seen only when the denied answer expires (10 s): still 403.
    api.allow("alice", "/metrics")
    assert _get(server, "/metrics", token="dev-token")[0] == 403
