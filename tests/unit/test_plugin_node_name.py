"""NodeName: a pod naming a node fits only that node."""

from __future__ import annotations

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.plugins.node_name import NodeName
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_plugin

REASON = "node(s) didn't match the requested node name"


def snap3() -> Snapshot:
    return Snapshot.of(node_infos([make_node("a"), make_node("b"), make_node("c")]))


def test_pod_without_node_name_fits_everywhere() -> None:
    snap = snap3()
    pl = build_plugin(NodeName, snapshot=snap)
    pod = make_pod("p").info()
    assert pl.filter_nodes(CycleState(), pod, snap, snap.all_rows) == []
    assert all(pl.filter(CycleState(), pod, n).ok for n in snap.nodes)


def test_named_node_only() -> None:
    snap = snap3()
    pl = build_plugin(NodeName, snapshot=snap)
    pod = make_pod("p").node("b").info()
    idx = np.array([2, 1, 0], dtype=np.int64)
    (rej,) = pl.filter_nodes(CycleState(), pod, snap, idx)
    assert rej.mask.tolist() == [True, False, True]
    assert rej.reasons == (REASON,) and rej.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert [pl.filter(CycleState(), pod, snap.nodes[i]).reasons for i in idx] == [[REASON], [], [REASON]]
    # Only the named node in the batch: nothing rejected.
    assert pl.filter_nodes(CycleState(), pod, snap, np.array([1], dtype=np.int64)) == []


def test_unknown_node_name_rejects_all() -> None:
    snap = snap3()
    (rej,) = build_plugin(NodeName, snapshot=snap).filter_nodes(
        CycleState(), make_pod("p").node("zz").info(), snap, snap.all_rows
    )
    assert rej.mask.all()


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert NodeName.name == "NodeName"
    assert extension_points_of(NodeName) == ["filter"]
