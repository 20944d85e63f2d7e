"""Rebalancer: who may move (table), its args with their paths, its state's round trip."""

from __future__ import annotations

from typing import Any

import pytest

from netsched.framework.fields import ErrorList, Fields
from netsched.plugins.rebalancer import RebalancerArgs
from netsched.plugins.rebalancer.eligibility import why_not
from netsched.plugins.rebalancer.state import MINUTE, Move, State
from netsched.testing.builders import make_pod


def running(b: Any) -> Any:
    return b.set("status.phase", "Running").set("status.conditions", [{"type": "Ready", "status": "True"}])


def owned(name: str = "web-0") -> Any:
    return running(make_pod(name).scheduler("netsched").owner("ReplicaSet", "web-7d9").node("n0"))


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        (owned(), ""),
        (
            running(make_pod("x").scheduler("default-scheduler").owner("ReplicaSet", "x").node("n0")),
            "another profile",
        ),
        (owned().annotation("netsched.io/rebalance", "false"), "annotated netsched.io/rebalance"),
        (owned().annotation("netsched.io/rebalance", "False "), "annotated netsched.io/rebalance"),
        (owned().set("metadata.namespace", "kube-system"), "namespace kube-system is excluded"),
        (owned().annotation("kubernetes.io/config.mirror", "abc"), "static (mirror) pod"),
        (running(make_pod("d").scheduler("netsched").owner("DaemonSet", "agent").node("n0")), "DaemonSet"),
        (running(make_pod("bare").scheduler("netsched").node("n0")), "bare pod"),
        (running(make_pod("j").scheduler("netsched").owner("Job", "report").node("n0")), "owned by a Job"),
        (running(make_pod("s").scheduler("netsched").owner("StatefulSet", "db").node("n0")), ""),
        (owned().label("scheduling.x-k8s.io/pod-group", "train"), "gang member"),
        (owned().set("spec.priority", 2_000_000_000), "system-critical"),
        (owned().set("spec.volumes", [{"name": "tmp", "emptyDir": {}}]), "local storage"),
        (owned().set("spec.volumes", [{"name": "h", "hostPath": {"path": "/x"}}]), "local storage"),
        (owned().terminating(), "terminating"),
        (
            make_pod("p").scheduler("netsched").owner("ReplicaSet", "web-7d9").node("n0"),
            "not running and ready",
        ),
        (
            owned().set("status.conditions", [{"type": "Ready", "status": "False"}]),
            "not running and ready",
        ),
    ],
)
def test_who_may_move(pod: Any, reason: str) -> None:
    got = why_not(
        pod.info(), profile="netsched", excluded_namespaces=("kube-system",), local_storage_allowed=False
    )
    assert (got == "") if not reason else reason in got, got


def test_local_storage_when_allowed() -> None:
    pod = owned().set("spec.volumes", [{"name": "tmp", "emptyDir": {}}]).info()
    assert why_not(pod, profile="netsched", excluded_namespaces=(), local_storage_allowed=True) == ""


def decode(raw: dict[str, Any]) -> tuple[RebalancerArgs, list[str]]:
    errs = ErrorList()
    args = RebalancerArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def test_args_defaults_round_trip_and_paths() -> None:
    args, errs = decode({})
    assert errs == [] and args.dry_run and args.network.high == 80 and args.cpu.target == 65
    assert args.traffic_min_crossing_mbps == 10
    assert not args.memory.enabled and set(args.watermarks) == {"network", "cpu"}
    again, errs = decode(args.encode())
    assert errs == [] and again == args
    _, errs = decode(
        {
            "network": {"highPercent": 70, "targetPercent": 75},
            "limits": {"evictionsPerRound": 0, "bogus": 1},
            "cooldownSeconds": {"workload": -1},
            "intervalSeconds": 0,
            "state": {"name": ""},
            "traffic": {"minCrossingMbps": -5},
        }
    )
    assert errs == [
        "args.intervalSeconds: Invalid value: 0.0: must be greater than or equal to 1",
        "args.network.targetPercent: Invalid value: 75.0: must be above 0 and below highPercent (70)",
        "args.traffic.minCrossingMbps: Invalid value: -5.0: must be greater than or equal to 0",
        "args.limits.evictionsPerRound: Invalid value: 0: must be greater than or equal to 1",
        "args.limits.bogus: Unknown field: not a field of this object (typo?)",
        "args.cooldownSeconds.workload: Invalid value: -1.0: must be greater than or equal to 0",
        "args.state.name: Required value",
    ]
    _, errs = decode(
        {"network": {"highPercent": 0}, "cpu": {"highPercent": 0}, "traffic": {"minReduction": 0}}
    )
    assert errs == ["args: Invalid value: 0: every trigger is off (highPercent 0, traffic.minReduction 0)"]


def test_a_memory_high_without_target_gets_one_below_it() -> None:
    args, errs = decode({"memory": {"highPercent": 90}})
    assert errs == [] and args.memory.target == 80


def test_state_round_trip_and_expiry() -> None:
    st = State(round=7)
    st.workloads["default/web"] = 100.0
    st.nodes["n0"] = 50.0
    st.moves["default/web"] = Move("default/web-0", "n0", "n3", 90.0, "network", 7)
    st.evictions = [10.0, 45.0]
    again = State.decode(st.encode())
    assert again == st
    again.expire(60.0)
    assert again.nodes == {} and "default/web" in again.moves and again.evictions == [10.0, 45.0]
    assert again.evictions_in_window(10.0 + MINUTE) == 1  # the one at 10 s is 60 s old
    again.expire(95.0)
    assert again.moves == {} and again.workloads == {"default/web": 100.0}
    assert State.decode("not json") == State() and State.decode('{"moves": {"x": {"pod": 1}}}').moves == {}
