"""The real `netsched` process with a kube-scheduler manifest's logging flags, against the fake API server.

What a log pipeline reads: with --logging-format=json every line is one JSON
object with kube's fields, the binding line carries pod and node as fields of
their own, --vmodule turns on debug lines for the named file only, and
--log-flush-frequency is accepted and reported once as without effect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netsched.testing.builders import make_node, make_pod
from netsched.testing.cli import killed_if_left, sigterm, start_netsched
from netsched.testing.configs import NETSCHED_PROFILE
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration


# One profile named netsched with kube's default plugins (nothing to poll), no leader election.
CONFIG = NETSCHED_PROFILE


def _bound(server: FakeAPIServer, name: str) -> str:
    return str(server.get("pods", name).get("spec", {}).get("nodeName", ""))


def _run(server: FakeAPIServer, tmp_path: Path, *flags: str) -> str:
    """Start netsched with flags, wait for pod p0 to be bound, stop it with SIGTERM; its output."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    server.create("nodes", make_node("n2").obj())
    server.create("pods", make_pod("p0").scheduler("netsched").obj())
    with killed_if_left(start_netsched(cfg, kubeconfig, *flags)) as proc:
        wait_until(lambda: _bound(server, "p0"), timeout=30, what="netsched bound p0")
        out = sigterm(proc, 20)
    assert proc.returncode == 0, out
    return out


def test_json_logs_with_kube_scheduler_logging_flags(server: FakeAPIServer, tmp_path: Path) -> None:
    out = _run(
        server,
        tmp_path,
        "--logging-format=json",
        "--v=2",
        "--vmodule=reflector=4",
        "--log-flush-frequency=5s",
    )
    lines: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines()]  # every line is JSON
    for line in lines:
        assert list(line)[:3] == ["ts", "caller", "msg"], line
        assert isinstance(line["ts"], float) and line["ts"] > 1e12  # milliseconds since the epoch
    bound = [line for line in lines if line["msg"] == "Successfully bound pod to node"]
    assert len(bound) == 1
    assert (bound[0]["pod"], bound[0]["node"], bound[0]["profile"], bound[0]["v"]) == (
        "default/p0",
        "n2",
        "netsched",
        0,
    )
    assert bound[0]["caller"].startswith("netsched/binder.py:")
    # --vmodule=reflector=4: debug lines (v=4) appear, from reflector.py only.
    debug = [line for line in lines if line.get("v") == 4]
    assert any(line["msg"] == "Reflector stopped" for line in debug)
    assert all(line["caller"].startswith("kube/reflector.py:") for line in debug), debug
    flush = [line for line in lines if line["msg"].startswith("--log-flush-frequency has no effect")]
    assert len(flush) == 1 and flush[0]["flushFrequency"] == "5s"


def test_text_logs_quote_values_as_klog(server: FakeAPIServer, tmp_path: Path) -> None:
    out = _run(server, tmp_path, "--v=2")
    bound = [line for line in out.splitlines() if '"Successfully bound pod to node"' in line]
    assert len(bound) == 1
    assert bound[0].startswith("I")
    assert bound[0].split("] ", 1)[1] == (
        '"Successfully bound pod to node" pod="default/p0" node="n2" profile="netsched"'
    )
