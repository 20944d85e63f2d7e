"""PodTable: pods by uid, and by namespace or a registered index without a scan."""

from __future__ import annotations

import dataclasses

from netsched.cache.pod_table import PodTable
from netsched.framework.types import PodInfo
from netsched.testing.builders import make_pod


def test_the_namespace_index_follows_every_change() -> None:
    t = PodTable()
    a = make_pod("a").namespace("x").info()
    b = make_pod("b").namespace("x").info()
    c = make_pod("c").namespace("y").info()
    for p in (a, b, c):
        t[p.uid] = p
    assert sorted(p.name for p in t.in_namespace("x")) == ["a", "b"] and len(t) == 3
    t[a.uid] = dataclasses.replace(a, namespace="y")  # the same uid seen in another namespace
    assert [p.name for p in t.in_namespace("x")] == ["b"]
    assert sorted(p.name for p in t.in_namespace("y")) == ["a", "c"]
    assert t.pop(b.uid) is b and t.pop(b.uid) is None
    assert t.in_namespace("x") == [] and "x" not in t._by_ns  # empty buckets go
    assert b.uid not in t and a.uid in t and sorted(t) == sorted([a.uid, c.uid])


def _group(pod: PodInfo) -> str:
    """A plugin's index key: "namespace/value of the group label", "" for pods without it."""
    value = pod.labels.get("example.com/group", "")
    return f"{pod.namespace}/{value}" if value else ""


def test_a_registered_index_follows_every_change() -> None:
    t = PodTable()
    t.add_index("group", _group)
    g = "example.com/group"
    a = make_pod("a").label(g, "train").info()
    b = make_pod("b").label(g, "train").info()
    c = make_pod("c").label(g, "train").namespace("other").info()
    solo = make_pod("solo").info()
    for p in (a, b, c, solo):
        t[p.uid] = p
    assert sorted(p.name for p in t.by_index("group", "default/train")) == ["a", "b"]
    assert [p.name for p in t.by_index("group", "other/train")] == ["c"]
    t[a.uid] = dataclasses.replace(a, labels={g: "eval"})  # relabelled: it changes group
    assert [p.name for p in t.by_index("group", "default/train")] == ["b"]
    assert [p.name for p in t.by_index("group", "default/eval")] == ["a"]
    t.pop(b.uid)
    assert t.by_index("group", "default/train") == [] and "default/train" not in t._indexes["group"]
    assert t.by_index("no such index", "default/eval") == []


def test_an_index_registered_late_covers_the_pods_already_there_and_keeps_its_first_key() -> None:
    t = PodTable()
    a = make_pod("a").label("example.com/group", "train").info()
    t[a.uid] = a
    t.add_index("group", _group)
    t.add_index("group", lambda _p: "everything")  # a second registration of the name: ignored
    assert [p.name for p in t.by_index("group", "default/train")] == ["a"]
    assert t.by_index("group", "everything") == []


def test_an_update_keeps_the_pods_order_in_its_namespace_and_index() -> None:
    """Handle.list_pods and pods_by_index read the buckets in order: an update that leaves a
    pod in the same bucket keeps its place (it used to move to the end)."""
    t = PodTable()
    t.add_index("group", _group)
    g = "example.com/group"
    pods = [make_pod(n).label(g, "train").info() for n in ("a", "b", "c")]
    for p in pods:
        t[p.uid] = p
    t[pods[0].uid] = dataclasses.replace(pods[0], node_name="n1")
    assert [p.name for p in t.in_namespace("default")] == ["a", "b", "c"]
    assert [p.name for p in t.by_index("group", "default/train")] == ["a", "b", "c"]
    assert t.get(pods[0].uid).node_name == "n1"  # type: ignore[union-attr]
