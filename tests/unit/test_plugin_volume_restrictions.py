"""VolumeRestrictions: ReadWriteOncePod conflicts and kube's same-disk conflicts."""

from __future__ import annotations

from typing import Any

from netsched.framework import Code, Snapshot, Status
from netsched.plugins.volume_restrictions import VolumeRestrictions
from netsched.plugins.volume_restrictions.plugin import volume_conflict
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_framework
from netsched.testing.volumes import pvc, volume_objects

RWOP = ["ReadWriteOncePod"]


def run(pod: Any, existing: list[Any], **objects: Any) -> tuple[Status, dict[str, Status]]:
    fwk = build_framework([VolumeRestrictions], objects=volume_objects(**objects))
    state = fwk.new_cycle_state()
    snap = Snapshot.of(node_infos([make_node("n1"), make_node("n2")], existing))
    _, st = fwk.run_pre_filter(state, pod.info(), snap)
    out = {}
    if st.ok and "VolumeRestrictions" not in state.skip_filter_plugins:
        out = {n.name: fwk.run_filter_plugins(state, pod.info(), n) for n in snap.nodes}
    return st, out


def gce(name: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "d", "gcePersistentDisk": {"pdName": name, "readOnly": read_only}}


def with_volumes(pod: Any, *vols: dict[str, Any]) -> Any:
    return pod.set("spec.volumes", list(vols))


def test_pod_without_volumes_skips() -> None:
    fwk = build_framework([VolumeRestrictions])
    state = fwk.new_cycle_state()
    fwk.run_pre_filter(state, make_pod("p").info(), Snapshot())
    assert "VolumeRestrictions" in state.skip_filter_plugins


def test_missing_claim_is_unresolvable() -> None:
    st, _ = run(make_pod("p").pvc("data"), [])
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ['persistentvolumeclaim "data" not found']


def test_read_write_once_pod_claim_in_use_blocks_every_node() -> None:
    claim = pvc("data", modes=RWOP)
    user = make_pod("user").pvc("data").node("n1")
    st, filtered = run(make_pod("p").pvc("data"), [user], pvcs=[claim])
    assert st.ok
    for s in filtered.values():
        assert s.code == Code.UNSCHEDULABLE
        assert s.reasons == [
            "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
        ]


def test_read_write_once_pod_claim_not_in_use_skips() -> None:
    fwk = build_framework([VolumeRestrictions], objects=volume_objects(pvcs=[pvc("data", modes=RWOP)]))
    state = fwk.new_cycle_state()
    _, st = fwk.run_pre_filter(
        state, make_pod("p").pvc("data").info(), Snapshot.of(node_infos([make_node("n1")]))
    )
    assert st.ok and "VolumeRestrictions" in state.skip_filter_plugins


def test_read_write_once_claim_may_be_shared() -> None:
    st, filtered = run(
        make_pod("p").pvc("data"), [make_pod("user").pvc("data").node("n1")], pvcs=[pvc("data")]
    )
    assert st.ok and all(s.ok for s in filtered.values())


def test_preemption_what_if_removing_the_user_clears_the_conflict() -> None:
    fwk = build_framework([VolumeRestrictions], objects=volume_objects(pvcs=[pvc("data", modes=RWOP)]))
    user = make_pod("user").pvc("data").node("n1").info()
    snap = Snapshot.of(node_infos([make_node("n1")], [user]))
    state = fwk.new_cycle_state()
    pod = make_pod("p").pvc("data").info()
    fwk.run_pre_filter(state, pod, snap)
    node = snap.nodes[0]
    assert not fwk.run_filter_plugins(state, pod, node).ok
    what_if = state.clone()
    fwk.run_pre_filter_extension_remove_pod(what_if, pod, user, node)
    assert fwk.run_filter_plugins(what_if, pod, node).ok
    assert not fwk.run_filter_plugins(state, pod, node).ok  # the clone did not touch the real state


def test_same_gce_disk_conflicts_unless_all_read_only() -> None:
    existing = with_volumes(make_pod("old").node("n1"), gce("disk-1"))
    st, filtered = run(with_volumes(make_pod("p"), gce("disk-1")), [existing])
    assert st.ok
    assert filtered["n1"].code == Code.UNSCHEDULABLE and filtered["n1"].reasons == [
        "node(s) had no available disk"
    ]
    assert filtered["n2"].ok
    ro = with_volumes(make_pod("old").node("n1"), gce("disk-1", read_only=True))
    _, filtered = run(with_volumes(make_pod("p"), gce("disk-1", read_only=True)), [ro])
    assert filtered["n1"].ok


def test_legacy_disk_conflict_rules() -> None:
    ebs = {"awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}
    assert volume_conflict(ebs, ebs)  # EBS conflicts even read-only
    assert not volume_conflict(ebs, {"awsElasticBlockStore": {"volumeID": "vol-2"}})
    iscsi = {"iscsi": {"iqn": "iqn.a", "readOnly": True}}
    assert not volume_conflict(iscsi, iscsi)
    assert volume_conflict(iscsi, {"iscsi": {"iqn": "iqn.a"}})
    rbd = {"rbd": {"monitors": ["m1", "m2"], "image": "img"}}
    assert volume_conflict(rbd, {"rbd": {"monitors": ["m2"], "pool": "rbd", "image": "img"}})
    assert not volume_conflict(rbd, {"rbd": {"monitors": ["m3"], "image": "img"}})
    assert not volume_conflict(rbd, {"rbd": {"monitors": ["m1"], "pool": "other", "image": "img"}})
