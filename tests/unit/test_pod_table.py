"""PodTable: pods by uid, and by namespace without a scan."""

from __future__ import annotations

import dataclasses

from netsched.cache.pod_table import PodTable
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


def test_the_gang_index_follows_every_change() -> None:
    t = PodTable()
    g = "scheduling.x-k8s.io/pod-group"
    a = make_pod("a").label(g, "train").info()
    b = make_pod("b").label("pod-group.scheduling.sigs.k8s.io", "train").info()  # the older label
    c = make_pod("c").label(g, "train").namespace("other").info()
    solo = make_pod("solo").info()
    for p in (a, b, c, solo):
        t[p.uid] = p
    assert sorted(p.name for p in t.in_group("default", "train")) == ["a", "b"]
    assert [p.name for p in t.in_group("other", "train")] == ["c"]
    t[a.uid] = dataclasses.replace(a, labels={g: "eval"})  # relabelled: it changes gang
    assert [p.name for p in t.in_group("default", "train")] == ["b"]
    assert [p.name for p in t.in_group("default", "eval")] == ["a"]
    t.pop(b.uid)
    assert t.in_group("default", "train") == [] and ("default", "train") not in t._by_group
