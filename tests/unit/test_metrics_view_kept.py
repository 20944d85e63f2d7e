"""LoadView's kept per-row results: forget(), allocatable(), the rows-checked-once shortcut, _settle.

Each test compares what a kept result returns with what the view's live readings (usage(),
fresh()) say at that moment, after the one change the shortcut under test could miss.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from netsched.framework.snapshot import Snapshot
from netsched.metrics import CPU, MEMORY, MetricsHub, PrometheusArgs
from netsched.metrics.args import EstimationArgs
from netsched.metrics.client import QueryError
from netsched.metrics.source import MetricSource
from netsched.metrics.view import LoadView
from netsched.testing.builders import make_node, make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import fake_hub

GIB = 1024**3
NAMES = [f"n{i}" for i in range(6)]


def world(lifetime: float | None = None) -> tuple[FakeClock, MetricSource, Snapshot, MetricsHub]:
    """Six nodes of 4 cpu / 8Gi except n2 (no cpu) and n4 (no memory); CPU samples 0..50 s old
    (maxSampleAge 60 s), memory samples fresh."""
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    estimation = EstimationArgs() if lifetime is None else EstimationArgs(max_lifetime_seconds=lifetime)
    src = hub.source(PrometheusArgs(estimation=estimation))
    src.require(CPU, MEMORY)
    now = clock.wall()
    fake.serve(src, CPU, {m: (0.1 * i, now - 10 * i) for i, m in enumerate(NAMES)})
    fake.serve(src, MEMORY, dict.fromkeys(NAMES, 0.5))
    hub.poll_now()
    capacity = {"n2": ("0", "8Gi"), "n4": ("4", "0")}
    nodes = [
        make_node(m).capacity(cpu=capacity.get(m, ("4", "8Gi"))[0], memory=capacity.get(m, ("4", "8Gi"))[1])
        for m in NAMES
    ]
    return clock, src, Snapshot.of([n.info() for n in nodes]), hub


def rows(*r: int) -> np.ndarray:
    return np.asarray(r, dtype=np.int64)


def cpu_usage(view: LoadView, seen: list[list[int]] | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """A per_row compute: CPU utilisation (measured + estimated over allocatable), recording rows."""

    def compute(r: np.ndarray) -> np.ndarray:
        if seen is not None:
            seen.append(r.tolist())
        return view.usage(CPU, r).utilisation

    return compute


def live(view: LoadView, idx: np.ndarray) -> list[float]:
    return view.usage(CPU, idx).utilisation.tolist()


# ------------------------------------------------------------------ forget


def test_forget_drops_the_kept_result_and_its_compute() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    seen: list[list[int]] = []
    view.per_row("k", cpu_usage(view, seen))
    view.per_row("other", cpu_usage(view))
    view.forget("k")
    view.forget("never kept")  # no error: nothing to drop
    src.reserve(make_pod("p").req(cpu="1").info(), "n3")
    view.per_row("other", cpu_usage(view), rows(3))  # recomputes the marked row for every kept key
    assert seen == [list(range(6))]  # the forgotten key's compute is not called any more
    # Asked again, the key is computed afresh over every row, with the compute given now.
    got = view.per_row("k", lambda r: np.full(len(r), 7.0), rows(1, 3))
    assert got.tolist() == [7.0, 7.0]


# ------------------------------------------------------------------ allocatable


def test_allocatable_is_inf_for_none_read_only_and_built_once() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    cpu, mem = view.allocatable(CPU), view.allocatable(MEMORY)
    assert cpu.tolist() == [4000.0, 4000.0, np.inf, 4000.0, 4000.0, 4000.0]
    assert mem.tolist() == [8.0 * GIB] * 4 + [np.inf] + [8.0 * GIB]
    assert cpu.dtype == np.float64 and not cpu.flags.writeable
    assert view.allocatable(CPU) is cpu


def test_allocatable_is_rebuilt_when_an_allocatable_changes() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    before = view.allocatable(CPU)
    src.reserve(make_pod("p").req(cpu="2").info(), "n1")
    idx = rows(1, 2)
    kept = view.per_row("cpu", cpu_usage(view), idx).tolist()
    assert kept == pytest.approx([0.1 + 1700 / 4000, 0.2])  # n2: no cpu, the estimate adds 0
    # The same labels, taints and images: the snapshot keeps its cache, hence this view.
    for row, cpu in ((1, 8000), (2, 2000)):
        old = snap.nodes[row]
        snap.set_node(row, dataclasses.replace(old, allocatable=dict(old.allocatable, cpu=cpu)))
    assert src.view(snap) is view
    after = view.allocatable(CPU)
    assert after.tolist() == [4000.0, 8000.0, 2000.0, 4000.0, 4000.0, 4000.0]
    assert before.tolist()[1:3] == [4000.0, np.inf]  # the old array is not written to
    assert view.allocatable(MEMORY).tolist()[4] == np.inf
    got = view.per_row("cpu", cpu_usage(view), idx)
    assert got.tolist() == pytest.approx([0.1 + 1700 / 8000, 0.2]) == live(view, idx)
    old = snap.nodes[3]
    snap.set_node(3, dataclasses.replace(old, allocatable=dict(old.allocatable, cpu=0)))
    assert view.allocatable(CPU)[3] == np.inf


# ------------------------------------------------------------------ the same idx checked once


def test_the_same_idx_array_after_a_reservation_on_one_of_its_rows_is_recomputed() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    idx = rows(5, 3, 0)  # one array object, as the scorers of one cycle share
    first = view.per_row("a", cpu_usage(view), idx).tolist()
    assert view.per_row("a", cpu_usage(view), idx).tolist() == first
    src.reserve(make_pod("p").req(cpu="1").info(), "n3")
    got = view.per_row("a", cpu_usage(view), idx).tolist()
    assert got == live(view, idx) and got[1] == pytest.approx(first[1] + 850 / 4000)


def test_the_same_idx_array_read_by_two_keys_around_a_reservation() -> None:
    """Key a checks idx, a reservation lands on one of its rows, key b asks for the same idx,
    then a again: both see the reservation."""
    _, src, snap, _ = world()
    view = src.view(snap)
    view.per_row("a", cpu_usage(view))
    view.per_row("b", cpu_usage(view))
    idx = rows(0, 1, 3)
    view.per_row("a", cpu_usage(view), idx)
    src.reserve(make_pod("p").req(cpu="2").info(), "n1")
    want = live(view, idx)
    assert view.per_row("b", cpu_usage(view), idx).tolist() == want
    assert view.per_row("a", cpu_usage(view), idx).tolist() == want
    src.reserve(make_pod("q").req(cpu="1").info(), "n0")
    want = live(view, idx)
    assert view.per_row("a", cpu_usage(view), idx).tolist() == want
    assert view.per_row("b", cpu_usage(view), idx).tolist() == want


def test_a_row_changed_outside_the_checked_idx_is_seen_by_another_idx() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    view.per_row("a", cpu_usage(view))
    idx = rows(0, 1)
    src.reserve(make_pod("p").req(cpu="2").info(), "n5")
    view.per_row("a", cpu_usage(view), idx)  # n5 not asked for: checked clean for idx
    assert view.per_row("a", cpu_usage(view), idx).tolist() == live(view, idx)
    other = rows(5, 0)
    assert view.per_row("a", cpu_usage(view), other).tolist() == live(view, other)
    src.unreserve(make_pod("p").req(cpu="2").info())
    assert view.per_row("a", cpu_usage(view), other).tolist() == live(view, other)
    assert view.per_row("a", cpu_usage(view), idx).tolist() == live(view, idx)


# ------------------------------------------------------------------ keys not read: owed rows


def test_a_key_not_read_since_the_last_recomputation_owes_its_rows_and_pays_when_read() -> None:
    """Marked rows are recomputed only for keys read since the last recomputation; any other
    key owes them (across recomputations) and recomputes all it owes once asked for one."""
    _, src, snap, _ = world()
    view = src.view(snap)
    seen: dict[str, list[list[int]]] = {"a": [], "b": []}
    view.per_row("a", cpu_usage(view, seen["a"]))
    view.per_row("b", cpu_usage(view, seen["b"]))
    src.reserve(make_pod("p").req(cpu="1").info(), "n3")
    view.per_row("a", cpu_usage(view, seen["a"]), rows(3))
    assert seen["b"][1:] == [[3]]  # b was read (computed) since the last recomputation
    for pod, node in (("q", "n5"), ("r", "n1")):
        src.reserve(make_pod(pod).req(cpu="2").info(), node)
        view.per_row("a", cpu_usage(view, seen["a"]), rows(int(node[1])))
    assert seen["a"][1:] == [[3], [5], [1]] and seen["b"][1:] == [[3]]  # b owes n5 and n1
    idx = rows(0, 3)
    assert view.per_row("b", cpu_usage(view, seen["b"]), idx).tolist() == live(view, idx)
    assert seen["b"][1:] == [[3]]  # none of the rows asked for is owed
    idx = rows(5, 2)
    assert view.per_row("b", cpu_usage(view, seen["b"]), idx).tolist() == live(view, idx)
    assert seen["b"][1:] == [[3], [1, 5]]  # everything owed, at once
    assert view.per_row("b", cpu_usage(view, seen["b"])).tolist() == live(view, snap.all_rows)
    assert len(seen["b"]) == 3


def test_a_key_read_again_joins_the_next_recomputation_and_pays_what_it_owes_for_all_rows() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    seen: list[list[int]] = []
    view.per_row("a", cpu_usage(view))
    view.per_row("b", cpu_usage(view, seen))
    for pod, node in (("p", "n0"), ("q", "n4")):  # the second recomputation: b owes n4
        src.reserve(make_pod(pod).req(cpu="1").info(), node)
        view.per_row("a", cpu_usage(view), rows(int(node[1])))
    src.reserve(make_pod("r").req(cpu="1").info(), "n2")
    # b asks for all rows: n2 (marked) is recomputed for both keys, then n4 (owed) for b.
    assert view.per_row("b", cpu_usage(view, seen)).tolist() == live(view, snap.all_rows)
    assert seen[1:] == [[0], [2], [4]]
    src.reserve(make_pod("s").req(cpu="1").info(), "n3")
    view.per_row("a", cpu_usage(view), rows(3))  # b was read since: recomputed with a
    assert seen[-1] == [3]
    assert view.per_row("b", cpu_usage(view, seen), rows(3, 4)).tolist() == live(view, rows(3, 4))


# ------------------------------------------------------------------ _settle's fast path


def test_a_sample_ageing_out_between_two_calls_changes_the_result() -> None:
    """No reservation in between: only the clock moves past maxSampleAgeSeconds for n5's
    CPU sample (50 s old at the poll) and then n4's (40 s)."""
    clock, src, snap, _ = world()
    view = src.view(snap)
    idx = rows(5, 4, 1)
    fresh = lambda r: view.fresh(CPU)[r]  # noqa: E731 - a per_row compute
    assert view.per_row("fresh", fresh, idx).tolist() == [True, True, True]
    assert view.per_row("fresh", fresh, idx).tolist() == [True, True, True]
    clock.step(15)
    assert view.per_row("fresh", fresh, idx).tolist() == [False, True, True]
    clock.step(10)
    assert view.per_row("fresh", fresh, idx).tolist() == [False, False, True]
    assert view.per_row("fresh", fresh).tolist() == [True, True, True, True, False, False]


