"""Preemption over HTTP: the real `netsched` command marks each victim DisruptionTarget, then deletes it.

kube v1.31 patches a victim's status with DisruptionTarget=True (reason
PreemptionByScheduler) before deleting it, and only a pod carrying that
condition counts as a preemption in progress.  The pod watch history of the
fake API server shows the order the scheduler wrote in.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from netsched.testing.builders import make_node, make_pod
from netsched.testing.cli import killed_if_left, sigterm, start_netsched
from netsched.testing.configs import NETSCHED_PROFILE_FAST_BACKOFF
from netsched.testing.fakeapi import FakeAPIServer

pytestmark = pytest.mark.integration

CONFIG = NETSCHED_PROFILE_FAST_BACKOFF


def pod_history(server: FakeAPIServer, since: int, name: str) -> list[tuple[str, dict[str, Any]]]:
    """Every watch event of pod `name` after resourceVersion `since`, read over HTTP."""
    url = f"{server.url}/api/v1/namespaces/default/pods?watch=1&resourceVersion={since}&timeoutSeconds=1"
    with urllib.request.urlopen(url, timeout=10) as reply:
        events = [json.loads(line) for line in reply.read().splitlines() if line.strip()]
    return [(e["type"], e["object"]) for e in events if e["object"]["metadata"].get("name") == name]


def disruption_target(obj: dict[str, Any]) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget":
            return dict(cond)
    return None


def test_victim_carries_the_disruption_target_condition_before_it_is_deleted(
    tmp_path: Path,
) -> None:
    with FakeAPIServer(watch_timeout=5.0, bookmark_interval=0.5) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        cfg = tmp_path / "config.yaml"
        cfg.write_text(CONFIG)
        server.create("nodes", make_node("n0").capacity(cpu="2", pods="110").obj())
        server.create("pods", make_pod("victim").node("n0").req(cpu="2").priority(0).obj())
        since = server.resource_version
        server.create("pods", make_pod("urgent").scheduler("netsched").req(cpu="1").priority(1000).obj())
        with killed_if_left(start_netsched(cfg, kubeconfig)) as proc:
            server.wait_for(lambda: server.get("pods", "urgent")["spec"].get("nodeName") == "n0", timeout=30)
            out = sigterm(proc, 20)
        assert proc.returncode == 0, out
        history = pod_history(server, since, "victim")

    kinds = [kind for kind, _ in history]
    assert kinds == ["MODIFIED", "DELETED"], kinds
    marked, deleted = history[0][1], history[1][1]
    cond = disruption_target(marked)
    assert cond is not None, marked.get("status")
    assert {k: cond[k] for k in ("status", "reason", "message")} == {
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "netsched: preempting to accommodate a higher priority pod",
    }
    assert cond.get("lastTransitionTime")
    assert disruption_target(deleted) == cond  # the object as deleted still carries it
    assert marked["spec"]["nodeName"] == "n0"  # the status write changed nothing else
