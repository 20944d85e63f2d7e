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
from pathlib import Path

import pytest

from netsched.demo import KUBE_DEFAULT_CONFIG
from netsched.testing.prometheus import require_prometheus

pytestmark = pytest.mark.integration

HOT = {"node-00", "node-03"}  # every third node of six


def demo(*args: str, status: int = 0, merged: bool = False) -> subprocess.CompletedProcess[str]:
    """The demo's run on six nodes and twenty pods; `merged`: stderr (its logs) into stdout, in
    the order the two were written."""
    r = subprocess.run(
        [sys.executable, "-m", "netsched", "demo", "--nodes", "6", "--pods", "20", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        timeout=180,
        check=False,
    )
    assert r.returncode == status, (r.stdout, r.stderr)
    return r


def placements(
    stdout: str, profiles: tuple[str, ...] = ("default-scheduler", "netsched")
) -> dict[str, dict[str, int]]:
    """{profile: {node: pods}} from the table; checks the HOT column against the nodes' load."""
    lines = stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("NODE "))
    header = lines[at].split()
    assert header[:5] == ["NODE", "CPU", "NET", "MEM", "HOT"], lines[at]
    assert tuple(header[5:]) == profiles, lines[at]
    out: dict[str, dict[str, int]] = {p: {} for p in profiles}
    for line in lines[at + 1 : at + 7]:
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


def test_the_first_line_names_the_prometheus_and_progress_follows_before_the_runs_log() -> None:
    # stdout and the scheduler's log lines (-v 2) in one stream: what the demo says comes first
    # and as it happens, not at the end of the runs.
    r = demo("--prometheus", "fake", "-v", "2", merged=True)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Node load from an in-process fake Prometheus"), lines[:3]
    assert lines[1] == "Placing 20 pods on 6 nodes with default-scheduler ...", lines[:3]
    synced = [i for i, line in enumerate(lines) if '"Caches synced"' in line]
    second = lines.index("Placing 20 pods on 6 nodes with netsched ...")
    assert len(synced) == 2 and 1 < synced[0] < second < synced[1], lines


def test_a_seed_places_the_same_way_each_run() -> None:
    first, second = (demo("--prometheus", "fake", "--seed", "7").stdout for _ in range(2))
    assert placements(first) == placements(second)
    assert first == second


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "missing.yaml: Unreadable file: No such file or directory"),
        ("", "Empty file: it holds no KubeSchedulerConfiguration"),
        (KUBE_DEFAULT_CONFIG + "parallelism: 0\n", "parallelism: Invalid value: 0"),
    ],
    ids=["missing", "empty", "invalid"],
)
def test_a_config_file_is_read_and_refused_as_the_scheduler_refuses_it(
    tmp_path: Path, content: str | None, error: str
) -> None:
    path = tmp_path / ("missing.yaml" if content is None else "config.yaml")
    if content is not None:
        path.write_text(content)
    r = demo("--config", str(path), status=1)
    scheduler = subprocess.run(
        [sys.executable, "-m", "netsched", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert scheduler.returncode == 1
    assert r.stderr == scheduler.stderr  # the same errors, word for word
    assert error in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""  # refused before anything started


def test_a_config_naming_its_profile_as_kubes_default_gets_a_column_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(KUBE_DEFAULT_CONFIG)  # profile "default-scheduler", as the run it is compared with
    r = demo("--prometheus", "fake", "--config", str(path))
    placed = placements(r.stdout, ("default-scheduler", "mine.yaml"))
    assert sum(placed["mine.yaml"].values()) == 20
    assert "mine.yaml: placed 20/20 pods" in r.stdout


@pytest.mark.parametrize(("flag", "value"), [("--pods", "-3"), ("--nodes", "0"), ("--pods", "many")])
def test_counts_below_one_are_refused_naming_the_flag(flag: str, value: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "netsched", "demo", flag, value], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2, r.stdout
    assert f"argument {flag}:" in r.stderr and "placed" not in r.stdout
