"""NodeUnschedulable: cordoned nodes reject pods unless they tolerate the unschedulable taint."""

from __future__ import annotations

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.plugins.node_unschedulable import NodeUnschedulable
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

REASON = "node(s) were unschedulable"
KEY = "node.kubernetes.io/unschedulable"


def setup() -> tuple[NodeUnschedulable, Snapshot]:
    snap = Snapshot.of(
        node_infos([make_node("a"), make_node("b").unschedulable(), make_node("c").unschedulable()])
    )
    return build_plugin(NodeUnschedulable, snapshot=snap), snap


def test_cordoned_nodes_are_rejected() -> None:
    pl, snap = setup()
    pod = make_pod("p").info()
    idx = np.array([2, 0, 1], dtype=np.int64)
    (rej,) = pl.filter_nodes(CycleState(), pod, snap, idx)
    assert rej.mask.tolist() == [True, False, True]
    assert rej.reasons == (REASON,) and rej.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert [pl.filter(CycleState(), pod, snap.nodes[i]).ok for i in idx] == [False, True, False]
    assert pl.filter(CycleState(), pod, snap.nodes[1]).reasons == [REASON]


def test_tolerating_the_unschedulable_taint_passes() -> None:
    pl, snap = setup()
    for pod in (
        make_pod("exists").toleration(KEY, operator="Exists", effect="NoSchedule").info(),
        make_pod("any-effect").toleration(KEY, operator="Exists").info(),
        make_pod("everything").toleration(operator="Exists").info(),
    ):
        assert pl.filter_nodes(CycleState(), pod, snap, snap.all_rows) == []
        assert all(pl.filter(CycleState(), pod, n).ok for n in snap.nodes)
    # The wrong effect does not help.
    wrong = make_pod("wrong").toleration(KEY, operator="Exists", effect="NoExecute").info()
    assert len(pl.filter_nodes(CycleState(), wrong, snap, snap.all_rows)) == 1


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert NodeUnschedulable.name == "NodeUnschedulable"
    assert extension_points_of(NodeUnschedulable) == ["filter"]
