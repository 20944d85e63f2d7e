"""LoadThreshold: limits, reasons, staleness policies, fallback, estimates, batch vs per-node, args."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from netsched.framework import Diagnosis
from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.status import Code
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, PrometheusArgs, QueryError
from netsched.metrics.queries import POD_USAGE
from netsched.plugins.load_threshold import LoadThreshold, LoadThresholdArgs
from netsched.testing.builders import make_node, make_pod
from netsched.testing.metric_rig import MetricRig

GBIT = 125_000_000.0
POD = make_pod("p").info()
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


RigFactory = Callable[..., MetricRig[LoadThreshold]]

# Unless a test says otherwise: idle 1 Gb/s links, cpu and memory at 10 %.
IDLE = {NETWORK_RX: 0.0, NETWORK_TX: 0.0, LINK_SPEED: GBIT, CPU: 0.1, MEMORY: 0.1}


@pytest.fixture
def rig(metric_rig: RigFactory) -> RigFactory:
    """rig(n, args=, pods=): LoadThreshold over n nodes of 4 cpu / 8Gi, serving IDLE by default."""
    return functools.partial(
        metric_rig, LoadThreshold, capacity={"cpu": "4", "memory": "8Gi"}, defaults=IDLE, pod=POD
    )


def test_default_limits_and_reasons(rig: RigFactory) -> None:
    r = rig(5)
    r.load(
        **{
            # The pod (no requests: kube's 100m / 200Mi, 1 MiB/s each way) adds 0.84 % of a 1 Gb/s
            # link, 2.1 % of 4 cpu (85m), 1.7 % of 8Gi (140Mi).
            NETWORK_TX: {"n0": 0.80 * GBIT, "n1": 0.79 * GBIT, "n2": 0.0, "n3": 0.0, "n4": 0.9 * GBIT},
            CPU: {"n0": 0.1, "n1": 0.1, "n2": 0.63, "n3": 0.62, "n4": 0.7},
            MEMORY: {"n0": 0.1, "n1": 0.1, "n2": 0.1, "n3": 0.94, "n4": 0.1},
        }
    )
    assert r.verdicts(code=UNRES) == {
        "n0": ("node(s) had network utilisation above 80%",),
        "n1": "ok",
        "n2": ("node(s) had cpu utilisation above 65%",),
        "n3": ("node(s) had memory utilisation above 95%",),
        "n4": ("node(s) had network utilisation above 80%", "node(s) had cpu utilisation above 65%"),
    }


def test_reasons_read_like_kube_in_the_fit_error(rig: RigFactory) -> None:
    r = rig(3)
    r.load(**{CPU: {"n0": 0.9, "n1": 0.9, "n2": 0.1}})
    d = Diagnosis(3, np.zeros(3, dtype=np.int8))
    for rej in r.plugin.filter_nodes(CycleState(), POD, r.snap, r.snap.all_rows):
        for reason in rej.reasons:
            d.reasons[reason] = d.reasons.get(reason, 0) + int(rej.mask.sum())
    assert d.message() == "0/3 nodes are available: 2 node(s) had cpu utilisation above 65%."


def test_a_batch_gets_one_rejection_per_reason_set_in_bit_order(rig: RigFactory) -> None:
    """One reason set (the usual case) skips the sort; mixed ones keep np.unique's order."""
    r = rig(4)
    r.load(**{CPU: {"n0": 0.9, "n1": 0.1, "n2": 0.9, "n3": 0.1}})
    rows = np.array([3, 2, 1, 0], dtype=np.int64)
    (only,) = r.plugin.filter_nodes(CycleState(), POD, r.snap, rows)
    assert only.mask.tolist() == [False, True, False, True]
    assert only.reasons == ("node(s) had cpu utilisation above 65%",)
    r.load(**{NETWORK_TX: {"n1": 0.9 * GBIT, "n2": 0.9 * GBIT}, CPU: {"n0": 0.9, "n2": 0.9}})
    got = r.plugin.filter_nodes(CycleState(), POD, r.snap, rows)
    assert [(rej.mask.tolist(), rej.reasons) for rej in got] == [
        ([False, False, True, False], ("node(s) had network utilisation above 80%",)),
        ([False, False, False, True], ("node(s) had cpu utilisation above 65%",)),
        (
            [False, True, False, False],
            ("node(s) had network utilisation above 80%", "node(s) had cpu utilisation above 65%"),
        ),
    ]