def test_an_estimate_expiring_between_two_calls_changes_the_result() -> None:
    """No reservation in between: only the clock moves past the estimate's maxLifetimeSeconds
    (samples all stay fresh), with the same idx array each time."""
    clock, src, snap, _ = world(lifetime=5.0)
    view = src.view(snap)
    idx = rows(3, 0)
    view.per_row("cpu", cpu_usage(view), idx)
    src.reserve(make_pod("p").req(cpu="2").info(), "n3")
    with_pod = view.per_row("cpu", cpu_usage(view), idx).tolist()
    assert with_pod == pytest.approx([0.3 + 1700 / 4000, 0.0])
    clock.step(3)
    assert view.per_row("cpu", cpu_usage(view), idx).tolist() == with_pod  # not expired yet
    clock.step(3)
    assert view.per_row("cpu", cpu_usage(view), idx).tolist() == pytest.approx([0.3, 0.0])
    assert view.per_row("cpu", cpu_usage(view), idx).tolist() == live(view, idx)


def test_the_wall_clock_going_back_between_two_calls_changes_the_result() -> None:
    """A wall clock stepped back (NTP) makes a sample that had aged out fresh again."""
    clock, src, snap, _ = world()
    view = src.view(snap)
    idx = rows(5, 0)
    fresh = lambda r: view.fresh(CPU)[r]  # noqa: E731 - a per_row compute
    clock.step(15)
    assert view.per_row("fresh", fresh, idx).tolist() == [False, True]
    clock.step(-15)
    assert view.per_row("fresh", fresh, idx).tolist() == [True, True]


