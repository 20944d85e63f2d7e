"""`netsched demo` as a user runs it: the real scheduler over HTTP to the in-process fake API server."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_demo_places_every_pod() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "netsched", "demo", "--nodes", "4", "--pods", "10"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NODE", "PODS", "CPU", "REQ/ALLOC", "MEM", "REQ/ALLOC", "(Gi)"]
    rows = [line.split() for line in lines[1:5]]
    assert [row[0] for row in rows] == ["node-00", "node-01", "node-02", "node-03"]
    assert sum(int(row[1]) for row in rows) == 10
    assert "placed 10/10 pods on 4 nodes" in r.stdout
    assert "pending:" not in r.stdout
