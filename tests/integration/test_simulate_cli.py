"""`netsched simulate` as a user runs it: a subprocess, the shipped example, real output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netsched.simulate.cli import main

pytestmark = pytest.mark.integration

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXAMPLES = Path(__file__).resolve().parents[2] / "netsched" / "examples"


def netsched(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netsched", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_no_arguments_runs_the_shipped_example() -> None:
    r = netsched()
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("Scenario example (netsched/examples/scenario.yaml): 12 nodes")
    assert "netsched/examples/config.yaml: 60/60 pods placed" in out
    assert "kube's default plugins: 60/60 pods placed" in out
    assert "POD             NETSCHED  DEFAULT" in out and "default/web-59" in out
    assert "Spread after placement" in out and "network   lower bound" in out
    assert r.stderr == ""  # no progress bar and no log lines when not on a terminal


def test_explain_prints_the_pod_and_the_winner() -> None:
    r = netsched("--explain", "default/web-07", "--no-placements", "--progress")
    assert r.returncode == 0, r.stderr
    head = next(line for line in r.stdout.splitlines() if line.startswith("Explain default/web-07"))
    placed = head.rsplit("placed on ", 1)[1].rstrip(")")
    assert f"pod default/web-07 (profile netsched): winner {placed}" in r.stdout
    assert "NetworkTraffic(x3)" in r.stdout and f"{placed} *" in r.stdout
    assert "simulating netsched [" in r.stderr and "60/60 pods" in r.stderr


def test_json_and_chart(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    chart = tmp_path / "load.png"
    r = netsched("--json", "--explain", "web-03", "--chart", str(chart), "--seed", "4")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["scenario"]["seed"] == 4 and [run["label"] for run in doc["runs"]] == ["netsched", "default"]
    assert doc["runs"][0]["placed"] == 60 and doc["runs"][0]["queriesWhileScheduling"] == 0
    assert doc["explain"]["pod"] == "default/web-03"
    assert (
        doc["explain"]["winner"]
        == doc["explain"]["placedOn"]
        == doc["runs"][0]["placements"]["default/web-03"]
    )
    assert chart.read_bytes()[:8] == PNG_MAGIC


def test_bad_scenario_lists_every_problem_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text('nodes: "3 nodes, 32 xyz"\npods: {count: 2, bandwidth: fast}\ntiming: {speed: 1}\n')
    r = netsched(str(bad))
    assert r.returncode == 1 and r.stdout == ""
    assert f"invalid scenario {bad}:" in r.stderr
    for path in ("nodes: Invalid value", "pods.bandwidth: Invalid value", "timing.speed: Unknown field"):
        assert path in r.stderr


def test_in_process_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text('nodes: "3 nodes, 1 Gbit"\npods: "6 pods of 100m cpu, 50 Mbit"\nconfig: ksc.yaml\n')
    (tmp_path / "ksc.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: mine\n  plugins:\n    multiPoint:\n"
        "      enabled: [{name: NetworkTraffic, weight: 2}]\n"
    )
    assert main([str(scenario), "--compare-config", "none", "--no-placements"]) == 0
    out = capsys.readouterr().out
    # rx, tx, link speed and the per-pod usage that corrects rx and tx.
    assert f"{tmp_path / 'ksc.yaml'}: 6/6 pods placed; 1 poll(s), 4 queries per poll" in out
    assert "default " not in out

    assert main([str(scenario), "--explain", "default/nope"]) == 1
    assert "--explain: no pod default/nope" in capsys.readouterr().err
    assert main([str(scenario), "--config", str(tmp_path / "missing.yaml")]) == 1
    assert "missing.yaml" in capsys.readouterr().err


def test_a_compared_config_is_labelled_by_its_file_name(tmp_path: Path) -> None:
    # Two files of one name: the second is labelled by its path, so no two runs share a label.
    other = tmp_path / "config.yaml"
    other.write_text((EXAMPLES / "config.yaml").read_text())
    r = netsched(
        "--compare-config",
        "default",
        "--compare-config",
        str(EXAMPLES / "config.yaml"),
        "--compare-config",
        str(other),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    labels = [run["label"] for run in json.loads(r.stdout)["runs"]]
    assert labels == ["netsched", "default", "config.yaml", str(other)]


def test_the_verdict_line_comes_before_the_per_pod_table() -> None:
    r = netsched()
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("Closest to the lower bound"))
    assert verdict == 3, lines[:5]
    assert lines.index("Placements") > lines.index(next(x for x in lines if x.startswith("Spread after")))


def test_a_copied_scenario_names_its_config_key_and_the_path_it_looked_at(tmp_path: Path) -> None:
    copy = tmp_path / "copied" / "traffic-scenario.yaml"
    copy.parent.mkdir()
    copy.write_text((EXAMPLES / "traffic-scenario.yaml").read_text())
    r = netsched(str(copy))
    assert r.returncode == 1 and r.stdout == ""
    assert f"configuration named by the scenario's config: in {copy}" in r.stderr
    assert "config: Unreadable file: 'traffic-config.yaml'" in r.stderr
    assert str(copy.parent / "traffic-config.yaml") in r.stderr and "No such file" in r.stderr
