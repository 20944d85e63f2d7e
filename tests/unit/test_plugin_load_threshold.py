"""LoadThreshold: limits, reasons, staleness policies, fallback, estimates, batch vs per-node, args."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.interfaces import Diagnosis
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.framework.types import NodeInfo
from netsched.metrics import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX, PrometheusArgs, QueryError
from netsched.testing.builders import NodeBuilder, make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.handle import FakeHandle
from netsched.testing.prometheus import fake_hub
from plugins.load_threshold import LoadThreshold, LoadThresholdArgs

GBIT = 125_000_000.0
POD = make_pod("p").info()


class Rig:
    def __init__(self, n: int, *, args: LoadThresholdArgs | None = None, pods: Sequence[Any] = ()) -> None:
        self.clock = FakeClock()
        self.hub, self.fake = fake_hub(self.clock)
        self.names = [f"n{i}" for i in range(n)]
        nodes: list[NodeInfo | NodeBuilder] = [
            make_node(name).capacity(cpu="4", memory="8Gi") for name in self.names
        ]
        self.snap = Snapshot.of(node_infos(nodes, list(pods)))
        self.handle = FakeHandle(self.snap, metrics=self.hub, clock=self.clock)
        self.plugin = LoadThreshold(args or LoadThresholdArgs.default(), self.handle)
        self.src = self.plugin.source

    def load(self, **metrics: Any) -> None:
        """Serve the given metrics; network defaults to idle 1 Gb/s links, cpu/memory to 10 %."""
        defaults = {
            NETWORK_RX: dict.fromkeys(self.names, 0.0),
            NETWORK_TX: dict.fromkeys(self.names, 0.0),
            LINK_SPEED: dict.fromkeys(self.names, GBIT),
            CPU: dict.fromkeys(self.names, 0.1),
            MEMORY: dict.fromkeys(self.names, 0.1),
        }
        for metric, values in {**defaults, **metrics}.items():
            with contextlib.suppress(KeyError):  # a disabled check: the metric is not polled
                self.fake.serve(self.src, metric, values)
        self.hub.poll_now()

    def verdicts(self) -> dict[str, str | tuple[str, ...]]:
        """node -> "ok" | reasons; checks filter() and filter_nodes() agree."""
        state = CycleState()
        idx = self.snap.all_rows
        batch: dict[str, str | tuple[str, ...]] = dict.fromkeys(self.names, "ok")
        for rej in self.plugin.filter_nodes(state, POD, self.snap, idx):
            assert rej.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            for j in np.flatnonzero(rej.mask):
                assert batch[self.names[int(idx[j])]] == "ok"  # one rejection per node
                batch[self.names[int(idx[j])]] = rej.reasons
        for node in self.snap.nodes:
            st = self.plugin.filter(CycleState(), POD, node)  # its own cycle: computed afresh
            per_node = "ok" if st.ok else tuple(st.reasons)
            assert per_node == batch[node.name], node.name
            if not st.ok:
                assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.plugin == "LoadThreshold"
        return batch


def test_default_limits_and_reasons() -> None:
    r = Rig(5)
    r.load(
        **{
            NETWORK_TX: {"n0": 0.81 * GBIT, "n1": 0.79 * GBIT, "n2": 0.0, "n3": 0.0, "n4": 0.9 * GBIT},
            CPU: {"n0": 0.1, "n1": 0.1, "n2": 0.66, "n3": 0.65, "n4": 0.7},
            MEMORY: {"n0": 0.1, "n1": 0.1, "n2": 0.1, "n3": 0.96, "n4": 0.1},
        }
    )
    assert r.verdicts() == {
        "n0": ("node(s) had network utilisation above 80%",),
        "n1": "ok",
        "n2": ("node(s) had cpu utilisation above 65%",),
        "n3": ("node(s) had memory utilisation above 95%",),
        "n4": ("node(s) had network utilisation above 80%", "node(s) had cpu utilisation above 65%"),
    }


def test_reasons_read_like_kube_in_the_fit_error() -> None:
    r = Rig(3)
    r.load(**{CPU: {"n0": 0.9, "n1": 0.9, "n2": 0.1}})
    d = Diagnosis(3, np.zeros(3, dtype=np.int8))
    for rej in r.plugin.filter_nodes(CycleState(), POD, r.snap, r.snap.all_rows):
        for reason in rej.reasons:
            d.reasons[reason] = d.reasons.get(reason, 0) + int(rej.mask.sum())
    assert d.message() == "0/3 nodes are available: 2 node(s) had cpu utilisation above 65%."


def test_zero_disables_a_check_and_its_queries() -> None:
    args = LoadThresholdArgs(
        network_utilization_percent=0, memory_utilization_percent=0, cpu_utilization_percent=50.5
    )
    r = Rig(2, args=args)
    r.load(**{CPU: {"n0": 0.51, "n1": 0.5}})
    assert r.verdicts() == {"n0": ("node(s) had cpu utilisation above 50.5%",), "n1": "ok"}
    assert r.fake.calls == [r.src.query(CPU)]


def test_no_link_speed_means_no_network_check() -> None:
    r = Rig(2)
    r.load(**{NETWORK_RX: {"n0": 10 * GBIT, "n1": 10 * GBIT}, LINK_SPEED: {"n0": GBIT}})
    assert r.verdicts() == {"n0": ("node(s) had network utilisation above 80%",), "n1": "ok"}


def test_stale_nodes_pass_when_failing_open() -> None:
    r = Rig(2)
    r.load(**{CPU: {"n0": (0.99, r.clock.wall() - 120)}, MEMORY: {"n0": 0.1}})  # n1 has no cpu/memory
    assert r.verdicts() == {"n0": "ok", "n1": "ok"}


def test_stale_nodes_are_rejected_when_failing_closed() -> None:
    args = LoadThresholdArgs(prometheus=PrometheusArgs(stale_policy="failClosed"))
    r = Rig(3, args=args)
    r.load(
        **{CPU: {"n0": (0.1, r.clock.wall() - 120), "n1": 0.1, "n2": 0.1}, NETWORK_RX: {"n0": 0.0, "n1": 0.0}}
    )
    assert r.verdicts() == {
        "n0": ("node(s) had no recent cpu metrics",),
        "n1": "ok",
        "n2": ("node(s) had no recent network metrics",),
    }


def test_fallback_passes_everything_or_rejects_everything() -> None:
    r = Rig(2)
    r.load(**{CPU: {"n0": 0.99, "n1": 0.99}})
    assert set(r.verdicts().values()) == {("node(s) had cpu utilisation above 65%",)}
    r.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    r.hub.poll_now()
    assert r.verdicts() == {"n0": "ok", "n1": "ok"}  # failOpen: no measurements, no filtering
    closed = Rig(1, args=LoadThresholdArgs(prometheus=PrometheusArgs(stale_policy="failClosed")))
    closed.fake.fail_all = QueryError("unreachable", "refused", transient=True)
    closed.hub.poll_now()
    assert closed.verdicts() == {
        "n0": (
            "node(s) had no recent network metrics",
            "node(s) had no recent cpu metrics",
            "node(s) had no recent memory metrics",
        )
    }


def test_reserved_pods_push_a_node_over_the_limit_before_metrics_catch_up() -> None:
    r = Rig(2, args=LoadThresholdArgs(network_utilization_percent=0, memory_utilization_percent=0))
    r.load(**{CPU: {"n0": 0.6, "n1": 0.6}})
    assert r.verdicts() == {"n0": "ok", "n1": "ok"}
    pod = make_pod("big").req(cpu="500m").info()  # 500m x 0.85 / 4000m = 10.6 %
    assert r.plugin.reserve(CycleState(), pod, "n0").ok
    assert r.verdicts()["n0"] == ("node(s) had cpu utilisation above 65%",)
    r.plugin.unreserve(CycleState(), pod, "n0")
    assert r.verdicts()["n0"] == "ok"


def test_filter_of_a_node_outside_the_snapshot() -> None:
    r = Rig(1, args=LoadThresholdArgs(prometheus=PrometheusArgs(stale_policy="failClosed")))
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
