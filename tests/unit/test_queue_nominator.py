"""Nominator: nominations by node, kept across updates, dropped on bind/delete; and via the queue."""

from __future__ import annotations

import pytest
from test_queue_helpers import new_queue, pod

from netsched.framework.types import PodInfo
from netsched.queue import Nominator
from netsched.testing.clock import FakeClock


def names(pods: list[PodInfo]) -> list[str]:
    return [p.name for p in pods]


def nominated_node(n: Nominator, uid: str) -> str:
    """The node the pod is nominated to, or "", read through the nominator's per-node lists."""
    found = [node for node in n.node_names() if any(p.uid == uid for p in n.nominated_pods_for_node(node))]
    assert len(found) <= 1, found
    return found[0] if found else ""


def test_add_lists_pods_per_node_in_nomination_order() -> None:
    n = Nominator()
    n.add_nominated(pod("a"), "n1")
    n.add_nominated(pod("b"), "n1")
    n.add_nominated(pod("c"), "n2")
    assert names(n.nominated_pods_for_node("n1")) == ["a", "b"]
    assert names(n.nominated_pods_for_node("n2")) == ["c"]
    assert n.nominated_pods_for_node("n3") == []
    assert (nominated_node(n, "uid-a"), len(n)) == ("n1", 3)


def test_renominating_moves_the_pod() -> None:
    n = Nominator()
    n.add_nominated(pod("a"), "n1")
    n.add_nominated(pod("a"), "n2")
    assert n.nominated_pods_for_node("n1") == []
    assert names(n.nominated_pods_for_node("n2")) == ["a"]


@pytest.mark.parametrize(
    ("p", "node", "expected"),
    [
        pytest.param(pod("a", nominated="n9"), None, "n9", id="from-status"),
        pytest.param(pod("a"), None, "", id="status-empty"),
        pytest.param(pod("a", nominated="n9"), "n1", "n1", id="override"),
        pytest.param(pod("a", nominated="n9"), "", "", id="empty-override-clears"),
        pytest.param(pod("a", node="n1"), "n1", "", id="bound-pod-not-nominated"),
    ],
)
def test_add_modes(p: PodInfo, node: str | None, expected: str) -> None:
    n = Nominator()
    n.add_nominated(pod("a"), "old")
    n.add_nominated(p, node)
    assert nominated_node(n, "uid-a") == expected


def test_delete() -> None:
    n = Nominator()
    n.add_nominated(pod("a"), "n1")
    n.add_nominated(pod("b"), "n1")
    assert n.delete_nominated(pod("a"))
    assert not n.delete_nominated("uid-a")
    assert names(n.nominated_pods_for_node("n1")) == ["b"]
    assert n.delete_nominated("uid-b")
    assert n.nominated_pods_for_node("n1") == [] and len(n) == 0


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # The scheduler nominated in memory; the pod update has no node in status yet: keep it.
        pytest.param(pod("a"), pod("a", labels={"x": "y"}), "mem", id="keep-in-memory"),
        pytest.param(pod("a"), pod("a", nominated="n2"), "n2", id="status-set"),
        pytest.param(pod("a", nominated="n2"), pod("a", nominated="n3"), "n3", id="status-changed"),
        pytest.param(pod("a", nominated="n2"), pod("a"), "", id="status-cleared"),
        pytest.param(pod("a"), pod("a", node="n1"), "", id="bound"),
        pytest.param(None, pod("a"), "mem", id="no-old"),
    ],
)
def test_update(old: PodInfo | None, new: PodInfo, expected: str) -> None:
    n = Nominator()
    n.add_nominated(pod("a"), "mem")
    n.update_nominated(old, new)
    assert nominated_node(n, "uid-a") == expected
    listed = n.nominated_pods_for_node(expected) if expected else []
    assert listed == ([new] if expected else [])


def test_update_of_unnominated_pod_without_status_does_nothing() -> None:
    n = Nominator()
    n.update_nominated(pod("a"), pod("a", labels={"x": "y"}))
    assert len(n) == 0


def test_queue_keeps_nominator_in_step_with_pod_events() -> None:
    q = new_queue(FakeClock())
    p = pod("a", nominated="n1")
    q.add(p)
    assert names(q.nominator.nominated_pods_for_node("n1")) == ["a"]
    moved = pod("a", nominated="n2")
    q.update(p, moved)
    assert names(q.nominator.nominated_pods_for_node("n2")) == ["a"]
    q.update(moved, pod("a", node="n2"))  # bound
    assert len(q.nominator) == 0
    b = pod("b", nominated="n1")
    q.add(b)
    q.delete(b)
    assert len(q.nominator) == 0


def test_queue_accepts_a_shared_nominator() -> None:
    n = Nominator()
    q = new_queue(FakeClock(), nominator=n)
    q.add(pod("a", nominated="n1"))
    assert nominated_node(n, "uid-a") == "n1"
