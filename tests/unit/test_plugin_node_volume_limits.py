"""NodeVolumeLimits: CSI attach limits per driver from CSINode, counting existing attachments."""

from __future__ import annotations

from typing import Any

from netsched.framework import Code, Snapshot, Status
from netsched.plugins.node_volume_limits import NodeVolumeLimits
from netsched.plugins.volumes import csi_attach_limit_key
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_framework
from netsched.testing.volumes import csi_node, pv, pvc, storage_class, volume_objects

DRIVER = "ebs.csi.aws.com"
EXCEEDED = ["node(s) exceed max volume count"]


def claims(n: int) -> dict[str, Any]:
    """n claims bound to CSI PVs vol-0..vol-(n-1), plus an unbound claim "new" of a CSI class."""
    out: dict[str, Any] = {"pvcs": [], "pvs": [], "classes": [storage_class("ebs", provisioner=DRIVER)]}
    for i in range(n):
        c = pvc(f"c{i}", storage_class="ebs", volume=f"vol-{i}", bound=True)
        out["pvcs"].append(c)
        out["pvs"].append(pv(f"vol-{i}", storage_class="ebs", claim=c, csi=(DRIVER, f"handle-{i}")))
    out["pvcs"].append(pvc("new", storage_class="ebs"))
    return out


def run(pod: Any, existing: list[Any], nodes: list[Any], **objects: Any) -> tuple[Status, dict[str, Status]]:
    fwk = build_framework([NodeVolumeLimits], objects=volume_objects(**objects))
    state = fwk.new_cycle_state()
    snap = Snapshot.of(node_infos(nodes, existing))
    _, st = fwk.run_pre_filter(state, pod.info(), snap)
    return st, {n.name: fwk.run_filter_plugins(state, pod.info(), n) for n in snap.nodes} if st.ok else {}


def test_pod_without_claims_skips() -> None:
    fwk = build_framework([NodeVolumeLimits])
    state = fwk.new_cycle_state()
    fwk.run_pre_filter(state, make_pod("p").info(), Snapshot())
    assert "NodeVolumeLimits" in state.skip_filter_plugins


def test_csinode_limit_counts_existing_attachments() -> None:
    objs = claims(2)
    existing = [make_pod("old").pvc("c0").node("full"), make_pod("old2").pvc("c1").node("full")]
    nodes = [make_node("full"), make_node("roomy"), make_node("nolimit")]
    objs["csi_nodes"] = [
        csi_node("full", {DRIVER: 2}),
        csi_node("roomy", {DRIVER: 3}),
        csi_node("nolimit", {DRIVER: None}),
    ]
    st, filtered = run(make_pod("p").pvc("new"), existing, nodes, **objs)
    assert st.ok
    assert filtered["full"].code == Code.UNSCHEDULABLE and filtered["full"].reasons == EXCEEDED
    assert filtered["roomy"].ok and filtered["nolimit"].ok


def test_a_volume_already_attached_counts_once() -> None:
    objs = claims(2)
    existing = [make_pod("old").pvc("c0").node("n"), make_pod("old2").pvc("c1").node("n")]
    objs["csi_nodes"] = [csi_node("n", {DRIVER: 2})]
    # The new pod uses c1, already attached to the node: still 2 volumes.
    st, filtered = run(make_pod("p").pvc("c1"), existing, [make_node("n")], **objs)
    assert st.ok and filtered["n"].ok


def test_two_existing_pods_sharing_a_volume_count_it_once() -> None:
    objs = claims(1)
    existing = [make_pod("a").pvc("c0").node("n"), make_pod("b").pvc("c0").node("n")]
    objs["csi_nodes"] = [csi_node("n", {DRIVER: 2})]
    st, filtered = run(make_pod("p").pvc("new"), existing, [make_node("n")], **objs)
    assert filtered["n"].ok


def test_node_allocatable_limit_when_no_csinode() -> None:
    objs = claims(1)
    node = make_node("n").capacity_named(csi_attach_limit_key(DRIVER), 1)
    st, filtered = run(make_pod("p").pvc("new"), [make_pod("old").pvc("c0").node("n")], [node], **objs)
    assert filtered["n"].reasons == EXCEEDED


def test_missing_claim_is_unresolvable() -> None:
    st, _ = run(make_pod("p").pvc("nope"), [], [make_node("n")])
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ['looking up PVC default/nope: persistentvolumeclaim "nope" not found']


def test_limit_key_is_hashed_when_long() -> None:
    assert csi_attach_limit_key(DRIVER) == "attachable-volumes-csi-ebs.csi.aws.com"
    long = csi_attach_limit_key("a" * 60)
    assert len(long) == 23 + 23 + 16 and long.startswith("attachable-volumes-csi-" + "a" * 23)


def test_batch_filter_agrees_with_the_per_node_filter() -> None:
    import numpy as np

    from netsched.testing.framework import plugin_of

    objs = claims(3)
    existing = [make_pod(f"old{i}").pvc(f"c{i}").node(f"n{i}") for i in range(3)]
    nodes = [make_node(f"n{i}") for i in range(4)] + [
        make_node("legacy").capacity_named(csi_attach_limit_key(DRIVER), 0)
    ]
    objs["csi_nodes"] = [
        csi_node("n0", {DRIVER: 1}),
        csi_node("n1", {DRIVER: 2}),
        csi_node("n3", {DRIVER: 0}),
    ]
    fwk = build_framework([NodeVolumeLimits], objects=volume_objects(**objs))
    pod = make_pod("p").pvc("new").info()
    state = fwk.new_cycle_state()
    snap = Snapshot.of(node_infos(nodes, existing))
    fwk.run_pre_filter(state, pod, snap)
    per_node = {n.name for n in snap.nodes if not fwk.run_filter_plugins(state, pod, n).ok}
    assert per_node == {"n0", "n3", "legacy"}
    rows = snap.all_rows
    rejections = plugin_of(fwk, NodeVolumeLimits).filter_nodes(state, pod, snap, rows)
    batch = {snap.nodes[i].name for r in rejections for i in rows[r.mask].tolist()}
    assert batch == per_node
    # Without the legacy allocatable column, only CSINode nodes are looked at.
    snap = Snapshot.of(node_infos(nodes[:4], existing))
    rows = snap.all_rows
    rejections = plugin_of(fwk, NodeVolumeLimits).filter_nodes(state, pod, snap, rows)
    assert {snap.nodes[i].name for r in rejections for i in rows[r.mask].tolist()} == {"n0", "n3"}
    assert all(r.code == Code.UNSCHEDULABLE and r.reasons == tuple(EXCEEDED) for r in rejections)
    assert np.all(rows == np.arange(4))
