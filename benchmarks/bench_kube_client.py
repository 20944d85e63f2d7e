"""The API client's own CPU per request: credentials and proxy settings on the hot path.

    python -m benchmarks.bench_kube_client [--requests 3000] [--rounds 3] [--env 0,50,200]

Each case runs in a fresh process (spawned) with its own environment, against the
fake API server over HTTPS on 127.0.0.1, with a kubeconfig that authenticates by bearer
token (as a ServiceAccount token or most kubeconfigs do: the kubernetes package then
installs a token-refresh hook). It sends `--requests` small GETs through
`KubeClient.request` (the path bindings, events and patches take) after a warm-up and
prints the calling thread's CPU per request (the server's threads are not counted),
the median of `--rounds` rounds:

1. with `--env` extra environment variables (a pod gets several per Service in its
   namespace: FOO_SERVICE_HOST, FOO_PORT_443_TCP, ...);
2. with HTTPS_PROXY set and a NO_PROXY that covers the API server, which must keep
   the lean transport (and so the same CPU) rather than fall back to urllib3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import isolated, out, table

TOKEN = "bench-token-0123456789"


def _service_env(n: int) -> dict[str, str]:
    """n variables shaped like the ones the kubelet sets for each Service."""
    env: dict[str, str] = {}
    for i in range(n):
        svc = f"SERVICE_{i:03d}"
        env[f"{svc}_SERVICE_HOST"] = f"10.96.{i // 250}.{i % 250}"
        if len(env) >= n:
            break
        env[f"{svc}_PORT"] = f"tcp://10.96.{i // 250}.{i % 250}:443"
        if len(env) >= n:
            break
    return env


def _case(env: dict[str, str], requests: int, rounds: int) -> dict[str, Any]:
    os.environ.update(env)
    from netsched.kube import build_api_client
    from netsched.testing.builders import make_pod
    from netsched.testing.fakeapi import FakeAPIServer

    with FakeAPIServer(tls=True) as srv, tempfile.TemporaryDirectory() as tmp:
        srv.create("pods", make_pod("p0").obj())
        kubeconfig = Path(tmp) / "kubeconfig"
        srv.write_kubeconfig(kubeconfig)
        doc = json.loads(kubeconfig.read_text())
        doc["users"][0]["user"] = {"token": TOKEN}
        kubeconfig.write_text(json.dumps(doc))
        client = build_api_client(str(kubeconfig), qps=1e6, burst=10**6)
        path = "/api/v1/namespaces/default/pods/p0"
        for _ in range(200):
            client.request("get", "pods", "GET", path)
        per_request = []
        for _ in range(rounds):
            cpu = time.thread_time()
            for _ in range(requests):
                client.request("get", "pods", "GET", path)
            per_request.append((time.thread_time() - cpu) / requests * 1e6)
        return {"us": statistics.median(per_request), "lean": client.transport is not None}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--env", default="0,50,200", help="extra environment variables per case")
    a = p.parse_args()
    rows = []
    for n in (int(x) for x in a.env.split(",")):
        r = isolated(_case, _service_env(n), a.requests, a.rounds)
        rows.append((f"{n} extra env vars", f"{r['us']:.1f}", "lean" if r["lean"] else "urllib3"))
    proxied = {"HTTPS_PROXY": "http://proxy.invalid:3128", "NO_PROXY": "127.0.0.1,localhost,.svc"}
    r = isolated(_case, {**_service_env(50), **proxied}, a.requests, a.rounds)
    rows.append(
        (
            "50 env vars + HTTPS_PROXY, NO_PROXY covers the server",
            f"{r['us']:.1f}",
            "lean" if r["lean"] else "urllib3",
        )
    )
    out(table(rows, ["case", "client CPU per request (us)", "transport"]))


if __name__ == "__main__":
    main()
