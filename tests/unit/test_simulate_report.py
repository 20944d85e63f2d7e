"""Report figures: spread, the water-filling bound (hand-computed), text, JSON, chart, progress bar."""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from netsched.app import build_registry
from netsched.config import load_config
from netsched.simulate import Report, Spread, load_scenario, lower_bound, lower_bounds, simulate, water_fill
from netsched.simulate.configs import EXAMPLE_CONFIG, default_profile, example_config, example_text
from netsched.simulate.progress import ProgressBar, show_progress
from netsched.simulate.report import configured_thresholds

REGISTRY = build_registry()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

SMALL = """
name: small
nodes: "2 nodes, 4 cpu, 8Gi, 1 Gbit"
pods: "4 pods of 1 cpu, 1Gi, 100 Mbit"
metrics: {node-00: {networkUtilization: 0.1, cpu: 0.5}}
"""


def test_water_fill_by_hand() -> None:
    cap = np.array([10.0, 10.0, 20.0])
    bg = np.array([8.0, 2.0, 0.0])
    # Below 0.8 only the last two nodes take load: (10u - 2) + 20u = 14  ->  u = 16/30.
    assert water_fill(cap, bg, 14.0) == pytest.approx(16 / 30)
    # ...so the least possible maximum is the hottest background, 8/10.
    assert lower_bound(cap, bg, 14.0) == pytest.approx(0.8)
    # Above 0.8 all three: (10u - 8) + (10u - 2) + 20u = 30  ->  u = 1.
    assert lower_bound(cap, bg, 30.0) == pytest.approx(1.0)
    assert water_fill(cap, bg, 0.0) == 0.0
    # Nodes without a capacity (no link speed) take no part.
    assert water_fill(np.array([np.nan, 10.0]), np.array([0.0, 0.0]), 5.0) == pytest.approx(0.5)
    assert math.isnan(lower_bound(np.array([np.nan]), np.array([0.0]), 1.0))


def test_lower_bounds_of_a_scenario() -> None:
    s = load_scenario(SMALL)
    b = lower_bounds(s)
    # rx: 4 x 100 Mbit = 50 MB/s into 2 x 125 MB/s, node-00 starting at 12.5: 250u - 12.5 = 50.
    assert b["network"] == pytest.approx(0.25)
    # cpu: 4 cores into 2 x 4, node-00 at 2 cores already: 8u - 2 = 4.
    assert b["cpu"] == pytest.approx(0.75)
    assert b["memory"] == pytest.approx(4 / 16)


def test_spread() -> None:
    sp = Spread.of(np.array([0.2, 0.4, np.nan, 0.6]))
    assert (sp.max, sp.mean) == pytest.approx((0.6, 0.4))
    assert sp.stddev == pytest.approx(math.sqrt(0.08 / 3))
    assert sp.max_over_mean == pytest.approx(1.5)
    assert math.isnan(Spread.of(np.array([np.nan])).max)
    assert Spread.of(np.zeros(3)).to_dict()["maxOverMean"] is None


def report(text: str = SMALL) -> Report:
    s = load_scenario(text)
    ours = simulate(s, example_config(REGISTRY), REGISTRY, label="netsched")
    base = simulate(s, default_profile("netsched", REGISTRY), REGISTRY, label="default")
    thresholds = configured_thresholds(example_config(REGISTRY), "netsched")
    return Report(s, [ours, base], ["config.yaml", "kube's default plugins"], lower_bounds(s), thresholds)


def test_text_and_json() -> None:
    # node-00's CPU at 10 % rather than 50 %: LoadThreshold (65 %) counts each 1-cpu pod (21 % of
    # 4 cpu estimated), so SMALL's 75 % lower bound leaves a pod out; here all four fit.
    r = report(SMALL.replace("cpu: 0.5", "cpu: 0.1"))
    text = r.text()
    assert "Scenario small" in text and "4/4 pods placed" in text
    assert "default/pod-00" in text and "NETSCHED  DEFAULT" in text
    assert "network   lower bound  25.0%" in text
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["scenario"]["pods"] == 4 and doc["lowerBounds"]["network"] == pytest.approx(0.25)
    ours, base = doc["runs"]
    assert ours["label"] == "netsched" and ours["placed"] == 4 and ours["queriesWhileScheduling"] == 0
    assert ours["queriesPerPoll"] == 6 and base["polls"] == 0
    assert sum(n["pods"] for n in ours["nodes"]) == 4
    assert ours["nodes"][0]["before"]["network"] == pytest.approx(0.1)
    # The node-level "after" figures are the spread's inputs.
    assert ours["spread"]["network"]["max"] == pytest.approx(
        max(n["after"]["network"] for n in ours["nodes"])
    )
    assert "Placements" not in r.text(placements=False)


