"""netsched's HTTPS endpoints in tests: on a free port of 127.0.0.1, authenticating and
authorizing every protected request with the API server of a kubeconfig (the fake's), as
kube-scheduler's delegated auth does with --authentication-kubeconfig/--authorization-kubeconfig."""

from __future__ import annotations

from pathlib import Path

from netsched.observability.server import SecureServing
from netsched.testing.prometheus import free_port


def delegating_serving(kubeconfig: str | Path, cert_dir: str | Path) -> SecureServing:
    """SecureServing (AppOptions.secure) with its certificate generated into `cert_dir`."""
    return SecureServing(
        bind_address="127.0.0.1",
        port=free_port(),
        cert_dir=str(cert_dir),
        authentication_kubeconfig=str(kubeconfig),
        authorization_kubeconfig=str(kubeconfig),
    )
