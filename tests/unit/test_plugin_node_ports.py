"""NodePorts: hostPort conflicts by (hostIP, protocol, port) with 0.0.0.0 meaning every address."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.framework.types import PodInfo
from netsched.plugins.node_ports import NodePorts
from netsched.testing.agreement import filter_statuses, verdict
from netsched.testing.builders import PodBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

REASON = (Code.UNSCHEDULABLE, ("node(s) didn't have free ports for the requested pod ports",))


def setup(existing: list[PodBuilder], n: int = 4) -> tuple[NodePorts, Snapshot]:
    snap = Snapshot.of(
        node_infos([make_node(f"n{i}") for i in range(n)], list[PodInfo | PodBuilder](existing))
    )
    return build_plugin(NodePorts, snapshot=snap), snap


def outcomes(pl: NodePorts, pod: PodInfo, snap: Snapshot) -> dict[int, Any]:
    state = CycleState()
    _, st = pl.pre_filter(state, pod, snap)
    if st.is_skip:  # no filtering at all; filter() must agree every node fits
        assert all(pl.filter(state, pod, node).ok for node in snap.nodes)
        return dict.fromkeys(range(len(snap)))
    idx = np.array(list(reversed(range(len(snap)))), dtype=np.int64)
    statuses = filter_statuses(pl, pod, snap, idx, state=state)
    return {i: verdict(statuses[i]) for i in range(len(snap))}


EXISTING = [
    make_pod("a").host_port(8080).node("n0"),  # 0.0.0.0 TCP
    make_pod("b").host_port(8080, host_ip="10.0.0.1").node("n1"),
    make_pod("c").host_port(8080, protocol="UDP").node("n2"),
]


def test_pod_without_host_ports_skips() -> None:
    pl, snap = setup(EXISTING)
    _, st = pl.pre_filter(CycleState(), make_pod("p").info(), snap)
    assert st.is_skip


def test_wildcard_conflicts_with_any_address_same_protocol() -> None:
    pl, snap = setup(EXISTING)
    assert outcomes(pl, make_pod("p").host_port(8080).info(), snap) == {
        0: REASON,
        1: REASON,
        2: None,
        3: None,
    }


def test_specific_address_conflicts_with_itself_and_wildcard() -> None:
    pl, snap = setup(EXISTING)
    assert outcomes(pl, make_pod("p").host_port(8080, host_ip="10.0.0.1").info(), snap) == {
        0: REASON,
        1: REASON,
        2: None,
        3: None,
    }
    assert outcomes(pl, make_pod("q").host_port(8080, host_ip="10.0.0.2").info(), snap) == {
        0: REASON,
        1: None,
        2: None,
        3: None,
    }
    assert outcomes(pl, make_pod("r").host_port(8080, protocol="UDP", host_ip="10.0.0.1").info(), snap) == {
        0: None,
        1: None,
        2: REASON,
        3: None,
    }


def test_other_ports_are_free() -> None:
    pl, snap = setup(EXISTING)
    assert set(outcomes(pl, make_pod("p").host_port(9090).info(), snap).values()) == {None}


def test_random_agreement() -> None:
    rng = random.Random(9)
    for k in range(40):
        existing = []
        for i in range(4):
            for j in range(rng.randint(0, 2)):
                existing.append(
                    make_pod(f"e{k}-{i}-{j}")
                    .host_port(
                        rng.choice([80, 81]),
                        rng.choice(["TCP", "UDP"]),
                        rng.choice(["", "10.0.0.1", "10.0.0.2"]),
                    )
                    .node(f"n{i}")
                )
        pl, snap = setup(existing)
        pb = make_pod(f"p{k}")
        for _ in range(rng.randint(1, 2)):
            pb.host_port(
                rng.choice([80, 81]), rng.choice(["TCP", "UDP"]), rng.choice(["", "10.0.0.1", "10.0.0.2"])
            )
        outcomes(pl, pb.info(), snap)


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert NodePorts.name == "NodePorts"
    assert extension_points_of(NodePorts) == ["preFilter", "filter"]
