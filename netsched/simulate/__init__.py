"""`netsched simulate`: the real scheduler over an in-memory cluster, in simulated time.

A scenario (nodes, pods, background load, timing) is replayed through
netsched.inmemory.InMemoryCluster with a configuration's real plugins; the
metrics plugins read a simulated Prometheus through the real metrics
pipeline.  The report compares the placement with kube's default profile and
with the least maximum load any placement could reach.

    scenario = load_scenario(Path("scenario.yaml").read_text())
    run = simulate(scenario, cfg, registry)           # placements, loads before/after, polls, queries
    report = Report(scenario, [run], ["config.yaml"], lower_bounds(scenario))
    print(report.text())

Modules: units and compact (values and one-line forms), generators and
background (scenario sections), scenario (the document), model (true load and
the simulated Prometheus), engine (the time loop), report, chart, progress, cli.
"""

from netsched.simulate.engine import Run, simulate
from netsched.simulate.model import LoadModel, Loads
from netsched.simulate.report import Report, Spread, lower_bound, lower_bounds, water_fill
from netsched.simulate.scenario import Scenario, Timing, load_scenario

__all__ = [
    "LoadModel",
    "Loads",
    "Report",
    "Run",
    "Scenario",
    "Spread",
    "Timing",
    "load_scenario",
    "lower_bound",
    "lower_bounds",
    "simulate",
    "water_fill",
]