def test_the_verdict_comes_first_and_the_per_pod_table_last() -> None:
    r = report()
    lines = r.text().splitlines()
    # The header (the scenario, one line per run), then the one-line verdict.
    assert lines[3] == r.verdict()
    assert lines[3].startswith("Closest to the lower bound (hottest node): network ")
    for res in ("network", "cpu", "memory"):
        best = min(r.spread(run)[res].max for run in r.runs)
        assert f"{res} " in lines[3] and f"{100 * best:.1f}% (bound {100 * r.bounds[res]:.1f}%)" in lines[3]
    text = "\n".join(lines)
    assert text.index("Spread after placement") < text.index("Placements\nPOD")
    # The per-pod table is the last part: no section after it, a row for every pod in it.
    table = text[text.index("Placements\nPOD") :]
    assert "\n\n" not in table.rstrip()
    assert [line.split()[0] for line in table.splitlines()[2:6]] == [f"default/pod-0{i}" for i in range(4)]


def test_chart_is_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from netsched.simulate.chart import write_chart

    out = tmp_path / "load.png"
    write_chart(report(), out)
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_chart_legend_covers_no_panel() -> None:
    """Inside the network panel the legend hid the bars of the last nodes: it sits outside every axes."""
    pytest.importorskip("matplotlib")
    from netsched.simulate.chart import figure

    fig = figure(report())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1, legends
    box = legends[0].get_window_extent(renderer)
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1
    assert len(fig.axes) == 4  # network, cpu, memory, pods placed
    for ax in fig.axes:
        # The axes' window extent is its data area (the patch inside the spines).
        assert not box.overlaps(ax.get_window_extent(renderer)), f"legend over the {ax.get_ylabel()} panel"
        if ax.get_title():
            assert not box.overlaps(ax.title.get_window_extent(renderer)), "legend over the title"
    labels = [t.get_text() for t in legends[0].get_texts()]
    assert labels == [
        "before",
        "after, netsched",
        "after, default",
        "lowest possible max (any placement)",
        "LoadThreshold limit",
    ]


def test_chart_panels_share_one_scale_and_draw_the_thresholds_and_pods_per_node() -> None:
    pytest.importorskip("matplotlib")
    from netsched.simulate.chart import LIMIT_LABEL, figure

    r = report()
    assert r.thresholds == {"network": 0.8, "cpu": 0.65, "memory": 0.95}  # example config.yaml
    fig = figure(r)
    *panels, pods = fig.axes
    # One scale, 0 to 100 % (a full node's bar reaches the top).
    assert {ax.get_ylim() for ax in panels} == {(0.0, 100.0)}
    assert max(bar.get_height() for ax in panels for bar in ax.patches) == pytest.approx(100)
    for ax, res in zip(panels, ("network", "cpu", "memory"), strict=True):
        limits = [line.get_ydata()[0] for line in ax.get_lines() if line.get_label() == LIMIT_LABEL]
        assert limits == [pytest.approx(100 * r.thresholds[res])], res
    # The pods panel: one bar per node and run, as high as the pods the run placed there.
    heights = [int(bar.get_height()) for bar in pods.patches]
    n = len(r.scenario.node_names)
    for j, run in enumerate(r.runs):
        counts = r.pods_per_node(run)
        assert heights[j * n : (j + 1) * n] == [counts[name] for name in r.scenario.node_names]
    assert sum(heights) == sum(len(run.placements) for run in r.runs)


def test_no_threshold_without_load_threshold() -> None:
    assert configured_thresholds(default_profile("netsched", REGISTRY), "netsched") == {}
    assert configured_thresholds(example_config(REGISTRY), "another-profile") == {}


def test_chart_without_matplotlib_fails_before_simulating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from netsched.simulate import cli

    def simulate_nothing(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated although the chart cannot be drawn")

    monkeypatch.setattr(cli, "simulate", simulate_nothing)
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, module, None)  # hidden: importing it fails
    out = tmp_path / "load.png"
    assert cli.main(["--chart", str(out)]) == 1
    assert "--chart needs matplotlib, which is not installed" in capsys.readouterr().err
    assert not out.exists()


def test_chart_without_matplotlib_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from netsched.simulate.chart import ChartUnavailable, write_chart

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    with pytest.raises(ChartUnavailable, match=r"pip install 'netsched\[chart\]'"):
        write_chart(report(), tmp_path / "x.png")


def test_progress_bar() -> None:
    buf = io.StringIO()
    bar = ProgressBar("simulating netsched", buf, width=10)
    for i in range(1, 11):
        bar(i, 10)
    bar.close()
    assert buf.getvalue().endswith("[##########] 10/10 pods\n")
    assert not show_progress(False, io.StringIO()) and show_progress(True, io.StringIO())


def test_a_disabled_threshold_draws_no_limit() -> None:
    """cpuUtilizationPercent: 0 turns LoadThreshold's CPU check off: no 0 % limit on the chart."""
    text = example_text(EXAMPLE_CONFIG).replace("cpuUtilizationPercent: 65", "cpuUtilizationPercent: 0")
    cfg = load_config(text, REGISTRY, default_scheduler_name="netsched")
    got = configured_thresholds(cfg, "netsched")
    assert "cpu" not in got and got["network"] > 0
