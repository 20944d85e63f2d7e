"""Cluster cache: pods on nodes, assumed pods, expiry, incremental snapshots."""

from __future__ import annotations

import numpy as np
import pytest

from netsched.cache import ClusterCache, PodInCache
from netsched.framework.snapshot import Snapshot
from netsched.framework.types import NodeInfo
from netsched.testing.builders import make_node, make_pod
from netsched.testing.clock import FakeClock


def node_of(c: ClusterCache, name: str) -> NodeInfo | None:
    return next((n for n in c.nodes() if n.name == name), None)


def cache_with(*names: str) -> tuple[ClusterCache, FakeClock]:
    clock = FakeClock()
    c = ClusterCache(clock, assumed_ttl=30)
    for n in names:
        c.add_or_update_node(make_node(n).capacity(cpu="4", memory="8Gi").info())
    return c, clock


def test_assume_counts_until_forgotten() -> None:
    c, _ = cache_with("n1", "n2")
    pod = make_pod("p").req(cpu="1500m", memory="1Gi").info()
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.requested[snap.index["n1"], snap.col["cpu"]] == 0
    c.assume(pod, "n1")
    c.update_snapshot(snap)
    row = snap.index["n1"]
    assert snap.requested[row, snap.col["cpu"]] == 1500
    assert snap.requested[row, snap.col["pods"]] == 1
    assert c.is_assumed(pod.uid)
    c.forget(pod.uid)
    c.update_snapshot(snap)
    assert snap.requested[row, snap.col["cpu"]] == 0
    assert not c.is_assumed(pod.uid)


def test_bind_confirmation_replaces_assumed_pod() -> None:
    c, _ = cache_with("n1")
    pod = make_pod("p").req(cpu="1").info()
    c.assume(pod, "n1")
    c.finish_binding(pod.uid)
    bound = make_pod("p").uid(pod.uid).req(cpu="1").node("n1").info()
    c.add_or_update_pod(bound)
    assert not c.is_assumed(pod.uid)
    node = node_of(c, "n1")
    assert node is not None and node.requested["cpu"] == 1000 and len(node.pods) == 1


def test_assume_refuses_a_pod_in_the_cache_saying_whether_it_was_bound_or_assumed() -> None:
    c, _ = cache_with("n1", "n2")
    pod = make_pod("p").req(cpu="1").info()
    c.add_or_update_pod(make_pod("p").uid(pod.uid).req(cpu="1").node("n2").info())  # another binder's
    assert c.bound_node(pod.uid) == "n2"
    with pytest.raises(PodInCache) as bound:
        c.assume(pod, "n1")
    assert (bound.value.node, bound.value.assumed) == ("n2", False)
    assert "pod default/p is already in the cache" in str(bound.value)
    other = make_pod("q").req(cpu="1").info()
    c.assume(other, "n1")
    assert c.bound_node(other.uid) == ""  # assumed is not bound
    with pytest.raises(PodInCache) as assumed:
        c.assume(other, "n2")
    assert (assumed.value.node, assumed.value.assumed) == ("n1", True)
    assert c.bound_node("unknown") == ""


def test_assumed_pod_expires_only_after_binding_finished() -> None:
    c, clock = cache_with("n1")
    pod = make_pod("p").req(cpu="1").info()
    c.assume(pod, "n1")
    clock.step(120)
    assert c.cleanup_expired() == []  # still binding: never expires
    c.finish_binding(pod.uid)
    clock.step(29)
    assert c.cleanup_expired() == []
    clock.step(2)
    assert [p.uid for p in c.cleanup_expired()] == [pod.uid]
    node = node_of(c, "n1")
    assert node is not None and node.requested.get("cpu", 0) == 0


def test_snapshot_copies_only_changed_nodes() -> None:
    c, _ = cache_with("a", "b", "c")
    snap = Snapshot()
    c.update_snapshot(snap)
    layout = snap.layout_version
    before = list(snap.nodes)
    c.add_or_update_pod(make_pod("p").req(cpu="1").node("b").info())
    c.update_snapshot(snap)
    assert snap.layout_version == layout
    assert snap.nodes[0] is before[0] and snap.nodes[2] is before[2]
    assert snap.nodes[1] is not before[1]
    assert snap.requested[1, 0] == 1000
    # The snapshot is a copy: cache changes do not leak in until the next update.
    c.add_or_update_pod(make_pod("q").req(cpu="1").node("b").info())
    assert snap.requested[1, 0] == 1000
    c.add_or_update_node(make_node("d").info())
    c.update_snapshot(snap)
    assert snap.layout_version > layout and len(snap) == 4
    assert snap.requested[snap.index["b"], 0] == 2000


