"""examples/bandwidth_score.py: a user's metric plugin, run through the real runtime on fake metrics."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from netsched.framework.errors import FrameworkBuildError
from netsched.metrics.scoring import QueryScorePlugin
from netsched.testing.builders import make_node, make_pod
from netsched.testing.framework import build_framework, plugin_of, schedule_pod
from netsched.testing.prometheus import fake_hub

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bandwidth_score.py"
MB = 1e6


def load_example() -> type[QueryScorePlugin]:
    spec = importlib.util.spec_from_file_location("bandwidth_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    plugin: type[QueryScorePlugin] = mod.BandwidthScore
    return plugin


def test_example_is_at_most_30_lines() -> None:
    assert len(EXAMPLE.read_text().splitlines()) <= 30


def run(loads: dict[str, Any]) -> tuple[Any, list[str]]:
    """Serve `loads` (node -> bytes/s) for the example's query, poll once, schedule one pod."""
    plugin = load_example()
    hub, fake = fake_hub()
    fwk = build_framework([plugin], metrics=hub, weights={plugin.name: 2})
    fake.serve(plugin_of(fwk, plugin).source, plugin.name, loads)
    hub.poll_now()
    outcome = schedule_pod(make_pod("p"), [make_node(n) for n in ("n0", "n1", "n2", "n3")], framework=fwk)
    return outcome, fake.calls


def test_least_loaded_node_wins_and_scores_are_inverse_to_load() -> None:
    outcome, calls = run({"n0": 40 * MB, "n1": 10 * MB, "n2": 80 * MB, "n3": 20 * MB})
    assert outcome.node == "n1"
    scores = {n: norm for n, (norm, _) in outcome.scores["BandwidthScore"].items()}
    assert scores == {"n0": 50, "n1": 88, "n2": 0, "n3": 75}  # 100 - 100 x load // busiest
    assert outcome.totals == {n: 2 * s for n, s in scores.items()}  # weight 2
    # One poll ran the query; scheduling read the cache and queried nothing.
    assert len(calls) == 1 and "node_network_transmit_bytes_total" in calls[0]


def test_idle_cluster_scores_every_node_100() -> None:
    outcome, _ = run(dict.fromkeys(("n0", "n1", "n2", "n3"), 0.0))
    assert {n: s for n, (s, _) in outcome.scores["BandwidthScore"].items()} == dict.fromkeys(
        ("n0", "n1", "n2", "n3"), 100
    )


def test_without_the_metrics_hub_the_build_fails() -> None:
    plugin = load_example()
    with pytest.raises(FrameworkBuildError, match="'BandwidthScore' failed to initialise.*metrics hub"):
        build_framework([plugin])
