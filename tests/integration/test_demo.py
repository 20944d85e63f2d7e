"""`netsched demo` as a user runs it: kube's default profile and netsched's load-aware one place the
same pods on the same nodes, every third one hot, over HTTP to the in-process fake API server.

The load-aware profile must leave the hot nodes alone and the default profile must not (it
cannot see load): that is what the demo is there to show. Each test runs the demo as a
subprocess, as `python -m netsched demo` is run.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from netsched.testing.prometheus import require_prometheus

pytestmark = pytest.mark.integration

HOT = {"node-00", "node-03"}  # every third node of six


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [sys.executable, "-m", "netsched", "demo", "--nodes", "6", "--pods", "20", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return r


def placements(stdout: str) -> dict[str, dict[str, int]]:
    """{profile: {node: pods}} from the table; checks the HOT column against the nodes' load."""
    lines = stdout.splitlines()
    header = lines[1].split()
    assert header[:5] == ["NODE", "CPU", "NET", "MEM", "HOT"], lines[1]
    profiles = header[5:]
    assert profiles == ["default-scheduler", "netsched"]
    out: dict[str, dict[str, int]] = {p: {} for p in profiles}
    for line in lines[2:8]:
        node, _cpu, _net, _mem, hot, *counts = line.split()
        assert (hot == "yes") == (node in HOT), line
        for p, n in zip(profiles, counts, strict=True):
            out[p][node] = int(n)
    return out


def check_hot_nodes_avoided(stdout: str) -> None:
    placed = placements(stdout)
    assert sum(placed["default-scheduler"].values()) == sum(placed["netsched"].values()) == 20
    assert sum(placed["default-scheduler"][n] for n in HOT) > 0, "kube's default plugins do not see load"
    assert all(placed["netsched"][n] == 0 for n in HOT), placed["netsched"]
    assert "netsched: placed 20/20 pods, 0 on hot nodes" in stdout
    on_hot = sum(placed["default-scheduler"][n] for n in HOT)
    assert f"default-scheduler: placed 20/20 pods, {on_hot} on hot nodes" in stdout


def test_load_aware_profile_avoids_the_hot_nodes_with_the_in_process_fake_prometheus() -> None:
    r = demo("--prometheus", "fake")
    assert r.stdout.startswith("Node load from an in-process fake Prometheus (--prometheus fake)")
    check_hot_nodes_avoided(r.stdout)


def test_load_aware_profile_avoids_the_hot_nodes_with_a_real_prometheus() -> None:
    require_prometheus()  # skips without the binary (fails in CI)
    r = demo("--prometheus", "real")
    assert "scraping a synthetic node_exporter" in r.stdout.splitlines()[0]
    check_hot_nodes_avoided(r.stdout)


def test_logging_flags_are_accepted_and_logs_go_to_stderr_as_json() -> None:
    r = demo("--prometheus", "fake", "--logging-format", "json", "-v", "2")
    lines = [json.loads(line) for line in r.stderr.splitlines()]
    assert any(entry["msg"] == "Caches synced" for entry in lines), r.stderr[:2000]
    check_hot_nodes_avoided(r.stdout)
