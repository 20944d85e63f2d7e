"""ObjectStore: the watched kinds besides pods and nodes, as plugins read them through the Handle."""

from __future__ import annotations

from typing import Any

import pytest

from netsched.cache import ObjectStore
from netsched.kube.resources import NAMESPACES, OBJECT_KINDS, PODDISRUPTIONBUDGETS, Resource
from netsched.testing.framework import build_framework


def _obj(name: str, ns: str = "", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"metadata": meta, **extra}


def test_events_keep_each_table_current_and_listeners_see_old_and_new() -> None:
    store = ObjectStore()
    seen: list[tuple[str, str, Any, Any]] = []
    store.subscribe(lambda key, kind, old, new: seen.append((key, kind, old, new)))
    on = store.handler("policy/poddisruptionbudgets")
    a1, a2 = _obj("a", "x", spec={"v": 1}), _obj("a", "x", spec={"v": 2})
    on("ADDED", a1)
    on("ADDED", _obj("a", "y"))
    on("MODIFIED", a2)
    assert store.get("policy/poddisruptionbudgets", "x", "a") == a2
    assert len(store.list("policy/poddisruptionbudgets")) == 2
    assert store.list("policy/poddisruptionbudgets", "y") == [_obj("a", "y")]
    on("DELETED", a2)
    assert store.get("policy/poddisruptionbudgets", "x", "a") is None
    assert store.list("namespaces") == [] and store.get("namespaces", "", "x") is None
    assert [(k, kind, old) for k, kind, old, _ in seen][2:] == [
        ("policy/poddisruptionbudgets", "MODIFIED", a1),
        ("policy/poddisruptionbudgets", "DELETED", a2),
    ]


def test_a_failing_listener_does_not_stop_the_update() -> None:
    store = ObjectStore()

    def boom(*_: Any) -> None:
        raise RuntimeError("listener bug")

    store.subscribe(boom)
    store.apply("namespaces", "ADDED", _obj("team-a"))
    assert store.count("namespaces") == 1


def test_resource_keys_match_the_fake_servers_names() -> None:
    assert PODDISRUPTIONBUDGETS.key == "policy/poddisruptionbudgets"
    assert NAMESPACES.key == "namespaces"
    assert Resource("podgroups", group="scheduling.x-k8s.io", version="v1alpha1").key == (
        "scheduling.x-k8s.io/podgroups"
    )
    assert set(OBJECT_KINDS) >= {PODDISRUPTIONBUDGETS, NAMESPACES}


def test_the_handle_reads_pdbs_namespaces_and_other_kinds_from_the_store() -> None:
    fwk = build_framework(
        [],
        pdbs=[_obj("guard", "x")],
        namespaces={"team-a": {"env": "prod"}},
        objects={"persistentvolumeclaims": [_obj("data", "x")]},
    )
    assert [p["metadata"]["name"] for p in fwk.list_pdbs()] == ["guard"]
    assert fwk.namespace_labels("team-a") == {"env": "prod"}
    assert fwk.namespace_labels("unknown") is None
    assert fwk.objects.get("persistentvolumeclaims", "x", "data") == _obj("data", "x")


def test_changes_to_a_requeue_kind_move_unschedulable_pods_and_others_do_not() -> None:
    from netsched.assemble import _requeue_on_object_changes

    moved: list[str] = []

    class Queue:
        def move_all_to_active_or_backoff(
            self, event: object, *, old: object = None, new: object = None
        ) -> int:
            moved.append(str(event))
            return 0

    claims = Resource("persistentvolumeclaims", namespaced=True, kind="PersistentVolumeClaim", requeue=True)
    store = ObjectStore()
    import netsched.assemble as assemble_mod

    original = assemble_mod.OBJECT_KINDS
    assemble_mod.OBJECT_KINDS = (*original, claims)  # type: ignore[misc]
    try:
        _requeue_on_object_changes(store, Queue())  # type: ignore[arg-type]
    finally:
        assemble_mod.OBJECT_KINDS = original  # type: ignore[misc]
    store.apply(claims.key, "ADDED", _obj("data", "x"))
    store.apply(claims.key, "DELETED", _obj("data", "x"))
    store.apply(PODDISRUPTIONBUDGETS.key, "ADDED", _obj("guard", "x"))
    assert moved == ["PersistentVolumeClaimAdd", "PersistentVolumeClaimDelete"]


def _by_class(obj: Any) -> list[str]:
    spec = obj.get("spec") or {}
    if spec.get("broken"):
        raise ValueError("malformed")
    return [] if spec.get("claimRef") else [str(spec.get("class", ""))]


def test_an_index_follows_adds_changes_and_deletes_and_covers_objects_stored_before_it() -> None:
    store = ObjectStore()
    on = store.handler("persistentvolumes")
    on("ADDED", _obj("early", spec={"class": "fast"}))
    store.add_index("persistentvolumes", "by-class", _by_class)
    store.add_index("persistentvolumes", "by-class", lambda _o: ["ignored"])  # second call: kept first
    on("ADDED", _obj("a", spec={"class": "fast"}))
    on("ADDED", _obj("b", spec={"class": "slow"}))

    def names(value: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in store.by_index("persistentvolumes", "by-class", value))

    assert names("fast") == ["a", "early"] and names("slow") == ["b"] and names("ignored") == []
    on("MODIFIED", _obj("a", spec={"class": "fast", "claimRef": {"name": "c"}}))  # leaves the index
    on("MODIFIED", _obj("b", spec={"class": "fast"}))  # moves between values
    assert names("fast") == ["b", "early"] and names("slow") == []
    on("MODIFIED", _obj("b", spec={"broken": True}))  # an index function that raises: not indexed
    on("DELETED", _obj("early", spec={"class": "fast"}))
    assert names("fast") == [] and len(store.list("persistentvolumes")) == 2
    with pytest.raises(KeyError):
        store.by_index("persistentvolumes", "no-such-index", "fast")
