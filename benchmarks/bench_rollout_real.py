"""Issue 39's rollouts through `netsched simulate` and on the real thing, side by side.

    python -m benchmarks.bench_rollout_real [--scenario rollout-scenario.yaml ...] [--seed 1] [--sim-only]

For each scenario (default: the recreate and the rolling rollout of examples/rollout-scenario.yaml)
and each profile (kube's default plugins, the load-aware profile examples/config.yaml, deploy/'s
profile with TrafficAffinity examples/traffic-config.yaml), one row from simulate (in process,
Prometheus modelled) and one from a replay (netsched.testing.replay: the fake API server over
HTTP, a real Prometheus scraping placement-coupled series, the whole scheduler; needs Debian's
`prometheus`).  The replays of one scenario run side by side (about two minutes of wall time).
Figures are exact, from the scenario's traffic model, on the placement the rollout left:
cross-node and cross-rack shares of the traffic, the highest NIC (busier direction), the NICs
over 80 %, the service pods on the three hot-link nodes; then each profile's ratio to kube's
default and to the load-aware profile, and |simulate - replay| for deploy/'s profile.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", action="append", help="example scenario file names")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim-only", action="store_true", help="simulate only (no Prometheus needed)")
    a = ap.parse_args()
    for name in a.scenario or SCENARIOS:
        scenario = load_scenario(example_text(name), name)
        rows = {"simulate": simulated(scenario, a.seed)}
        if not a.sim_only:
            rows["real"] = replayed(scenario, a.seed)
        print(f"\n{name} (seed {a.seed}): the placement the rollout left")
        print(
            "| profile | from | cross-node | cross-rack | highest NIC | NICs > 80 % | pods on hot nodes (traffic) |"
        )
        print("|---|---|---|---|---|---|---|")
        for label in PROFILES:
            for source, figs in rows.items():
                print(row(source, label, figs[label]))
        for source, figs in rows.items():
            ours, default, aware = (figs[k].traffic for k in ("deploy", "default", "load-aware"))
            assert ours is not None and default is not None and aware is not None
            print(
                f"{source}: deploy/default cross-node {ours.cross_node / default.cross_node:.2f}x, "
                f"cross-rack {ours.cross_level[RACK] / default.cross_level[RACK]:.2f}x; "
                f"deploy/load-aware cross-node {ours.cross_node / aware.cross_node:.2f}x"
            )
        if "real" in rows:
            s, r = rows["simulate"]["deploy"], rows["real"]["deploy"]
            assert s.traffic is not None and r.traffic is not None
            print(
                f"deploy, |simulate - real|: cross-node {abs(s.traffic.cross_node - r.traffic.cross_node):.3f}, "
                f"highest NIC {abs(s.max_network - r.max_network):.3f}"
            )


if __name__ == "__main__":
    main()