def test_a_network_load_built_without_known_works_it_out_from_the_link_speed() -> None:
    """NetworkLoad is public (plugin_api): one built with its four original fields still has
    its known link speeds and utilisation."""
    from netsched.metrics.plugin_api import NetworkLoad

    load = NetworkLoad(
        np.array([5.0, 5.0, 5.0, 5.0]),
        np.array([10.0, np.nan, 0.0, np.inf]),
        np.ones(4, dtype=bool),
        True,
    )
    assert load.speed_known().tolist() == [True, False, False, False]
    got = load.utilisation()
    assert got[0] == 0.5 and np.isnan(got[1:]).all()


# ------------------------------------------------------------------ per_row_complete


def busy_marked(view: LoadView, limit: float) -> Callable[[np.ndarray], np.ndarray]:
    """A per_row compute of integers: CPU utilisation in percent, -1 above `limit` (so a
    reservation can turn a row to -1)."""

    def compute(r: np.ndarray) -> np.ndarray:
        u = view.usage(CPU, r).utilisation
        return np.where(u > limit, -1, np.round(100 * u)).astype(np.int64)

    return compute


def test_per_row_complete_is_none_exactly_when_a_row_asked_for_holds_minus_one() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    # Measured CPU 0.0 .. 0.5: rows 4 and 5 are above 0.35.
    assert view.per_row_complete("k", busy_marked(view, 0.35), rows(0, 1, 2)) is not None
    assert view.per_row_complete("k", busy_marked(view, 0.35), rows(1, 5)) is None
    got = view.per_row_complete("k", busy_marked(view, 0.35), rows(3, 0))
    assert got is not None and got.tolist() == [30, 0]
    empty = view.per_row_complete("k", busy_marked(view, 0.35), rows())
    assert empty is not None and empty.tolist() == []


