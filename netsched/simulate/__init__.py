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

Modules: units and compact (values and one-line forms), generators,
background, workloads (Deployments), budgets (PodDisruptionBudgets) and
timeline (scenario sections),
scenario (the document), history (the true state over time and its
Prometheus windows), model (true load and the simulated Prometheus),
controllers (the Deployment and ReplicaSet controllers), engine (the time
loop), phases (a timeline's figures), moves (the Rebalancer's moves and their
figures), report, chart, progress, cli.
"""

from netsched.simulate.engine import Run, simulate
from netsched.simulate.model import LoadModel, Loads, PodReading
from netsched.simulate.phases import Phase
from netsched.simulate.report import Report, Spread, lower_bound, lower_bounds, water_fill
from netsched.simulate.scenario import Scenario, Timing, load_scenario
from netsched.simulate.traffic import placement_traffic

__all__ = [
    "LoadModel",
    "Loads",
    "Phase",
    "PodReading",
    "Report",
    "Run",
    "Scenario",
    "Spread",
    "Timing",
    "load_scenario",
    "lower_bound",
    "lower_bounds",
    "placement_traffic",
    "simulate",
    "water_fill",
]