def test_zero_disables_a_check_and_its_queries(rig: RigFactory) -> None:
    args = LoadThresholdArgs(
        network_utilization_percent=0, memory_utilization_percent=0, cpu_utilization_percent=50.5
    )
    r = rig(2, args=args)
    r.load(**{CPU: {"n0": 0.49, "n1": 0.48}})  # with the pod's 2.1 %: 51.1 % and 50.1 %
    assert r.verdicts(code=UNRES) == {"n0": ("node(s) had cpu utilisation above 50.5%",), "n1": "ok"}
    assert sorted(r.fake.calls) == sorted([r.src.query(CPU), r.src.query(POD_USAGE)])


def test_no_link_speed_means_no_network_check(rig: RigFactory) -> None:
    r = rig(2)
    r.load(**{NETWORK_RX: {"n0": 10 * GBIT, "n1": 10 * GBIT}, LINK_SPEED: {"n0": GBIT}})
    assert r.verdicts(code=UNRES) == {"n0": ("node(s) had network utilisation above 80%",), "n1": "ok"}


def test_stale_nodes_pass_when_failing_open(rig: RigFactory) -> None:
    r = rig(2)
    r.load(**{CPU: {"n0": (0.99, r.clock.wall() - 120)}, MEMORY: {"n0": 0.1}})  # n1 has no cpu/memory
    assert r.verdicts(code=UNRES) == {"n0": "ok", "n1": "ok"}


def test_stale_nodes_are_rejected_when_failing_closed(rig: RigFactory) -> None:
    args = LoadThresholdArgs(prometheus=PrometheusArgs(stale_policy="failClosed"))
    r = rig(3, args=args)
    r.load(
        **{CPU: {"n0": (0.1, r.clock.wall() - 120), "n1": 0.1, "n2": 0.1}, NETWORK_RX: {"n0": 0.0, "n1": 0.0}}
    )
    assert r.verdicts(code=UNRES) == {
        "n0": ("node(s) had no recent cpu metrics",),
        "n1": "ok",
        "n2": ("node(s) had no recent network metrics",),
    }


def test_fallback_passes_everything_or_rejects_everything(rig: RigFactory) -> None:
    r = rig(2)
    r.load(**{CPU: {"n0": 0.99, "n1": 0.99}})
    assert set(r.verdicts(code=UNRES).values()) == {("node(s) had cpu utilisation above 65%",)}
    r.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    r.hub.poll_now()
    assert r.verdicts(code=UNRES) == {"n0": "ok", "n1": "ok"}  # failOpen: no measurements, no filtering
    closed = rig(1, args=LoadThresholdArgs(prometheus=PrometheusArgs(stale_policy="failClosed")))
    closed.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    closed.hub.poll_now()
    assert closed.verdicts(code=UNRES) == {
        "n0": (
            "node(s) had no recent network metrics",
            "node(s) had no recent cpu metrics",
            "node(s) had no recent memory metrics",
        )
    }


def test_reserved_pods_push_a_node_over_the_limit_before_metrics_catch_up(rig: RigFactory) -> None:
    r = rig(2, args=LoadThresholdArgs(network_utilization_percent=0, memory_utilization_percent=0))
    r.load(**{CPU: {"n0": 0.6, "n1": 0.6}})
    assert r.verdicts(code=UNRES) == {"n0": "ok", "n1": "ok"}
    pod = make_pod("big").req(cpu="500m").info()  # 500m x 0.85 / 4000m = 10.6 %
    assert r.plugin.reserve(CycleState(), pod, "n0").ok
    assert r.verdicts(code=UNRES)["n0"] == ("node(s) had cpu utilisation above 65%",)
    r.plugin.unreserve(CycleState(), pod, "n0")
    assert r.verdicts(code=UNRES)["n0"] == "ok"


def test_a_reservation_adding_a_second_reason_set_is_told_apart_in_the_batch(rig: RigFactory) -> None:
    """The batch names one reason set without looking at each row while the rows have had one;
    a reservation that brings a second must be told apart (filter() per node checks it)."""
    r = rig(3, args=LoadThresholdArgs(network_utilization_percent=0))
    r.load(**{CPU: {"n0": 0.9, "n1": 0.1, "n2": 0.1}, MEMORY: {"n0": 0.1, "n1": 0.92, "n2": 0.1}})
    cpu, memory = "node(s) had cpu utilisation above 65%", "node(s) had memory utilisation above 95%"
    assert r.verdicts(code=UNRES) == {"n0": (cpu,), "n1": "ok", "n2": "ok"}
    pod = make_pod("big").req(memory="1Gi").info()  # 1Gi x 0.70 / 8Gi = 8.75 %: n1 at 100.75 %
    assert r.plugin.reserve(CycleState(), pod, "n1").ok
    assert r.verdicts(code=UNRES) == {"n0": (cpu,), "n1": (memory,), "n2": "ok"}


