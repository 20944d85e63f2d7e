"""Reflectors over real HTTP against the fake API server: events, 410 relists, resets, bookmarks."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from netsched.kube import (
    NODES,
    PODDISRUPTIONBUDGETS,
    PODS,
    ExponentialBackoff,
    KubeAPI,
    Reflector,
    Resource,
)
from netsched.testing.builders import make_pod
from netsched.testing.fakeapi import FakeAPIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(bookmark_interval=0.2) as s:
        yield s


class Collector:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[str, str]] = []

    def __call__(self, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self.events.append((kind, obj["metadata"]["name"]))

    def has(self, *expected: tuple[str, str]) -> bool:
        with self._lock:
            return all(e in self.events for e in expected)


def fast() -> ExponentialBackoff:
    return ExponentialBackoff(initial=0.01, maximum=0.05)


@pytest.fixture
def nodes(api: KubeAPI, server: FakeAPIServer) -> Iterator[tuple[Reflector, Collector]]:
    server.create("nodes", {"metadata": {"name": "n1"}})
    seen = Collector()
    r = api.reflector(NODES, seen, watch_timeout=5, backoff=fast()).start()
    assert r.wait_for_sync(2)
    yield r, seen
    r.stop()
    assert not r.running


def test_list_and_watch_see_added_modified_deleted(
    server: FakeAPIServer, nodes: tuple[Reflector, Collector]
) -> None:
    r, seen = nodes
    server.create("nodes", {"metadata": {"name": "n2"}})
    server.patch("nodes", "n1", {"metadata": {"labels": {"zone": "a"}}})
    server.delete("nodes", "n2")
    server.wait_for(lambda: seen.has(("DELETED", "n2")), timeout=2)
    assert seen.events == [("ADDED", "n1"), ("ADDED", "n2"), ("MODIFIED", "n1"), ("DELETED", "n2")]
    [n1] = r.objects()
    assert n1["metadata"]["labels"] == {"zone": "a"}
    assert int(r.resource_version) > int(n1["metadata"]["resourceVersion"])  # the deletion came later


def test_relists_after_compaction_410(server: FakeAPIServer, nodes: tuple[Reflector, Collector]) -> None:
    r, seen = nodes
    # Hold the next watch request while the history it needs is written and compacted away.
    fault = server.inject_fault("GET", r"/api/v1/nodes\?.*watch=", status=None, delay=0.2)
    server.store.close_watchers()
    server.wait_for(lambda: fault.hits >= 1, timeout=2)
    server.create("nodes", {"metadata": {"name": "n3"}})
    server.compact()
    server.wait_for(lambda: r.relists >= 1 and seen.has(("ADDED", "n3")), timeout=2)
    assert r.lists == 2
    assert seen.events == [("ADDED", "n1"), ("ADDED", "n3")]


def test_reconnects_after_a_connection_reset(
    server: FakeAPIServer, nodes: tuple[Reflector, Collector]
) -> None:
    r, seen = nodes
    fault = server.inject_fault("GET", r"/api/v1/nodes\?.*watch=", reset=True)
    server.store.close_watchers()
    server.wait_for(lambda: fault.hits == 1 and r.reconnects >= 1, timeout=2)
    server.create("nodes", {"metadata": {"name": "n4"}})
    server.wait_for(lambda: seen.has(("ADDED", "n4")), timeout=2)
    assert r.lists == 1  # resumed from its resourceVersion, no relist


def test_bookmarks_advance_the_resource_version(
    server: FakeAPIServer, nodes: tuple[Reflector, Collector]
) -> None:
    r, seen = nodes
    before = int(r.resource_version)
    for i in range(3):  # writes to another resource move the global resourceVersion
        server.create("pods", make_pod(f"p{i}").obj())
    target = str(server.resource_version)
    server.wait_for(lambda: r.resource_version == target, timeout=2)
    assert r.bookmarks >= 1
    assert int(target) > before
    assert seen.events == [("ADDED", "n1")]


def test_stop_is_prompt_in_the_middle_of_a_watch(api: KubeAPI) -> None:
    r = api.reflector(NODES, Collector(), watch_timeout=5, backoff=fast()).start()
    assert r.wait_for_sync(2)
    time.sleep(0.05)  # let it block reading the watch
    started = time.monotonic()
    r.stop()
    assert time.monotonic() - started < 0.5
    assert not r.running


def test_pod_reflector_skips_finished_pods(server: FakeAPIServer, api: KubeAPI) -> None:
    server.create("pods", make_pod("running").obj())
    server.create("pods", make_pod("done").set("status.phase", "Succeeded").obj())
    seen = Collector()
    r = api.reflector(PODS, seen, watch_timeout=5, backoff=fast()).start()
    try:
        assert r.wait_for_sync(2)
        server.create("pods", make_pod("later").namespace("other").obj())
        server.wait_for(lambda: seen.has(("ADDED", "later")), timeout=2)
        assert seen.events == [("ADDED", "running"), ("ADDED", "later")]
        assert {o["metadata"]["namespace"] for o in r.objects()} == {"default", "other"}
    finally:
        r.stop()


def test_pdb_reflector(server: FakeAPIServer, api: KubeAPI) -> None:
    seen = Collector()
    server.create("policy/poddisruptionbudgets", {"metadata": {"name": "web"}, "spec": {"minAvailable": 1}})
    r = api.reflector(PODDISRUPTIONBUDGETS, seen, watch_timeout=5, backoff=fast()).start()
    try:
        assert r.wait_for_sync(2)
        server.wait_for(lambda: seen.has(("ADDED", "web")), timeout=2)
        assert r.available
    finally:
        r.stop()


def test_pdbs_forbidden_means_running_without_them(server: FakeAPIServer, api: KubeAPI) -> None:
    server.inject_fault("GET", "poddisruptionbudgets", status=403, count=-1)
    r = api.reflector(PODDISRUPTIONBUDGETS, Collector(), watch_timeout=5, backoff=fast()).start()
    try:
        assert r.wait_for_sync(2)
        assert not r.available
        assert r.objects() == []
    finally:
        r.stop()


def test_a_reflector_list_is_not_retried_by_the_client(server: FakeAPIServer, api: KubeAPI) -> None:
    # The reflector loop is the one retry: a failed list counts there and lists again.
    server.create("nodes", {"metadata": {"name": "n1"}})
    fault = server.inject_fault("GET", r"/api/v1/nodes\?(?!.*watch=)", status=503)
    seen = Collector()
    r = api.reflector(NODES, seen, watch_timeout=5, backoff=fast()).start()
    try:
        assert r.wait_for_sync(2)
        assert fault.hits == 1
        assert (r.reconnects, r.lists) == (1, 1)
        assert seen.events == [("ADDED", "n1")]
    finally:
        r.stop()


def test_a_new_kind_is_one_table_entry(server: FakeAPIServer, api: KubeAPI) -> None:
    leases = Resource("leases", group="coordination.k8s.io", namespaced=True)
    server.create("coordination.k8s.io/leases", {"metadata": {"name": "a", "namespace": "x"}})
    server.create("coordination.k8s.io/leases", {"metadata": {"name": "b", "namespace": "y"}})
    assert [o["metadata"]["name"] for o in api.list_raw(leases).items] == ["a", "b"]
    assert [o["metadata"]["name"] for o in api.list_raw(leases.where(namespace="y")).items] == ["b"]
    seen = Collector()
    r = api.reflector(leases.where(namespace="x"), seen, watch_timeout=5, backoff=fast()).start()
    try:
        assert r.wait_for_sync(2)
        server.create("coordination.k8s.io/leases", {"metadata": {"name": "c", "namespace": "x"}})
        server.create("coordination.k8s.io/leases", {"metadata": {"name": "d", "namespace": "y"}})
        server.delete("coordination.k8s.io/leases", "a", "x")
        server.wait_for(lambda: seen.has(("DELETED", "a")), timeout=2)
        assert seen.events == [("ADDED", "a"), ("ADDED", "c"), ("DELETED", "a")]
        assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in r.objects()] == [("x", "c")]
    finally:
        r.stop()