def test_per_row_complete_sees_a_row_a_reservation_turns_to_minus_one() -> None:
    _, src, snap, _ = world()
    view = src.view(snap)
    compute = busy_marked(view, 0.9)
    assert view.per_row_complete("k", compute, rows(0, 1, 3)) is not None  # nothing above 0.9
    # 3 cpu x 0.85 (cpuFactor) over 4 cpu lifts n1 from 0.1 to 0.74, then 1.38 with a second pod.
    src.reserve(make_pod("a").req(cpu="3").info(), "n1")
    got = view.per_row_complete("k", compute, rows(0, 1, 3))
    assert got is not None and got.tolist() == [0, 74, 30]
    src.reserve(make_pod("b").req(cpu="3").info(), "n1")
    assert view.per_row_complete("k", compute, rows(0, 1, 3)) is None
    got = view.per_row_complete("k", compute, rows(0, 3))
    assert got is not None and got.tolist() == [0, 30]


def test_per_row_complete_in_fallback_computes_and_checks_the_rows_asked_for() -> None:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    fake.fail_all = QueryError("unreachable", "ConnectionError: refused", transient=True)
    hub.poll_now()
    view = src.view(Snapshot.of([make_node(m).info() for m in NAMES]))
    assert not view.measured
    assert view.per_row_complete("k", lambda r: np.where(r == 2, -1, r), rows(0, 1)) is not None
    assert view.per_row_complete("k", lambda r: np.where(r == 2, -1, r), rows(1, 2)) is None
