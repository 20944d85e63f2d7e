"""KeyedHeap: a heap with lookup and lazy removal by uid, checked against a sorted list."""

from __future__ import annotations

import random

from test_queue_helpers import pod

from netsched.queue.heap import KeyedHeap
from netsched.queue.policy import pod_changed


def test_push_pop_remove_replace_match_a_reference_model() -> None:
    rng = random.Random(7)
    heap: KeyedHeap[int] = KeyedHeap(lambda item, seq: item)
    model: dict[str, tuple[int, int]] = {}  # uid -> (value, push order)
    order = 0
    for _ in range(5000):
        op = rng.random()
        uid = f"u{rng.randrange(200)}"
        if op < 0.5:
            value = rng.randrange(50)
            heap.push(uid, value)
            model[uid] = (value, order)
            order += 1
        elif op < 0.7:
            assert heap.remove(uid) == (model.pop(uid)[0] if uid in model else None)
        else:
            expected = min(model.items(), key=lambda kv: kv[1]) if model else None
            got = heap.pop()
            if expected is None:
                assert got is None
            else:
                assert got == expected[1][0]
                del model[expected[0]]
        assert len(heap) == len(model)
        assert len(heap._heap) <= 2 * len(model) + 65  # noqa: SLF001 - dead entries are compacted


def test_ties_pop_in_push_order_and_peek_does_not_remove() -> None:
    heap: KeyedHeap[str] = KeyedHeap(lambda item, seq: 0)
    for name in "abc":
        heap.push(name, name)
    assert heap.peek() == "a" and len(heap) == 3
    heap.remove("a")
    assert heap.peek() == "b"
    assert [heap.pop(), heap.pop(), heap.pop()] == ["b", "c", None]
    assert heap.peek() is None


def test_get_contains_items() -> None:
    heap: KeyedHeap[int] = KeyedHeap(lambda item, seq: item)
    heap.push("x", 3)
    heap.push("y", 1)
    heap.push("x", 2)
    assert heap.get("x") == 2 and heap.get("z") is None
    assert "y" in heap and "z" not in heap
    assert sorted(heap.items()) == [1, 2]


def test_pod_changed_ignores_status_and_bookkeeping() -> None:
    base = pod("a")
    status = pod("a", nominated="n1")
    status.raw["metadata"]["resourceVersion"] = "99"
    status.raw["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    assert not pod_changed(base, status)
    assert pod_changed(base, pod("a", labels={"x": "y"}))
    assert pod_changed(base, pod("a", priority=3))
    assert pod_changed(pod("a", gates=["g"]), base)
    # Records without raw JSON are compared field by field.
    bare_old, bare_new = pod("a"), pod("a", nominated="n1")
    bare_old.raw, bare_new.raw = {}, {}
    assert not pod_changed(bare_old, bare_new)
    bare_new.labels = {"k": "v"}
    assert pod_changed(bare_old, bare_new)
