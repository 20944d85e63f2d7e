"""LoadAware's kept scores of a repeated pod load give exactly the scores of the long path.

The first pod of a load goes the long path (the carried columns, then the curve, stale rows
filled from the other candidates); once a load repeats, the view keeps the scores it gives
every row and later pods of that load cost a take (`RepeatedLoads`).  These tests score pods
through the public scores() of the plugin under test and of a fresh LoadAware on the same
handle (which has seen no load, so it takes the long path on freshly computed columns) and
require the same integers, while reservations change the estimates between pods, samples
and estimates age out, an allocatable changes, and rows are asked for in any subset and order.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import PodInfo
from netsched.metrics import CPU, MEMORY, MetricsHub, PrometheusArgs
from netsched.metrics.args import EstimationArgs
from netsched.metrics.plugin_api import RepeatedLoads
from netsched.plugins.load_aware import LoadAware, LoadAwareArgs, ResourceWeight, TargetLoadPacking
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_framework, plugin_of
from netsched.testing.prometheus import FakePrometheus, fake_hub

N = 14
NAMES = [f"n{i}" for i in range(N)]
# (cpu, memory) capacity per node: n3 has no cpu, n5 no memory, n9 neither (allocatable 0).
CAPACITY = [("4", "8Gi")] * N
CAPACITY[3], CAPACITY[5], CAPACITY[9] = ("0", "8Gi"), ("4", "0"), ("0", "0")
CAPACITY[7] = ("16", "64Gi")

# (cpu request, memory request, cpu limit or "") of the loads pods come with.
LOADS = [
    ("100m", "128Mi", ""),
    ("500m", "1Gi", "1"),
    ("2", "4Gi", ""),
    ("250m", "256Mi", "2"),
    ("1", "512Mi", ""),
    ("50m", "8Gi", ""),
    ("3", "100Mi", "3500m"),
]


class World:
    """LoadAware over N nodes on a fake Prometheus and clock; `load` serves samples and polls."""

    def __init__(self, args: LoadAwareArgs) -> None:
        self.clock = FakeClock()
        self.hub: MetricsHub
        self.fake: FakePrometheus
        self.hub, self.fake = fake_hub(self.clock)
        nodes = [
            make_node(m).capacity(cpu=c, memory=mem) for m, (c, mem) in zip(NAMES, CAPACITY, strict=True)
        ]
        self.snap = Snapshot.of(node_infos(nodes))
        fwk = build_framework([LoadAware], args={LoadAware.name: args}, metrics=self.hub, clock=self.clock)
        self.args = args
        self.plugin = plugin_of(fwk, LoadAware)
        self.src = self.plugin.source
        self._pods = 0

    def load(self, rng: random.Random) -> None:
        """Samples for every node: a few stale (CPU of n1, memory of n6), a few missing (CPU of
        n11), some about to age out (40-55 s old; maxSampleAge is 60 s)."""
        now = self.clock.wall()
        cpu: dict[str, Any] = {}
        mem: dict[str, Any] = {}
        for m in NAMES:
            age = rng.choice([0.0, 0.0, 10.0, 40.0 + 15 * rng.random()])
            cpu[m] = (rng.choice([0.0, 0.1, 0.35, 0.4, 0.62, 0.95, 1.3]), now - age)
            mem[m] = (rng.random() * 1.1, now - rng.choice([0.0, 5.0, 50.0]))
        cpu["n1"] = (0.2, now - 300)
        mem["n6"] = (0.3, now - 300)
        del cpu["n11"]
        for metric, values in ((CPU, cpu), (MEMORY, mem)):
            if metric in self.plugin.weights:  # only what the plugin polls
                self.fake.serve(self.src, metric, values)
        self.hub.poll_now()

    def pod(self, load: int) -> PodInfo:
        self._pods += 1
        cpu, mem, limit = LOADS[load]
        b = make_pod(f"p{self._pods}").req(cpu=cpu, memory=mem)
        return (b.limit(cpu=limit) if limit else b).info()

    def expected(self, pod: PodInfo, idx: np.ndarray) -> list[int]:
        """The long path on columns computed now: a LoadAware that has seen no load yet."""
        fresh = LoadAware(self.args, self.plugin.handle)
        try:
            return fresh.candidate_scores(pod, self.snap, idx).tolist()
        finally:
            self.src.view(self.snap).forget(fresh)  # its carried columns: keep the view small

    def rows(self, rng: random.Random) -> np.ndarray:
        """Rows a cycle asks for: all, a subset in any order, or the fresh rows only."""
        kind = rng.random()
        if kind < 0.2:
            return self.snap.all_rows
        # Half the subsets: rows with a fresh sample of every resource (the kept path's case).
        pool = [r for r in range(N) if r not in (1, 6, 11)] if kind < 0.5 else list(range(N))
        return np.asarray(rng.sample(pool, rng.randrange(1, len(pool) + 1)), dtype=np.int64)


def long_path_calls(plugin: LoadAware) -> list[int]:
    """Counts (in a list, one entry per call) the plugin's long-path scorings: _scores without
    mark_stale (the kept path computes with mark_stale=True, or takes)."""
    calls: list[int] = []
    scores = plugin._scores

    def counted(amounts: Any, carried: Any, mark_stale: bool = False) -> Any:
        if not mark_stale:
            calls.append(1)
        return scores(amounts, carried, mark_stale)

    plugin._scores = counted  # type: ignore[method-assign]
    return calls


ARGS = [
    pytest.param(LoadAwareArgs(), id="cpu+memory failOpen"),
    pytest.param(
        LoadAwareArgs(
            resources=(ResourceWeight(CPU, 3), ResourceWeight(MEMORY, 1)),
            prometheus=PrometheusArgs(stale_policy="failClosed"),
        ),
        id="cpu3+memory failClosed",
    ),
    pytest.param(
        LoadAwareArgs(target_load_packing=TargetLoadPacking(True, 40)), id="targetLoadPacking failOpen"
    ),
    pytest.param(
        LoadAwareArgs(
            resources=(ResourceWeight(CPU, 1),),
            target_load_packing=TargetLoadPacking(True, 60),
            prometheus=PrometheusArgs(stale_policy="failClosed"),
        ),
        id="cpu targetLoadPacking failClosed",
    ),
    pytest.param(LoadAwareArgs(resources=(ResourceWeight(MEMORY, 2),)), id="memory failOpen"),
]


def with_lifetime(args: LoadAwareArgs, seconds: float) -> LoadAwareArgs:
    """`args` with estimates living `seconds` (so some expire between pods)."""
    prom = dataclasses.replace(args.prometheus, estimation=EstimationArgs(max_lifetime_seconds=seconds))
    return dataclasses.replace(args, prometheus=prom)


@pytest.mark.parametrize("args", ARGS)
@pytest.mark.parametrize("seed", [1, 2])
def test_kept_scores_equal_the_long_path_through_a_random_burst(args: LoadAwareArgs, seed: int) -> None:
    rng = random.Random(seed)
    w = World(with_lifetime(args, 25.0))
    w.load(rng)
    long_calls = long_path_calls(w.plugin)
    reserved: list[tuple[PodInfo, str]] = []
    kept_hits = 0
    for step in range(160):
        pod = w.pod(rng.choice([0, 0, 1, 1, 2, 3, 4, 5, 6]) if seed == 1 else rng.randrange(len(LOADS)))
        idx = w.rows(rng)
        before = len(long_calls)
        got = w.plugin.candidate_scores(pod, w.snap, idx).tolist()
        kept_hits += len(long_calls) == before
        assert got == w.expected(pod, idx), f"step {step}: rows {idx.tolist()}"
        assert got == w.plugin.candidate_scores(pod, w.snap, idx).tolist()  # asked again, same answer
        event = rng.random()
        if event < 0.55:  # the pod is reserved on a node: that row's estimates change
            node = NAMES[rng.randrange(N)]
            assert w.plugin.reserve(CycleState(), pod, node).ok
            reserved.append((pod, node))
        elif event < 0.65 and reserved:
            old, node = reserved.pop(rng.randrange(len(reserved)))
            w.plugin.unreserve(CycleState(), old, node)
        elif event < 0.75:
            w.clock.step(rng.choice([1.0, 4.0, 9.0]))  # samples age out, estimates expire
        elif event < 0.78:
            w.load(rng)  # a poll: a new view
        elif event < 0.81:
            row = rng.randrange(N)
            old_node = w.snap.nodes[row]
            cpu = rng.choice([0, 2000, 8000])
            alloc = dict(old_node.allocatable, cpu=cpu)
            w.snap.set_node(row, dataclasses.replace(old_node, allocatable=alloc))
    assert kept_hits >= 20, kept_hits  # the kept path was taken (not only the long one)
    assert len(long_calls) >= 20


def test_reservations_between_two_pods_of_a_load_change_the_kept_scores() -> None:
    """The plain case, by hand: a load repeats, a reservation on a row lowers that row only."""
    w = World(LoadAwareArgs(resources=(ResourceWeight(CPU, 1),)))
    now = w.clock.wall()
    w.fake.serve(w.src, CPU, {m: (0.25, now) for m in NAMES})
    w.hub.poll_now()
    idx = np.array([8, 2, 4], dtype=np.int64)
    calls = long_path_calls(w.plugin)
    first = w.plugin.candidate_scores(w.pod(4), w.snap, idx).tolist()  # 1 cpu x 0.85 / 4 cpu = 0.2125
    assert first == [54, 54, 54] and len(calls) == 1  # 100 x (1 - 0.4625) = 53.75
    second = w.plugin.candidate_scores(w.pod(4), w.snap, idx).tolist()
    assert second == first and len(calls) == 1  # kept
    assert w.plugin.reserve(CycleState(), w.pod(4), "n2").ok
    third = w.plugin.candidate_scores(w.pod(4), w.snap, idx).tolist()
    # n2: 0.25 + 2 x 0.2125 = 0.675 -> 100 x (1 - u) = 32.5 -> 32 (round half to even)
    assert third == [54, 32, 54] and len(calls) == 1
    assert third == w.expected(w.pod(4), idx)


def full_passes(plugin: LoadAware) -> list[int]:
    """Counts (one entry per call) the kept-load computes over every row: what keeping a
    load costs (its recomputations on a few marked rows are not counted)."""
    calls: list[int] = []
    own = plugin._own_scores

    def counted(snapshot: Any, amounts: Any, rows: Any) -> Any:
        if len(rows) == N:
            calls.append(1)
        return own(snapshot, amounts, rows)

    plugin._own_scores = counted  # type: ignore[method-assign]
    return calls


def test_more_loads_than_kept_take_turns_without_a_pass_over_every_row_per_pod() -> None:
    """The first RepeatedLoads.KEEP loads seen twice in a view are kept; a load after them is never
    kept in that view (no displacement: loads taking turns used to pay a pass over every row
    on each promotion), and every load scores as the long path; a new poll starts afresh."""
    rng = random.Random(7)
    w = World(LoadAwareArgs(target_load_packing=TargetLoadPacking(True, 40)))
    w.load(rng)
    idx = np.array([12, 0, 7, 3, 9, 13, 5], dtype=np.int64)  # fresh rows, two with no allocatable
    keep = RepeatedLoads.KEEP
    assert keep + 2 <= len(LOADS)
    long_path = long_path_calls(w.plugin)
    passes = full_passes(w.plugin)

    def score(load: int) -> None:
        pod = w.pod(load)
        assert w.plugin.candidate_scores(pod, w.snap, idx).tolist() == w.expected(pod, idx), f"load {load}"

    for _ in range(5):  # keep + 2 loads taking turns
        for load in range(keep + 2):
            score(load)
        assert w.plugin.reserve(CycleState(), w.pod(rng.randrange(keep + 2)), NAMES[rng.randrange(N)]).ok
    assert len(passes) == keep  # one pass per kept load, then only marked rows
    # The first round sees each load once (long path); from the second, the last two loads
    # take the long path on every pod while the first `keep` are kept.
    assert len(long_path) == (keep + 2) + 4 * 2
    w.load(rng)  # a new poll: a new view, its own kept loads
    for load in (keep + 1, keep + 1):
        score(load)
    assert len(passes) == keep + 1


def test_the_kept_path_falls_back_to_the_long_path_for_stale_candidates() -> None:
    """A load's kept scores mark a row without a fresh sample -1; a pod whose candidates
    include one is scored on the long path (its stale rows filled from the others)."""
    for policy in ("failOpen", "failClosed"):
        w = World(LoadAwareArgs(prometheus=PrometheusArgs(stale_policy=policy)))
        w.load(random.Random(3))
        calls = long_path_calls(w.plugin)
        with_stale = np.array([2, 1, 4, 11, 6], dtype=np.int64)
        for _ in range(3):
            pod = w.pod(1)
            got = w.plugin.candidate_scores(pod, w.snap, with_stale).tolist()
            assert got == w.expected(pod, with_stale) and min(got) >= 0
        assert len(calls) == 3


def test_two_load_aware_plugins_on_one_view_keep_their_own_scores() -> None:
    """Two profiles' LoadAware (other weights, the same prometheus block) share the source and
    its view: each one's kept loads are its own, and both see every reservation."""
    rng = random.Random(11)
    w = World(LoadAwareArgs())
    other_args = LoadAwareArgs(
        resources=(ResourceWeight(CPU, 1), ResourceWeight(MEMORY, 4)),
        target_load_packing=TargetLoadPacking(True, 50),
    )
    other = LoadAware(other_args, w.plugin.handle)
    assert other.source is w.src
    w.load(rng)
    for step in range(120):
        load = rng.choice([0, 1, 2])
        idx = w.rows(rng)
        for plugin, args in ((w.plugin, w.args), (other, other_args)):
            pod = w.pod(load)
            fresh = LoadAware(args, plugin.handle)
            want = fresh.candidate_scores(pod, w.snap, idx).tolist()
            w.src.view(w.snap).forget(fresh)
            assert plugin.candidate_scores(pod, w.snap, idx).tolist() == want, f"step {step} {plugin.args}"
        if rng.random() < 0.6:
            assert w.plugin.reserve(CycleState(), w.pod(load), NAMES[rng.randrange(N)]).ok
        elif rng.random() < 0.3:
            w.clock.step(2.0)
