"""Issue 40's hot links on the real thing: the Rebalancer of a SchedulerApp over HTTP on the fake
API server (evictions through pods/eviction, PodDisruptionBudgets kept by its disruption
controller, the simulator's ReplicaSet controller recreating each evicted pod through the API),
with a real Prometheus scraping node_exporter and cAdvisor series that follow the pods and
their load (15 s scrapes, 1m rate windows, 15 s polls): netsched.testing.replay running
netsched/examples/rebalance-hot-links.yaml and rebalance-dry-run.yaml side by side, the same
files `netsched simulate` and benchmarks/bench_rebalance.py run.

8 nodes (1 Gbit/s, links 25 % busy), 4 Deployments x 10 replicas with budgets of maxUnavailable 1;
at 120 s three pods on each of node-00 and node-01 start sending 235 Mbit/s: those links read
95.5 %.  The figures are exact, from the scenario's model (true load, every bound pod in full),
the moves from the Rebalancer's own round reports.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from netsched.simulate.configs import example_text
from netsched.simulate.moves import EVICTED, Move, figures
from netsched.simulate.scenario import load_scenario
from netsched.simulate.timeline import PodLoadChange
from netsched.testing.prometheus import require_prometheus
from netsched.testing.replay import Replay, ReplayRun, replay_all

pytestmark = pytest.mark.integration

LIMIT = 0.80
FILES = {"acting": "rebalance-hot-links.yaml", "dry run": "rebalance-dry-run.yaml"}
CHANGE = 120.0  # when the links turn hot (the files' timeline)
WITHIN = 60 + 4 * 15 + 40  # the rateWindow + 4 polls + 40 s


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, ReplayRun]]:
    require_prometheus()
    replays = []
    for label, file in FILES.items():
        scenario = load_scenario(example_text(file), file)
        assert next(e.at for e in scenario.timeline if isinstance(e.action, PodLoadChange)) == CHANGE
        # Long enough to see the links settle, and that nothing moves after.
        replays.append(
            Replay(scenario, example_text(scenario.config), label=label, until=CHANGE + WITHIN + 15)
        )
    yield {r.label: r for r in replay_all(replays)}


def fewest_moves(moves: list[Move]) -> int:
    """Per hot node, the fewest pods as large as its largest planned one that bring its reading
    (as the plan read it) to the limit: a lower bound on the evictions that fix it."""
    need: dict[str, int] = {}
    for m in moves:
        share = m.before - m.after
        if share > 0 and m.before > LIMIT:
            need[m.source] = max(need.get(m.source, 0), math.ceil((m.before - LIMIT) / share - 1e-9))
    return sum(need.values())


def test_hot_links_are_relieved_in_time_with_the_fewest_evictions(runs: dict[str, ReplayRun]) -> None:
    run = runs["acting"]
    rb = run.rebalancing
    assert rb is not None
    f = figures(rb, LIMIT)
    evicted = [m for m in rb.moves if m.result == EVICTED]
    assert evicted, rb.moves
    # Every NIC (true load) back under 80 % for good within the window, after being above it.
    assert f.first_over == pytest.approx(CHANGE, abs=1.0), f
    assert f.settled <= CHANGE + WITHIN, f
    assert f.max_network_end <= LIMIT, f
    assert f.evictions <= fewest_moves(evicted) + 1, (f, rb.moves)
    # Safety: no replacement back where its predecessor left, never two pods of a Deployment
    # unavailable because of us, every replacement placed on a node that stayed under 80 %.
    assert f.replacements == f.evictions, rb.moves
    assert f.back_on_source == 0, rb.moves
    assert f.most_unavailable <= 1, rb.unavailable
    assert f.over_target_after == 0, rb.moves
    assert run.unbound == []
    # Each evicted pod has its Event naming the trigger and the figures.
    texts = [e.get("note", "") for e in run.events if e.get("reason") == "Rebalanced"]
    assert len(texts) == f.evictions, texts
    assert all("link (busier direction)" in t and "> 80%" in t and "planned node-" in t for t in texts), texts


def test_dry_run_plans_and_reports_the_same_moves_and_evicts_nothing(runs: dict[str, ReplayRun]) -> None:
    run, acting = runs["dry run"], runs["acting"]
    rb, rb_acting = run.rebalancing, acting.rebalancing
    assert rb is not None and rb_acting is not None
    f = figures(rb, LIMIT)
    assert f.evictions == 0 and run.evicted_or_lost == []
    assert f.planned > 0
    planned = {(m.source, m.trigger) for m in rb.moves}
    assert planned == {(m.source, m.trigger) for m in rb_acting.moves if m.result == EVICTED}
    # Reported as Events on the planned pods.
    assert any(e.get("reason") == "RebalancePlanned" for e in run.events)
