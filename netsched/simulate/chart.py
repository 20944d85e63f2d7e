"""A PNG of per-node utilisation before and after placement, for each configuration.

One panel per resource (network, cpu, memory), all on the same 0-100 % scale
so panels compare at a glance (taller only when a node ends above its
capacity, for every panel alike); per node a grey bar for the load before the
pods came and one bar per configuration after; a dashed line at the lowest
maximum any placement could reach (report.lower_bounds) and a dotted one at
the configured LoadThreshold limit. A last panel counts the pods each
configuration placed on each node. matplotlib is optional (the `chart`
extra: pip install 'netsched[chart]'); it is used through its object API on
the Agg canvas, so no display and no global pyplot state.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from netsched.simulate.report import RESOURCES, Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")
BOUND_LABEL = "lowest possible max (any placement)"
LIMIT_LABEL = "LoadThreshold limit"


class ChartUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> None:
    """Raise ChartUnavailable unless matplotlib imports (netsched simulate asks before simulating)."""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except ImportError:
        raise ChartUnavailable(
            "--chart needs matplotlib, which is not installed: pip install 'netsched[chart]'"
        ) from None


def write_chart(report: Report, path: str | Path) -> None:
    figure(report).savefig(str(path), format="png", dpi=100)


def figure(report: Report) -> Figure:
    """The chart on an Agg canvas (drawn on save, or by a test that measures it)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    names = report.scenario.node_names
    n = len(names)
    series = 1 + len(report.runs)
    fig = Figure(figsize=(max(8.0, min(24.0, 0.35 * n * series / 2 + 4)), 12), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(RESOURCES) + 1, 1, sharex=True, height_ratios=[3] * len(RESOURCES) + [2])
    top = _utilisation_panels(report, axes[: len(RESOURCES)])
    for ax in axes[: len(RESOURCES)]:
        ax.set_ylim(0, top)  # one scale for every resource
    _pods_panel(report, axes[-1])
    axes[-1].yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_title(f"netsched simulate: {report.scenario.name}")
    _legend(fig, axes)
    axes[-1].set_xticks(np.arange(n))
    axes[-1].set_xticklabels(names if n <= 80 else [""] * n, rotation=90, fontsize="small")
    return fig


def _offsets(series: int) -> tuple[np.ndarray, float]:
    """Bar offsets from each node's tick (before, then one per run) and the bar width."""
    width = 0.8 / series
    return -0.4 + width * (np.arange(series) + 0.5), width


def _utilisation_panels(report: Report, axes: list[Axes]) -> float:
    """Draw the per-resource panels; the scale's top: 100 %, or the highest bar if above."""
    x = np.arange(len(report.scenario.node_names))
    offsets, width = _offsets(1 + len(report.runs))
    first = report.runs[0]
    assert first.before is not None
    highest = 0.0
    for ax, res in zip(axes, RESOURCES, strict=True):
        before = 100 * np.nan_to_num(first.before.by_resource()[res])
        ax.bar(x + offsets[0], before, width, color="#b0b0b0", label="before")
        highest = max(highest, float(before.max(initial=0.0)))
        for j, run in enumerate(report.runs, start=1):
            assert run.after is not None
            after = 100 * np.nan_to_num(run.after.by_resource()[res])
            colour = COLOURS[(j - 1) % len(COLOURS)]
            ax.bar(x + offsets[j], after, width, color=colour, label=f"after, {run.label}")
            highest = max(highest, float(after.max(initial=0.0)))
        bound = report.bounds.get(res)
        if bound is not None and bound == bound:
            ax.axhline(100 * bound, color="black", linestyle="--", linewidth=1, label=BOUND_LABEL)
        limit = report.thresholds.get(res)
        if limit is not None:
            ax.axhline(100 * limit, color="#d62728", linestyle=":", linewidth=1.5, label=LIMIT_LABEL)
        ax.set_ylabel(f"{res} utilisation %")
        ax.grid(axis="y", alpha=0.3)
    return 100.0 if highest <= 100 else 5.0 * math.ceil(highest * 1.02 / 5)


def _pods_panel(report: Report, ax: Axes) -> None:
    names = report.scenario.node_names
    x = np.arange(len(names))
    offsets, width = _offsets(1 + len(report.runs))
    for j, run in enumerate(report.runs, start=1):
        counts = report.pods_per_node(run)
        colour = COLOURS[(j - 1) % len(COLOURS)]
        ax.bar(x + offsets[j], [counts[name] for name in names], width, color=colour)
    ax.set_ylabel("pods placed")
    ax.grid(axis="y", alpha=0.3)


def _legend(fig: Figure, axes: list[Axes]) -> None:
    """One legend for every panel, above them and outside every axes: inside the network panel
    it hid the bars of the last nodes. Bars first, then the lines if any panel has them."""
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D

    entries: dict[str, Artist] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    labels = sorted(entries, key=lambda label: isinstance(entries[label], Line2D))
    fig.legend(
        [entries[label] for label in labels],
        labels,
        loc="outside upper center",
        ncols=min(len(labels), 4),
        fontsize="small",
    )
