"""LoadAware: weighted least-loaded score, target-load packing curve, staleness, fallback, bursts, args."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.snapshot import Snapshot
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, PrometheusArgs, QueryError
from netsched.metrics.queries import POD_USAGE
from netsched.plugins.load_aware import (
    LoadAware,
    LoadAwareArgs,
    ResourceWeight,
    TargetLoadPacking,
    target_load_packing,
)
from netsched.plugins.network_traffic import NetworkTraffic
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_framework, plugin_of
from netsched.testing.metric_rig import MetricRig
from netsched.testing.prometheus import fake_hub

TINY = make_pod("tiny").req(cpu="1m", memory="1").info()  # adds ~nothing: scores show measured load


RigFactory = Callable[..., MetricRig[LoadAware]]


@pytest.fixture
def rig(metric_rig: RigFactory) -> RigFactory:
    """rig(n, args=, pods=): LoadAware over n nodes of 4 cpu / 8Gi, scoring TINY by default."""
    return functools.partial(metric_rig, LoadAware, capacity={"cpu": "4", "memory": "8Gi"}, pod=TINY)


def test_weighted_mean_of_free_fractions(rig: RigFactory) -> None:
    r = rig(3)
    r.load(cpu={"n0": 0.2, "n1": 0.9, "n2": 0.0}, memory={"n0": 0.5, "n1": 0.1, "n2": 1.2})
    assert r.scores() == [65, 50, 50]  # (80 + 50) / 2, (10 + 90) / 2, (100 + 0) / 2
    args = LoadAwareArgs(resources=(ResourceWeight(CPU, 3), ResourceWeight(MEMORY, 1)))
    r = rig(3, args=args)
    r.load(cpu={"n0": 0.2, "n1": 0.9, "n2": 0.0}, memory={"n0": 0.5, "n1": 0.1, "n2": 1.2})
    assert r.scores() == [72, 30, 75]  # (3 x 80 + 50) / 4 = 72.5 -> 72 (round half to even)


def test_incoming_pod_counts_max_of_request_and_limit_times_factor(rig: RigFactory) -> None:
    r = rig(1, args=LoadAwareArgs(resources=(ResourceWeight(CPU, 1),)))
    r.load(cpu={"n0": 0.5})
    pod = make_pod("p").req(cpu="500m").limit(cpu="1").info()
    # u = 0.5 + 1000m x 0.85 / 4000m = 0.7125 -> 100 x (1 - u) = 28.75 -> 29
    assert r.scores(pod) == [29]


@pytest.mark.parametrize(
    ("target", "u", "expected"),
    [
        (40, 0, 40.0),
        (40, 20, 70.0),  # (100-40)*20/40 + 40
        (40, 40, 100.0),
        (40, 70, 20.0),  # 40*(100-70)/(100-40)
        (40, 100, 0.0),
        (40, 120, 0.0),
        (60, 30, 80.0),
        (60, 80, 30.0),
        (10, 5, 55.0),
    ],
)
def test_target_load_packing_curve_by_hand(target: float, u: float, expected: float) -> None:
    assert target_load_packing(np.array([u]), target)[0] == pytest.approx(expected)


def test_target_load_packing_prefers_nodes_near_the_target(rig: RigFactory) -> None:
    args = LoadAwareArgs(resources=(ResourceWeight(CPU, 1),), target_load_packing=TargetLoadPacking(True, 40))
    r = rig(4, args=args)
    r.load(cpu={"n0": 0.0, "n1": 0.3, "n2": 0.7, "n3": 1.1})
    assert r.scores() == [40, 85, 20, 0]
    # Trimaran's curve peaks at the target and drops to X right past it.
    r.load(cpu={"n0": 0.4 - 1e-3, "n1": 0.41, "n2": 0.7, "n3": 1.1})
    assert r.scores()[:2] == [100, 39]


def test_stale_resources_fail_open_per_resource_or_closed(rig: RigFactory) -> None:
    r = rig(3)
    now = r.clock.wall()
    r.load(cpu={"n0": 0.2, "n1": 0.6, "n2": (0.0, now - 300)}, memory={"n0": 0.5, "n1": 0.5, "n2": 0.5})
    assert r.scores() == [65, 45, 55]  # n2 cpu: mean of 80 and 40 = 60; memory 50
    closed = rig(3, args=LoadAwareArgs(prometheus=PrometheusArgs(stale_policy="failClosed")))
    closed.load(cpu={"n0": 0.2, "n1": 0.6}, memory={"n0": 0.5, "n1": 0.5, "n2": 0.5})
    assert closed.scores() == [65, 45, 25]  # n2 cpu scores 0


def test_fallback_uses_requests_from_the_node_table(rig: RigFactory) -> None:
    pods = [
        make_pod("a").node("n0").req(cpu="2", memory="4Gi"),
        make_pod("b").node("n1").req(cpu="1", memory="1Gi"),
    ]
    r = rig(3, pods=pods)
    r.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    r.hub.poll_now()
    assert r.src.in_fallback
    # cpu (requested + 1m) / 4000m, memory (requested + 1 B) / 8Gi
    assert r.scores() == [50, 81, 100]


def test_a_node_without_allocatable_memory_adds_no_share_of_the_pod(metric_rig: RigFactory) -> None:
    """The pod's own share is 0 on a node with no allocatable of the resource (not inf, not
    NaN): measured, only the measured load counts; in fallback, nothing."""
    args = LoadAwareArgs(resources=(ResourceWeight(MEMORY, 1),))
    pod = make_pod("p").req(memory="1Gi").info()
    r = metric_rig(LoadAware, 2, args=args, capacity={"cpu": "4", "memory": "0"}, pod=pod)
    r.load(memory={"n0": 0.25, "n1": 0.5})
    assert r.scores() == [75, 50]
    r.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    r.hub.poll_now()
    assert r.src.in_fallback
    assert r.scores() == [100, 100]


def test_estimates_spread_a_burst_between_two_polls() -> None:
    """200 pods, 50 equal nodes, no poll in between: greedy placement by the scores stays even."""
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    names = [f"n{i}" for i in range(50)]
    snap = Snapshot.of(node_infos([make_node(n).capacity(cpu="4", memory="8Gi") for n in names]))
    fwk = build_framework([LoadAware, NetworkTraffic], metrics=hub, clock=clock, snapshot=snap)
    load_aware = plugin_of(fwk, LoadAware)
    network = plugin_of(fwk, NetworkTraffic)
    src = load_aware.source
    assert network.source is src
    for metric, value in (
        (CPU, 0.3),
        (MEMORY, 0.4),
        (NETWORK_RX, 20e6),
        (NETWORK_TX, 20e6),
        (LINK_SPEED, 125e6),
    ):
        fake.serve(src, metric, dict.fromkeys(names, value))
    hub.poll_now()

    def place(reserve: bool) -> Counter[str]:
        placed: Counter[str] = Counter()
        for i in range(200):
            pod = (
                make_pod(f"burst-{reserve}-{i}")
                .req(cpu="250m", memory="256Mi")
                .annotation("kubernetes.io/egress-bandwidth", "20M")
                .info()
            )
            state = CycleState()
            idx = snap.all_rows
            total = np.zeros(len(idx), dtype=np.int64)
            for p in (load_aware, network):
                total += p.score_nodes(state, pod, snap, idx)
            node = names[int(np.argmax(total))]  # ties go to the first node: the worst case for piling
            placed[node] += 1
            if reserve:
                for p in (load_aware, network):
                    assert p.reserve(state, pod, node).ok
                    assert p.reserve(state, pod, node).ok  # idempotent: counted once
        return placed

    without = place(reserve=False)
    assert without.most_common(1)[0][1] == 200  # no estimation: everything piles on one node
    spread = place(reserve=True)
    assert sum(spread.values()) == 200 and len(src.ledger) == 200
    assert max(spread.values()) <= 6, spread  # fair share is 4; 1.5 x fair share = 6


def test_scores_never_query_prometheus(rig: RigFactory) -> None:
    r = rig(20)
    r.load(cpu={f"n{i}": 0.01 * i for i in range(20)})
    calls = len(r.fake.calls)
    for _ in range(10):
        r.scores()
    assert len(r.fake.calls) == calls


def decode(raw: Any) -> tuple[LoadAwareArgs, list[str]]:
    errs = ErrorList()
    args = LoadAwareArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def test_args_defaults_and_round_trip() -> None:
    args, errs = decode({})
    assert errs == [] and args == LoadAwareArgs.default()
    assert args.resources == (ResourceWeight(CPU, 1), ResourceWeight(MEMORY, 1))
    assert args.target_load_packing == TargetLoadPacking(False, 40)
    again, errs = decode(args.encode())
    assert errs == [] and again == args


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"resources": [{"name": "gpu", "weight": 1}]}, 'args.resources[0].name: Unsupported value: "gpu"'),
        ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, 'args.resources[1].name: Duplicate value: "cpu"'),
        ({"resources": [{"name": "cpu", "weight": -1}]}, "args.resources[0].weight: Invalid value: -1"),
        ({"resources": [{"weight": 1}]}, "args.resources[0].name: Required value"),
        (
            {"resources": []},
            "args.resources: Invalid value: 0: needs at least one resource with a weight above 0",
        ),
        ({"resources": [{"name": "cpu", "wieght": 2}]}, "args.resources[0].wieght: Unknown field"),
        (
            {"targetLoadPacking": {"targetUtilization": 100}},
            "args.targetLoadPacking.targetUtilization: Invalid value",
        ),
        ({"targetLoadPacking": {"enabled": "yes"}}, "args.targetLoadPacking.enabled: Invalid value"),
        ({"prometheus": {"pollIntervalSeconds": 0}}, "args.prometheus.pollIntervalSeconds: Invalid value"),
    ],
)
def test_args_errors(raw: dict[str, Any], expected: str) -> None:
    _, errs = decode(raw)
    assert any(expected in e for e in errs), errs


def test_only_weighted_resources_are_polled(rig: RigFactory) -> None:
    r = rig(1, args=LoadAwareArgs(resources=(ResourceWeight(CPU, 1), ResourceWeight(MEMORY, 0))))
    r.hub.poll_now()
    assert sorted(r.fake.calls) == sorted([r.src.query(CPU), r.src.query(POD_USAGE)])
