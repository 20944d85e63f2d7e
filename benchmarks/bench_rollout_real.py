"""Issue 39's rollouts through `netsched simulate` and on the real thing, side by side.

    python -m benchmarks.bench_rollout_real [--scenario rollout-scenario.yaml ...] [--seeds 1,2,3] [--sim-only]

For each scenario (default: the recreate and the rolling rollout of examples/rollout-scenario.yaml)
and each profile (kube's default plugins, the load-aware profile examples/config.yaml, deploy/'s
profile with TrafficAffinity examples/traffic-config.yaml), one row from simulate (in process,
Prometheus modelled) and one from a replay (netsched.testing.replay: the fake API server over
HTTP, a real Prometheus scraping placement-coupled series, the whole scheduler; needs Debian's
`prometheus`).  The replays of one scenario run side by side (about two minutes of wall time).
Figures are exact, from the scenario's traffic model, on the placement the rollout left:
cross-node and cross-rack shares of the traffic, the highest NIC (busier direction), the NICs
over 80 %, the service pods on the three hot-link nodes, per seed (the tie-breaks: both sides
use it) and averaged over the seeds; then deploy/'s profile's ratios to kube's default and to
the load-aware profile, and |simulate - replay| for it, on the averages.
"""

from __future__ import annotations

import argparse

from netsched.app import build_registry
from netsched.config import load_config
from netsched.simulate.configs import DEFAULT_PROFILE, example_text
from netsched.simulate.engine import simulate
from netsched.simulate.phases import Figures
from netsched.simulate.scenario import Scenario, load_scenario
from netsched.testing.replay import Replay, replay_all

PROFILES = {
    "default": DEFAULT_PROFILE.format(name="netsched"),
    "load-aware": example_text("config.yaml"),
    "deploy": example_text("traffic-config.yaml"),
}
SCENARIOS = ("rollout-scenario.yaml", "rollout-rolling-scenario.yaml")
RACK = "example.com/rack"


def simulated(scenario: Scenario, seed: int) -> dict[str, Figures]:
    registry = build_registry()
    out = {}
    for label, text in PROFILES.items():
        run = simulate(scenario, load_config(text, registry), registry, label=label, seed=seed)
        out[label] = run.phases[-1].figures
    return out


def replayed(scenario: Scenario, seed: int) -> dict[str, Figures]:
    runs = replay_all([Replay(scenario, text, label=label, seed=seed) for label, text in PROFILES.items()])
    out = {}
    for run in runs:
        if run.unbound:
            print(f"  ({run.label}: {len(run.unbound)} pods unbound at the end: {', '.join(run.unbound)})")
        out[run.label] = run.phases[-1].figures
    return out


def row(source: str, label: str, f: Figures) -> str:
    t = f.traffic
    assert t is not None
    return (
        f"| {label} | {source} | {t.cross_node:.3f} | {t.cross_level[RACK]:.3f} | {f.max_network:.3f} | "
        f"{'-' if f.over_limit is None else f.over_limit} | {f.on_hot} ({f.traffic_on_hot}) |"
    )


def mean(figs: list[Figures]) -> tuple[float, float, float, float, float]:
    """(cross-node, cross-rack, highest NIC, NICs over the limit, pods on hot nodes) averaged."""
    cols = []
    for f in figs:
        assert f.traffic is not None
        over = float("nan") if f.over_limit is None else float(f.over_limit)
        cols.append((f.traffic.cross_node, f.traffic.cross_level[RACK], f.max_network, over, float(f.on_hot)))
    n = len(cols)
    return tuple(sum(c[i] for c in cols) / n for i in range(5))  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", action="append", help="example scenario file names")
    ap.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    ap.add_argument("--sim-only", action="store_true", help="simulate only (no Prometheus needed)")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    for name in a.scenario or SCENARIOS:
        scenario = load_scenario(example_text(name), name)
        sources = ["simulate"] if a.sim_only else ["simulate", "real"]
        got: dict[tuple[str, str], list[Figures]] = {}
        print(f"\n{name}: the placement the rollout left")
        print(
            "| profile | from | seed | cross-node | cross-rack | highest NIC | NICs > 80 % | pods on hot nodes (traffic) |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for seed in seeds:
            runs = {"simulate": simulated(scenario, seed)}
            if not a.sim_only:
                runs["real"] = replayed(scenario, seed)
            for label in PROFILES:
                for source in sources:
                    f = runs[source][label]
                    got.setdefault((label, source), []).append(f)
                    print(
                        row(source, f"{label} | {seed}", f).replace(
                            f"| {label} | {seed} | {source} |", f"| {label} | {source} | {seed} |"
                        )
                    )
        print(f"\nmean over seeds {a.seeds}:")
        print("| profile | from | cross-node | cross-rack | highest NIC | NICs > 80 % | pods on hot nodes |")
        print("|---|---|---|---|---|---|---|")
        means = {k: mean(v) for k, v in got.items()}
        for (label, source), m in means.items():
            print(f"| {label} | {source} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} | {m[3]:.2f} | {m[4]:.1f} |")
        for source in sources:
            ours, default, aware = (means[(k, source)] for k in ("deploy", "default", "load-aware"))
            print(
                f"{source}: deploy/default cross-node {ours[0] / default[0]:.2f}x, cross-rack {ours[1] / default[1]:.2f}x; "
                f"deploy/load-aware cross-node {ours[0] / aware[0]:.2f}x"
            )
        if not a.sim_only:
            s, r = means[("deploy", "simulate")], means[("deploy", "real")]
            print(
                f"deploy, |simulate - real| of the means: cross-node {abs(s[0] - r[0]):.3f}, highest NIC {abs(s[2] - r[2]):.3f}"
            )


if __name__ == "__main__":
    main()
