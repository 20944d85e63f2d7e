"""Registry merging, the out-of-tree example plugin, and CLI start-up behaviour."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from netsched.app import build_registry
from netsched.cli import main
from netsched.framework import ScorePlugin
from netsched.framework.registry import Registry, RegistryError, with_plugin
from netsched.testing.builders import make_node, make_pod
from netsched.testing.framework import schedule_pod

ROOT = Path(__file__).resolve().parents[2]


def load_example() -> type[ScorePlugin]:
    spec = importlib.util.spec_from_file_location("oot_example", ROOT / "examples" / "out_of_tree_plugin.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.FewestPods  # type: ignore[no-any-return]


def test_out_of_tree_plugin_merges_and_runs_through_the_runtime() -> None:
    plugin = load_example()
    reg = build_registry([plugin])
    assert reg["FewestPods"] is plugin and "NodeResourcesFit" in reg
    out = schedule_pod(
        make_pod("p"),
        [make_node("busy").capacity(pods="10"), make_node("empty").capacity(pods="10")],
        existing=[make_pod(f"e{i}").node("busy") for i in range(5)],
        plugins=[plugin],
    )
    assert out.node == "empty"
    assert out.totals == {"busy": 50, "empty": 100}


def test_duplicate_names_are_rejected() -> None:
    class NodeResourcesFit(ScorePlugin):
        name = "NodeResourcesFit"

    with pytest.raises(RegistryError, match="already exists"):
        build_registry([NodeResourcesFit])
    with pytest.raises(RegistryError, match="has no name"):
        with_plugin(type("Nameless", (ScorePlugin,), {}))
    with pytest.raises(RegistryError):
        Registry([int])  # type: ignore[list-item]


def test_write_config_to_shows_the_default_profile(tmp_path: Path) -> None:
    out = tmp_path / "effective.yaml"
    assert main(argv=["--write-config-to", str(out)]) == 0
    doc = yaml.safe_load(out.read_text())
    assert doc["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    profile = doc["profiles"][0]
    assert profile["schedulerName"] == "netsched"
    weights = {p["name"]: p.get("weight") for p in profile["plugins"]["multiPoint"]["enabled"]}
    assert (
        weights["TaintToleration"] == 3 and weights["NodeAffinity"] == 2 and weights["PodTopologySpread"] == 2
    )
    assert weights["InterPodAffinity"] == 2 and weights["NodeResourcesFit"] == 1
    assert weights["NodeResourcesBalancedAllocation"] == 1 and weights["ImageLocality"] == 1
    assert {"DefaultPreemption", "DefaultBinder", "PrioritySort"} <= set(weights)
    assert (
        doc["parallelism"] == 16
        and doc["podInitialBackoffSeconds"] == 1
        and doc["podMaxBackoffSeconds"] == 10
    )
    assert doc["leaderElection"]["resourceName"] == "netsched"
    names = {pc["name"] for pc in profile["pluginConfig"]}
    assert {"NodeResourcesFit", "InterPodAffinity", "PodTopologySpread", "DefaultPreemption"} <= names


def test_bad_flag_value_exits_2() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "netsched", "--leader-elect=maybe"], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 2 and "--leader-elect" in res.stderr
