"""A PNG of per-node utilisation before and after placement, for each configuration.

One panel per resource (network, cpu, memory); per node a grey bar for the
load before the pods came and one bar per configuration after; a dashed
line at the lower bound of the maximum.  matplotlib is optional (the
`chart` extra: pip install 'netsched[chart]'); it is used through its
object API on the Agg canvas, so no display and no global pyplot state.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from netsched.simulate.report import RESOURCES, Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")


class ChartUnavailable(RuntimeError):
    """matplotlib is not installed."""


def write_chart(report: Report, path: str | Path) -> None:
    figure(report).savefig(str(path), format="png", dpi=100)


def figure(report: Report) -> Figure:
    """The chart on an Agg canvas (drawn on save, or by a test that measures it)."""
    try:
        from matplotlib.artist import Artist
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError:
        raise ChartUnavailable(
            "--chart needs matplotlib, which is not installed: pip install 'netsched[chart]'"
        ) from None
    names = report.scenario.node_names
    n = len(names)
    x = np.arange(n)
    series = 1 + len(report.runs)
    width = 0.8 / series
    fig = Figure(figsize=(max(8.0, min(24.0, 0.35 * n * series / 2 + 4)), 10), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(RESOURCES), 1, sharex=True)
    first = report.runs[0]
    assert first.before is not None
    for ax, res in zip(axes, RESOURCES, strict=True):
        before = 100 * np.nan_to_num(first.before.by_resource()[res])
        ax.bar(x - 0.4 + width / 2, before, width, color="#b0b0b0", label="before")
        for j, run in enumerate(report.runs, start=1):
            assert run.after is not None
            after = 100 * np.nan_to_num(run.after.by_resource()[res])
            ax.bar(
                x - 0.4 + width * (j + 0.5),
                after,
                width,
                color=COLOURS[(j - 1) % len(COLOURS)],
                label=f"after, {run.label}",
            )
        bound = report.bounds.get(res)
        if bound is not None and bound == bound:
            ax.axhline(100 * bound, color="black", linestyle="--", linewidth=1, label="lower bound of max")
        ax.set_ylabel(f"{res} utilisation %")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_title(f"netsched simulate: {report.scenario.name}")
    # One legend for the three panels, above them and outside every axes: inside the network
    # panel it hid the bars of the last nodes. Bars first, then the bound line if any panel has it.
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
    axes[-1].set_xticks(x)
    axes[-1].set_xticklabels(names if n <= 80 else [""] * n, rotation=90, fontsize="small")
    return fig
