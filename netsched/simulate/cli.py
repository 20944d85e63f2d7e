"""`netsched simulate`: what a configuration would do with a cluster, without a cluster.

    netsched simulate                                   # the shipped example scenario
    netsched simulate SCENARIO.yaml [--config KSC.yaml] [--compare-config default|none|FILE ...]
                      [--chart out.png] [--explain NS/NAME] [--seed N] [--json] [--progress]

Exit status: 0 when the simulation ran (pods left unplaced are reported, not
an error), 1 on a bad scenario or configuration (every problem with its
field path) or a chart that could not be written, 2 on bad flags.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

from netsched import logutil
from netsched.config import ConfigError, SchedulerConfig, load_config
from netsched.flags import HelpFormatter
from netsched.framework.extension_points import PluginFactory
from netsched.framework.fields import FieldError
from netsched.framework.registry import Registry, RegistryError
from netsched.simulate.configs import (
    EXAMPLE_CONFIG,
    EXAMPLE_SCENARIO,
    default_profile,
    example_config,
    example_text,
    examples,
)
from netsched.simulate.engine import Run, simulate
from netsched.simulate.progress import ProgressBar, show_progress
from netsched.simulate.report import Report, configured_thresholds, lower_bounds
from netsched.simulate.scenario import Scenario, load_scenario


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netsched simulate",
        description="Run the real scheduler and plugins over an in-memory cluster with simulated "
        "load and Prometheus; print where each pod goes and how even the load ends up, next to "
        "kube's default profile.",
        epilog="Scenario format: netsched/simulate/README.md. Without SCENARIO the shipped example runs.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("scenario", nargs="?", default="", help="scenario YAML (default: the shipped example)")
    p.add_argument(
        "--config",
        default="",
        help="KubeSchedulerConfiguration to simulate (default: the scenario's config:)",
    )
    p.add_argument(
        "--compare-config",
        action="append",
        default=None,
        metavar="default|none|FILE",
        help="'default' (kube's default plugins, no metrics; the default), 'none', or a "
        "KubeSchedulerConfiguration file; repeat it to compare several",
    )
    p.add_argument(
        "--chart", default="", metavar="PNG", help="write a per-node load chart (needs matplotlib)"
    )
    p.add_argument("--explain", default="", metavar="NS/NAME", help="explain this pod's placement")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for ranges, random picks and tie breaks (default: the scenario's seed:, 1 when it has none)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-placements", action="store_true", help="leave the per-pod table (printed last) out")
    p.add_argument("--progress", action="store_true", help="progress bar on stderr even when not a terminal")
    p.add_argument(
        "-v", "--v", dest="verbosity", type=int, default=0, metavar="Level", help="scheduler log verbosity"
    )
    return p


@dataclass
class _Source:
    """Where the scenario came from, and how to find files it names."""

    label: str
    text: str
    base: Path | Traversable


def main(argv: Sequence[str], plugins: Sequence[PluginFactory] = ()) -> int:
    opts = parser().parse_args(list(argv))
    logutil.setup(opts.verbosity)
    if opts.chart:
        from netsched.simulate.chart import ChartUnavailable, require_matplotlib

        try:  # before minutes of simulation, not after
            require_matplotlib()
        except ChartUnavailable as e:
            return _fail(str(e))
    if opts.verbosity < 2:
        # A simulated outage or an unplaceable pod is part of the report, not a log line.
        logging.getLogger().setLevel(logging.ERROR)
    from netsched.app import build_registry

    try:
        registry = build_registry(plugins)
    except RegistryError as e:
        return _fail(str(e))
    what = f"scenario {opts.scenario or 'netsched/examples/' + EXAMPLE_SCENARIO}"
    try:
        src = _scenario_source(opts.scenario)
        scenario = load_scenario(src.text, src.label, seed=opts.seed)
        if not opts.config and scenario.config:
            what = f"configuration named by the scenario's config: in {src.label}"
        else:
            what = "configuration " + (opts.config or EXAMPLE_CONFIG)
        cfg, cfg_label = _primary_config(opts.config, scenario, src, registry)
        compares = []
        for flag in opts.compare_config or ["default"]:
            what = f"--compare-config {flag}"
            compare = _compare_config(flag, cfg, registry)
            if compare is not None:
                compares.append((flag, *compare))
    except ConfigError as e:
        return _config_error(what, e)
    except OSError as e:
        return _fail(f"cannot read the {what}: {e.strerror or e}")
    explain_key = _pod_key(opts.explain)
    if explain_key and explain_key not in {_key(p) for p in scenario.pods}:
        return _fail(f"--explain: no pod {explain_key} among the scenario's pods")

    runs: list[Run] = []
    labels = [cfg_label]
    runs.append(_run(scenario, cfg, registry, "netsched", explain_key, opts))
    taken = {"netsched"}
    for flag, compare_cfg, compare_label in compares:
        label = _run_label(flag, taken)
        runs.append(_run(scenario, compare_cfg, registry, label, "", opts))
        labels.append(compare_label)
    report = Report(
        scenario, runs, labels, lower_bounds(scenario), configured_thresholds(cfg, runs[0].profile)
    )
    status = 0
    if opts.chart:
        status = _chart(report, opts.chart)
    _print(report, runs[0], explain_key, opts)
    return status


def _run_label(flag: str, taken: set[str]) -> str:
    """A --compare-config run's label: "default", else its file's name, else (a name another
    run has) the path as given, else that with a number: each run has a label of its own."""
    candidates = ["default"] if flag == "default" else [Path(flag).name, flag]
    label = next((c for c in candidates if c not in taken), "")
    n = 2
    while not label or label in taken:
        label = f"{flag}#{n}"
        n += 1
    taken.add(label)
    return label


def _run(
    scenario: Scenario,
    cfg: SchedulerConfig,
    registry: Registry,
    label: str,
    explain_key: str,
    opts: argparse.Namespace,
) -> Run:
    bar = ProgressBar(f"simulating {label}") if show_progress(opts.progress) else None
    try:
        return simulate(scenario, cfg, registry, label=label, explain_pod=explain_key, progress=bar)
    finally:
        if bar is not None:
            bar.close()


def _print(report: Report, first: Run, explain_key: str, opts: argparse.Namespace) -> None:
    ex = first.explanation
    if opts.json:
        doc = report.to_dict()
        if explain_key:
            doc["explain"] = None if ex is None else {**ex.to_dict(), "atSeconds": first.explained_at}
            if ex is not None:
                doc["explain"]["placedOn"] = first.placements.get(explain_key, "")
        print(json.dumps(doc, indent=2))
        return
    print(report.text(placements=not opts.no_placements), end="")
    if explain_key:
        print()
        if ex is None:
            print(f"Explain {explain_key}: the pod was never scheduled by {first.label}")
        else:
            placed = first.placements.get(explain_key, "not placed")
            print(f"Explain {explain_key} at simulated second {first.explained_at:.2f} (placed on {placed})")
            print(ex.table())


def _chart(report: Report, path: str) -> int:
    from netsched.simulate.chart import ChartUnavailable, write_chart

    try:
        write_chart(report, path)
    except ChartUnavailable as e:
        print(f"netsched simulate: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"netsched simulate: cannot write --chart {path}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"netsched simulate: wrote chart {path}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- inputs


def _scenario_source(path: str) -> _Source:
    if not path:
        return _Source(f"netsched/examples/{EXAMPLE_SCENARIO}", example_text(EXAMPLE_SCENARIO), examples())
    p = Path(path)
    return _Source(path, p.read_text(encoding="utf-8"), p.parent)


def _primary_config(
    flag: str, scenario: Scenario, src: _Source, registry: Registry
) -> tuple[SchedulerConfig, str]:
    """--config, else the scenario's `config:` (relative to it), else the shipped example config."""
    if flag:
        return load_config(Path(flag), registry, default_scheduler_name="netsched"), flag
    if scenario.config:
        # A relative path is read from the scenario's folder, not the working directory.
        ref = Path(scenario.config)
        target = ref if ref.is_absolute() else src.base.joinpath(scenario.config)
        label = str(ref) if ref.is_absolute() else str(Path(src.label).parent / scenario.config)
        try:
            text = target.read_text("utf-8")
        except OSError as e:
            where = os.path.abspath(label) if isinstance(src.base, Path) else label
            detail = f"{scenario.config!r} (read from the scenario's folder: {where}): {e.strerror or e}"
            raise ConfigError([FieldError("config", "Unreadable file", detail)]) from e
        return load_config(text, registry, default_scheduler_name="netsched", file=label), label
    return example_config(registry), f"netsched/examples/{EXAMPLE_CONFIG}"


def _compare_config(
    flag: str, primary: SchedulerConfig, registry: Registry
) -> tuple[SchedulerConfig, str] | None:
    if flag == "none":
        return None
    if flag == "default":
        return default_profile(primary.profiles[0].scheduler_name, registry), "kube's default plugins"
    return load_config(Path(flag), registry, default_scheduler_name="netsched"), flag


def _pod_key(text: str) -> str:
    if not text:
        return ""
    return text if "/" in text else f"default/{text}"


def _key(raw: dict[str, object]) -> str:
    meta = raw["metadata"]
    assert isinstance(meta, dict)
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _config_error(what: str, e: ConfigError) -> int:
    print(f"netsched simulate: invalid {what}:", file=sys.stderr)
    for err in e.errors:
        print(f"  {err}", file=sys.stderr)
    return 1


def _fail(message: str) -> int:
    print(f"netsched simulate: {message}", file=sys.stderr)
    return 1