@pytest.mark.parametrize(
    ("pod", "verdict"),
    [
        (make_pod("small").req(cpu="100m").info(), "ok"),  # 60 % + 2.1 %
        (make_pod("big").req(cpu="1").info(), ("node(s) had cpu utilisation above 65%",)),  # + 21 %
        (make_pod("egress").annotation("kubernetes.io/egress-bandwidth", "200M").info(), "ok"),
    ],
)
def test_a_node_stays_under_its_limit_with_the_pod(rig: RigFactory, pod: Any, verdict: Any) -> None:
    r = rig(1)
    r.load(**{CPU: {"n0": 0.6}, NETWORK_TX: {"n0": 0.5 * GBIT}})
    assert r.verdicts(pod=pod, code=UNRES) == {"n0": verdict}


def test_the_pod_adds_its_link_load_each_way(rig: RigFactory) -> None:
    # 65 % transmitted, idle receive: a pod receiving 25 MB/s fits (receive at 20 %), one
    # transmitting it does not (transmit at 65 % + 20 %).
    r = rig(1)
    r.load(**{NETWORK_TX: {"n0": 0.65 * GBIT}})
    inbound = make_pod("in").annotation("kubernetes.io/ingress-bandwidth", "200M").info()
    outbound = make_pod("out").annotation("kubernetes.io/egress-bandwidth", "200M").info()
    assert r.verdicts(pod=inbound, code=UNRES) == {"n0": "ok"}
    assert r.verdicts(pod=outbound, code=UNRES) == {"n0": ("node(s) had network utilisation above 80%",)}


def test_filter_of_a_node_outside_the_snapshot(rig: RigFactory) -> None:
    r = rig(1, args=LoadThresholdArgs(prometheus=PrometheusArgs(stale_policy="failClosed")))
    r.load()
    st = r.plugin.filter(CycleState(), POD, make_node("elsewhere").info())
    assert not st.ok and "node(s) had no recent cpu metrics" in st.reasons


def decode(raw: Any) -> tuple[LoadThresholdArgs, list[str]]:
    errs = ErrorList()
    args = LoadThresholdArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def test_args_defaults_and_round_trip() -> None:
    args, errs = decode({})
    assert errs == []
    assert (
        args.network_utilization_percent,
        args.cpu_utilization_percent,
        args.memory_utilization_percent,
    ) == (80, 65, 95)
    again, errs = decode(args.encode())
    assert errs == [] and again == args


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"cpuUtilizationPercent": 0.65}, None),  # a fraction is accepted as 0.65 %: legal, if odd
        (
            {"cpuUtilizationPercent": 165},
            "args.cpuUtilizationPercent: Invalid value: 165.0: must be less than or equal to 100",
        ),
        ({"memoryUtilizationPercent": -1}, "args.memoryUtilizationPercent: Invalid value"),
        (
            {"networkUtilizationPercent": "80%"},
            'args.networkUtilizationPercent: Invalid value: "80%": must be a number',
        ),
        (
            {"networkUtilizationPercent": 0, "cpuUtilizationPercent": 0, "memoryUtilizationPercent": 0},
            "args: Invalid value: 0: every threshold is 0",
        ),
        ({"cpu": 65}, "args.cpu: Unknown field"),
        ({"prometheus": {"stalePolicy": "closed"}}, "args.prometheus.stalePolicy: Unsupported value"),
    ],
)
def test_args_errors(raw: dict[str, Any], expected: str | None) -> None:
    _, errs = decode(raw)
    if expected is None:
        assert errs == []
    else:
        assert any(expected in e for e in errs), errs


def test_a_failclosed_outage_says_reject_only_when_the_filter_reads_the_source() -> None:
    from netsched.metrics import MetricsHub
    from netsched.plugins.network_traffic import NetworkTraffic, NetworkTrafficArgs
    from netsched.testing.clock import FakeClock
    from netsched.testing.framework import build_plugin
    from netsched.testing.prometheus import FakePrometheus

    closed = PrometheusArgs(stale_policy="failClosed")
    hub = MetricsHub(clock=FakeClock(), client_factory=FakePrometheus().factory)
    scorer = build_plugin(NetworkTraffic, NetworkTrafficArgs(prometheus=closed), metrics=hub)
    assert not scorer.source.poller.filters_fail_closed  # it falls back to requests: nothing waits
    build_plugin(LoadThreshold, LoadThresholdArgs(prometheus=closed), metrics=hub)
    assert scorer.source.poller.filters_fail_closed  # the filter shares the source: pods wait
