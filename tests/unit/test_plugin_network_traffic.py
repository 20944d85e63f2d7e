"""NetworkTraffic: formula, no division by zero, staleness policies, estimation, fallback, args."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.metrics import LINK_SPEED, NETWORK_RX, NETWORK_TX, MetricsHub, PrometheusArgs, QueryError
from netsched.plugins.coscheduling import Coscheduling
from netsched.plugins.gang_topology import GangTopology
from netsched.plugins.load_aware import LoadAware
from netsched.plugins.load_threshold import LoadThreshold, LoadThresholdArgs
from netsched.plugins.network_traffic import NetworkTraffic, NetworkTrafficArgs
from netsched.testing.builders import make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_framework, build_plugin
from netsched.testing.metric_rig import MetricRig
from netsched.testing.prometheus import FakePrometheus

GBIT = 125_000_000.0  # bytes/s


RigFactory = Callable[..., MetricRig[NetworkTraffic]]


@pytest.fixture
def rig(metric_rig: RigFactory) -> RigFactory:
    """rig(n, args=, pods=): NetworkTraffic over n nodes."""
    return functools.partial(metric_rig, NetworkTraffic)


def load(
    r: MetricRig[NetworkTraffic],
    rx: dict[str, Any],
    tx: dict[str, Any] | None = None,
    speed: dict[str, Any] | None = None,
) -> None:
    """Serve rx (tx idle on the same nodes unless given, no link speeds unless given) and poll."""
    r.load(
        **{
            NETWORK_RX: rx,
            NETWORK_TX: tx if tx is not None else dict.fromkeys(rx, 0.0),
            LINK_SPEED: speed or {},
        },
    )


def test_busier_direction_over_link_speed(rig: RigFactory) -> None:
    r = rig(4)
    load(
        r,
        rx={"n0": 10e6, "n1": 0.0, "n2": GBIT, "n3": 2 * GBIT},
        tx={"n0": 50e6, "n1": 0.0, "n2": 0.0, "n3": 0.0},
        speed=dict.fromkeys(["n0", "n1", "n2", "n3"], GBIT),
    )
    # n0: max(10, 50) MB/s of 125 MB/s = 40 % -> 60; full or over-full links -> 0.
    assert r.scores() == [60, 100, 0, 0]


def test_full_duplex_traffic_is_not_double_counted(rig: RigFactory) -> None:
    r = rig(2)
    load(
        r,
        rx={"n0": 0.6 * GBIT, "n1": 0.7 * GBIT},
        tx={"n0": 0.6 * GBIT, "n1": 0.0},
        speed={"n0": GBIT, "n1": GBIT},
    )
    assert r.scores() == [40, 30]  # 60 % each way beats 70 % one way


def test_relative_scores_without_link_speed(rig: RigFactory) -> None:
    r = rig(3)
    load(r, rx={"n0": 0.0, "n1": 10e6, "n2": 20e6})
    assert r.scores() == [100, 50, 0]
    # Scaling is over the candidate nodes of this pod only.
    assert r.scores(idx=np.array([0, 1])) == [100, 0]


@pytest.mark.parametrize("speed", [{}, {"n0": GBIT, "n1": GBIT, "n2": GBIT}])
@pytest.mark.parametrize("value", [0.0, 5e6])
def test_all_equal_loads_give_equal_scores(speed: dict[str, float], value: float, rig: RigFactory) -> None:
    r = rig(3)
    load(r, rx=dict.fromkeys(["n0", "n1", "n2"], value), speed=speed)
    s = r.scores()
    assert len(set(s)) == 1 and 0 <= s[0] <= 100


def test_stale_and_missing_nodes_fail_open_to_the_mean(rig: RigFactory) -> None:
    r = rig(4)
    now = r.clock.wall()
    load(
        r,
        rx={"n0": (0.0, now), "n1": (50e6, now), "n2": (0.0, now - 61)},  # n2 too old, n3 missing
        speed=dict.fromkeys(["n0", "n1", "n2", "n3"], GBIT),
    )
    assert r.scores() == [100, 60, 80, 80]


def test_stale_and_missing_nodes_fail_closed_to_zero(rig: RigFactory) -> None:
    args = NetworkTrafficArgs(PrometheusArgs(stale_policy="failClosed"))
    r = rig(3, args=args)
    load(r, rx={"n0": 0.0, "n1": 50e6}, speed=dict.fromkeys(["n0", "n1", "n2"], GBIT))
    assert r.scores() == [100, 60, 0]


def test_reserved_pods_count_until_metrics_cover_them(rig: RigFactory) -> None:
    r = rig(2)
    load(r, rx={"n0": 0.0, "n1": 0.0}, speed={"n0": GBIT, "n1": GBIT})
    pod = make_pod("big").annotation("kubernetes.io/egress-bandwidth", "500M").info()  # 62.5 MB/s
    state = CycleState()
    assert r.plugin.reserve(state, pod, "n0").ok
    assert r.scores() == [50, 100]
    r.plugin.unreserve(state, pod, "n0")
    assert r.scores() == [100, 100]


def test_fallback_scores_by_bandwidth_annotations_of_pods_on_the_node(rig: RigFactory) -> None:
    pods = [
        make_pod("a").node("n0").annotation("kubernetes.io/ingress-bandwidth", "400M"),
        make_pod("b").node("n1").annotation("kubernetes.io/ingress-bandwidth", "100M"),
    ]
    r = rig(3, pods=pods)
    load(r, rx=dict.fromkeys(["n0", "n1", "n2"], 0.0), speed=dict.fromkeys(["n0", "n1", "n2"], GBIT))
    r.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    r.hub.poll_now()
    assert r.src.in_fallback
    # Link speeds stay known from before the outage: 50 MB/s, 12.5 MB/s, nothing.
    assert r.scores() == [60, 90, 100]
    # Requested bandwidth follows node changes without recomputing unchanged nodes.
    r.snap.nodes[2].add_pod(
        make_pod("c").node("n2").annotation("kubernetes.io/ingress-bandwidth", "1G").info()
    )
    assert r.scores() == [60, 90, 0]


def test_fallback_before_the_first_poll_does_not_query(rig: RigFactory) -> None:
    r = rig(2)
    assert r.src.in_fallback  # no poll yet: score by requests (no pods anywhere: all equal)
    assert r.scores() == [100, 100]
    assert r.fake.calls == []


def test_scores_never_query_prometheus(rig: RigFactory) -> None:
    r = rig(50)
    load(r, rx={f"n{i}": float(i) for i in range(50)}, speed={})
    calls = len(r.fake.calls)
    for i in range(20):
        r.scores(make_pod(f"p{i}").info())
    assert len(r.fake.calls) == calls


def test_args_decode_errors_and_round_trip() -> None:
    errs = ErrorList()
    args = NetworkTrafficArgs.decode(Fields({"prometheus": {"stalePolicy": "x"}, "weight": 3}, "args", errs))
    assert {e.path for e in errs} == {"args.prometheus.stalePolicy", "args.weight"}
    assert isinstance(args, NetworkTrafficArgs)
    errs = ErrorList()
    again = NetworkTrafficArgs.decode(Fields(NetworkTrafficArgs.default().encode(), "args", errs))
    assert not errs and again == NetworkTrafficArgs.default()


def test_needs_the_hub() -> None:
    with pytest.raises(ValueError, match="handle.metrics is None"):
        build_framework([NetworkTraffic])


def test_plugins_share_one_source_per_args() -> None:
    hub = MetricsHub(clock=FakeClock(), client_factory=FakePrometheus().factory)
    a = build_plugin(NetworkTraffic, NetworkTrafficArgs.default(), metrics=hub)
    b = build_plugin(NetworkTraffic, NetworkTrafficArgs.default(), metrics=hub)
    assert a.source is b.source and len(hub.pollers) == 1


def test_a_profile_calls_one_reserve_per_shared_source() -> None:
    """NetworkTraffic, LoadAware and LoadThreshold with one prometheus block record a pod in one
    estimator: the first of them is the one Reserve and Unreserve call.  GangTopology, whose
    reserve() does more, and a plugin of another source are called too."""
    hub = MetricsHub(clock=FakeClock(), client_factory=FakePrometheus().factory)
    other = PrometheusArgs(prometheus_address="http://other:9090")
    fwk = build_framework(
        [NetworkTraffic, LoadAware, LoadThreshold, GangTopology, Coscheduling],
        args={"LoadThreshold": LoadThresholdArgs(prometheus=other)},
        metrics=hub,
    )
    names = [p.name for p in fwk.reserve_plugins]
    assert names == ["NetworkTraffic", "LoadThreshold", "GangTopology", "Coscheduling"]
    nt, la = fwk.plugins["NetworkTraffic"], fwk.plugins["LoadAware"]
    assert isinstance(nt, NetworkTraffic) and isinstance(la, LoadAware) and nt.source is la.source
    pod = make_pod("p").req(cpu="1").info()
    assert fwk.run_reserve(fwk.new_cycle_state(), pod, "n0").ok
    assert nt.source.ledger.holds(pod.uid, "n0")
    fwk.run_unreserve(fwk.new_cycle_state(), pod, "n0")
    assert not nt.source.ledger.holds(pod.uid, "n0")


def test_a_subclass_whose_reserve_does_more_is_always_called() -> None:
    """A LoadThreshold (or metric score plugin) subclass with its own reserve() shares no
    reservation: the profile calls it beside the plugin its source's reservation goes to."""
    calls: list[str] = []

    class CountingThreshold(LoadThreshold):
        name = "CountingThreshold"

        def reserve(self, state: CycleState, pod: Any, node_name: str) -> Any:
            calls.append(node_name)
            return super().reserve(state, pod, node_name)

    hub = MetricsHub(clock=FakeClock(), client_factory=FakePrometheus().factory)
    fwk = build_framework([NetworkTraffic, CountingThreshold], metrics=hub)
    nt, ct = fwk.plugins["NetworkTraffic"], fwk.plugins["CountingThreshold"]
    assert isinstance(nt, NetworkTraffic) and isinstance(ct, CountingThreshold) and nt.source is ct.source
    assert ct.shared_reservation() is None
    assert [p.name for p in fwk.reserve_plugins] == ["NetworkTraffic", "CountingThreshold"]
    assert fwk.run_reserve(fwk.new_cycle_state(), make_pod("p").info(), "n0").ok
    assert calls == ["n0"]