def test_pods_seen_before_their_node_are_attached() -> None:
    c, _ = cache_with()
    c.add_or_update_pod(make_pod("early").req(cpu="2").node("late").info())
    c.add_or_update_node(make_node("late").info())
    node = node_of(c, "late")
    assert node is not None and node.requested["cpu"] == 2000


def test_node_update_keeps_pods_and_new_resource_column_rebuilds() -> None:
    c, _ = cache_with("n1")
    c.add_or_update_pod(make_pod("p").req(cpu="1").node("n1").info())
    snap = Snapshot()
    c.update_snapshot(snap)
    c.add_or_update_node(make_node("n1").capacity(cpu="8", nvidia_gpu="2").info())
    c.update_snapshot(snap)
    assert "nvidia.com/gpu" in snap.col
    row = snap.index["n1"]
    assert snap.allocatable[row, snap.col["nvidia.com/gpu"]] == 2
    assert snap.requested[row, snap.col["cpu"]] == 1000


def test_node_relist_keeps_pods_and_assumed_pods_and_drops_vanished_nodes() -> None:
    c, _ = cache_with("n1", "n2")
    kept = make_pod("kept").node("n1").req(cpu="1").info()
    c.add_or_update_pod(kept)
    assumed = make_pod("assumed").req(cpu="1").info()
    c.assume(assumed, "n2")
    c.replace_nodes([make_node("n1").info(), make_node("n2").info()])
    n2 = node_of(c, "n2")
    assert n2 is not None and set(n2.pods) == {assumed.uid}
    c.replace_nodes([make_node("n1").info()])
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [n.name for n in snap.nodes] == ["n1"]
    assert np.array_equal(snap.requested[0, :2], [1000, 0])


def test_node_listener_hears_set_changes() -> None:
    c, _ = cache_with()
    seen: list[list[str]] = []
    c.on_nodes_changed(lambda nodes: seen.append(sorted(n.name for n in nodes)))
    c.add_or_update_node(make_node("a").info())
    assert c.notify_node_listeners()
    c.replace_nodes([make_node("a").info(), make_node("b").info()])
    c.add_or_update_node(make_node("c").info())
    assert c.notify_node_listeners()
    assert not c.notify_node_listeners()  # nothing new: debounced
    c.remove_node("a")
    c.notify_node_listeners()
    assert seen == [["a"], ["a", "b", "c"], ["b", "c"]]


def test_same_placement_update_replaces_the_record_without_copying_the_node() -> None:
    """The binding that confirms an assumed pod (or a status-only update), flagged by the caller
    as changing nothing a node's totals read: the record is replaced, the node not re-copied."""
    c, _ = cache_with("a", "b")
    pod = make_pod("p").req(cpu="1").info()
    c.assume(pod, "a")
    snap = Snapshot()
    c.update_snapshot(snap)
    before = list(snap.nodes)
    bound = make_pod("p").uid(pod.uid).req(cpu="1").node("a").info()
    c.add_or_update_pod(bound, same_placement=True)
    assert not c.is_assumed(pod.uid) and c.get_pod(pod.uid) is bound
    c.update_snapshot(snap)
    assert snap.nodes[0] is before[0]  # nothing to copy
    node = node_of(c, "a")
    assert node is not None and node.pods[pod.uid] is bound and node.requested["cpu"] == 1000
    # Bound elsewhere than assumed: the flag cannot apply; the pod moves and both nodes change.
    q = make_pod("q").req(cpu="1").info()
    c.assume(q, "a")
    moved = make_pod("q").uid(q.uid).req(cpu="1").node("b").info()
    c.add_or_update_pod(moved, same_placement=True)
    c.update_snapshot(snap)
    assert snap.nodes[0] is not before[0] and snap.nodes[1] is not before[1]
    assert snap.requested[snap.index["a"], snap.col["cpu"]] == 1000
    assert snap.requested[snap.index["b"], snap.col["cpu"]] == 1000
