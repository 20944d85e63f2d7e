"""VolumeZone: the zone/region labels of a pod's bound PVs against the node's."""

from __future__ import annotations

from typing import Any

import pytest

from netsched.framework import Code, Snapshot, Status
from netsched.plugins.volume_zone import VolumeZone
from netsched.plugins.volume_zone.plugin import zones
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_framework
from netsched.testing.volumes import pv, pvc, storage_class, volume_objects

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = ["node(s) had no available volume zone"]
NODES = [
    make_node("a").label(ZONE, "a").label(REGION, "r1"),
    make_node("b").label(ZONE, "b").label(REGION, "r1"),
    make_node("plain"),
]


def run(pod: Any, **objects: Any) -> tuple[Status, dict[str, Status], bool]:
    fwk = build_framework([VolumeZone], objects=volume_objects(**objects))
    state = fwk.new_cycle_state()
    snap = Snapshot.of(node_infos(NODES))
    _, st = fwk.run_pre_filter(state, pod.info(), snap)
    skipped = "VolumeZone" in state.skip_filter_plugins
    out = {n.name: fwk.run_filter_plugins(state, pod.info(), n) for n in snap.nodes} if st.ok else {}
    return st, out, skipped


def bound(labels: dict[str, str]) -> dict[str, Any]:
    claim = pvc("data", volume="pv", bound=True)
    return {"pvcs": [claim], "pvs": [pv("pv", labels=labels, claim=claim)]}


POD = make_pod("p").pvc("data")


def test_pod_without_claims_skips() -> None:
    assert run(make_pod("p"))[2]


def test_pv_zone_must_match_the_node() -> None:
    st, filtered, _ = run(POD, **bound({ZONE: "a"}))
    assert st.ok
    assert filtered["a"].ok and filtered["plain"].ok  # a node without zone labels has no constraint
    assert filtered["b"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and filtered["b"].reasons == CONFLICT


def test_multi_zone_label_and_region() -> None:
    _, filtered, _ = run(POD, **bound({ZONE: "a__b", REGION: "r1"}))
    assert all(s.ok for s in filtered.values())
    _, filtered, _ = run(POD, **bound({REGION: "r2"}))
    assert filtered["a"].reasons == CONFLICT and filtered["b"].reasons == CONFLICT


def test_beta_pv_label_matches_the_nodes_ga_label() -> None:
    _, filtered, _ = run(POD, **bound({BETA_ZONE: "b"}))
    assert filtered["b"].ok and filtered["a"].reasons == CONFLICT


def test_pv_without_zone_labels_skips() -> None:
    assert run(POD, **bound({"other": "x"}))[2]


def test_unparsable_zone_label_is_ignored() -> None:
    assert run(POD, **bound({ZONE: "a__"}))[2]


def test_unbound_claims() -> None:
    wffc = {"pvcs": [pvc("data", storage_class="fast")], "classes": [storage_class("fast")]}
    assert run(POD, **wffc)[2]  # VolumeBinding's business
    st, _, _ = run(
        POD, pvcs=[pvc("data", storage_class="std")], classes=[storage_class("std", mode="Immediate")]
    )
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.reasons == ["PersistentVolume had no name"]
    st, _, _ = run(POD, pvcs=[pvc("data", storage_class=None)])
    assert st.reasons == ["PersistentVolumeClaim had no pv name and storageClass name"]
    st, _, _ = run(POD, pvcs=[pvc("data", storage_class="gone")])
    assert st.reasons == ['storageclass.storage.k8s.io "gone" not found']
    st, _, _ = run(POD)
    assert st.reasons == ['persistentvolumeclaim "data" not found']


def test_zones() -> None:
    assert zones("a__b") == {"a", "b"}
    with pytest.raises(ValueError):
        zones("a____b")
