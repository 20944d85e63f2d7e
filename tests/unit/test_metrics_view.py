"""LoadView: derived once per poll and layout, shared by plugins, rows asked for equal all-rows reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from netsched.framework.snapshot import Snapshot
from netsched.metrics import (
    CPU,
    LINK_SPEED,
    MEMORY,
    NETWORK_RX,
    NETWORK_TX,
    MetricsHub,
    PrometheusArgs,
    QueryError,
)
from netsched.metrics.plugin_api import (
    RX_COL,
    cold_link_int_scores,
    cold_link_scores,
    network_load,
    resource_usage,
    to_int_scores,
)
from netsched.metrics.source import MetricSource
from netsched.metrics.view import LoadView, NetworkLoad
from netsched.testing.builders import make_node, make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import FakePrometheus, fake_hub

GIB = 1024**3


def world(n: int = 6) -> tuple[FakeClock, MetricSource, FakePrometheus, Snapshot, MetricsHub]:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    src = hub.source(PrometheusArgs())
    src.require(NETWORK_RX, NETWORK_TX, LINK_SPEED, CPU, MEMORY)
    now = clock.wall()
    names = [f"n{i}" for i in range(n)]
    fake.serve(src, NETWORK_RX, {m: (1e6 * (i + 1), now - i) for i, m in enumerate(names)})
    fake.serve(src, NETWORK_TX, {m: (2e6 * (n - i), now - i) for i, m in enumerate(names)})
    fake.serve(src, LINK_SPEED, {m: 1e8 for m in names[:-1]})  # the last node: speed unknown
    fake.serve(src, CPU, {m: (0.1 * i, now - 10 * i) for i, m in enumerate(names)})
    fake.serve(src, MEMORY, {m: 0.5 for m in names[1:]})  # n0: no memory series
    hub.poll_now()
    snap = Snapshot.of([make_node(m).capacity(cpu="4", memory="8Gi").info() for m in names])
    return clock, src, fake, snap, hub


def test_one_view_per_poll_and_layout_shared_by_every_reader() -> None:
    _, src, _, snap, hub = world()
    view = src.view(snap)
    assert src.view(snap) is view
    assert view.value(CPU) is src.view(snap).value(CPU)  # aligned once
    hub.poll_now()
    assert src.view(snap) is not view
    other = Snapshot.of(list(snap.nodes))
    assert src.view(other) is not src.view(snap)


def test_rows_asked_for_read_the_same_as_every_row() -> None:
    _, src, _, snap, _ = world()
    src.reserve(make_pod("p").req(cpu="1", memory="1Gi").info(), "n2")
    idx = np.array([4, 2, 0], dtype=np.int64)
    full, part = network_load(src, snap), network_load(src, snap, idx)
    assert part.busy.tolist() == full.busy[idx].tolist()
    assert part.fresh.tolist() == full.fresh[idx].tolist()
    np.testing.assert_array_equal(part.utilisation(), full.utilisation()[idx])
    for res in (CPU, MEMORY):
        a, b = resource_usage(src, snap, (res,))[res], resource_usage(src, snap, (res,), idx)[res]
        np.testing.assert_array_equal(b.utilisation, a.utilisation[idx])
        assert b.fresh.tolist() == a.fresh[idx].tolist()
    assert part.busy[1] == 8e6 + 1024 * 1024  # n2: tx busier; the reserved pod adds 1 MiB/s each way
    assert src.view(snap).estimates()[2, RX_COL] == 1024 * 1024


def test_freshness_follows_the_clock_without_a_new_poll() -> None:
    clock, src, _, snap, _ = world()
    view = src.view(snap)
    assert view.fresh(CPU).tolist() == [True] * 6  # ages 0..50 s, maxSampleAge 60 s
    clock.step(15)  # n5 (50 s old) and n4 (40 s) cross 60 s at 10 s and 20 s
    assert view.fresh(CPU).tolist() == [True] * 5 + [False]
    clock.step(10)
    assert view.fresh(CPU).tolist() == [True] * 4 + [False] * 2
    assert not view.fresh(MEMORY)[0]  # no series


def test_reads_of_a_few_rows_follow_the_clock_without_a_new_poll() -> None:
    """network() and usage() of rows say what fresh() says now, not what it said when they were
    first read (the view keeps their inputs in one block per kind)."""
    clock, src, _, snap, _ = world()
    view = src.view(snap)
    idx = np.array([5, 4, 0], dtype=np.int64)
    assert view.usage(CPU, idx).fresh.tolist() == [True, True, True]
    assert view.network(idx).fresh.tolist() == [True, True, True]
    clock.step(15)  # CPU of n5 is 65 s old; network samples (0..5 s old) are not yet
    assert view.usage(CPU, idx).fresh.tolist() == [False, True, True]
    assert view.network(idx).fresh.tolist() == [True, True, True]
    clock.step(42)  # network of n5 and n4 is 62 and 61 s old, n0's 57 s
    assert view.network(idx).fresh.tolist() == [False, False, True]
    assert view.usage(CPU, idx).fresh.tolist() == [False, False, True]
    assert view.network(idx).fresh.tolist() == view.fresh(NETWORK_RX)[idx].tolist()


def test_estimates_are_live_and_read_only() -> None:
    _, src, _, snap, _ = world()
    rows = src.view(snap).estimates()
    assert not rows.flags.writeable
    pod = make_pod("p").req(cpu="2").info()
    src.reserve(pod, "n1")
    assert src.view(snap).estimates()[1, 0] == pytest.approx(2000 * 0.85)
    src.unreserve(pod)
    assert not src.view(snap).estimates().any()


def test_fallback_is_decided_per_view_and_reads_requests() -> None:
    _, src, fake, snap, hub = world()
    fake.fail_all = QueryError("unreachable", "ConnectionError: refused", transient=True)
    hub.poll_now()
    view = src.view(snap)
    assert not view.measured
    use = view.usage(CPU, np.array([0, 1], dtype=np.int64))
    assert not use.measured and use.fresh.all() and use.utilisation.tolist() == [0.0, 0.0]


def test_derived_readings_are_built_once_per_view() -> None:
    _, src, _, snap, hub = world()
    built: list[int] = []

    def build(view: object) -> int:
        built.append(1)
        return len(built)

    assert src.view(snap).derived("graph", build) == 1
    assert src.view(snap).derived("graph", build) == 1
    hub.poll_now()
    assert src.view(snap).derived("graph", build) == 2


def kept_rows(src: MetricSource, snap: Snapshot, seen: list[list[int]]) -> np.ndarray:
    """A per-row result (CPU utilisation) that records the rows each compute call got."""
    view = src.view(snap)

    def compute(rows: np.ndarray) -> np.ndarray:
        seen.append(rows.tolist())
        return view.usage(CPU, rows).utilisation

    return view.per_row("test", compute)


def test_per_row_results_recompute_only_rows_whose_estimates_changed() -> None:
    _, src, _, snap, _ = world()
    seen: list[list[int]] = []
    first = kept_rows(src, snap, seen).copy()
    assert seen == [list(range(6))]
    kept_rows(src, snap, seen)
    assert len(seen) == 1  # nothing changed: nothing recomputed
    pod = make_pod("p").req(cpu="2").info()
    src.reserve(pod, "n3")
    after = kept_rows(src, snap, seen)
    assert seen[-1] == [3]
    assert after[3] == pytest.approx(first[3] + 2000 * 0.85 / 4000)
    np.testing.assert_array_equal(after, src.view(snap).usage(CPU, snap.all_rows).utilisation)
    src.unreserve(pod)
    np.testing.assert_array_equal(kept_rows(src, snap, seen), first)
    assert seen[-1] == [3]
    assert not kept_rows(src, snap, seen).flags.writeable


def test_per_row_results_recompute_everything_when_a_sample_ages_or_allocatable_changes() -> None:
    clock, src, _, snap, _ = world()
    seen: list[list[int]] = []
    kept_rows(src, snap, seen)
    src.view(snap).fresh(CPU)
    clock.step(15)  # n5's CPU sample ages out
    kept_rows(src, snap, seen)
    assert seen[-1] == list(range(6))
    n = len(seen)
    snap.set_node(2, make_node("n2").capacity(cpu="8", memory="8Gi").info())
    kept_rows(src, snap, seen)
    assert len(seen) == n + 1 and seen[-1] == list(range(6))
    assert kept_rows(src, snap, seen)[2] == pytest.approx(0.2)  # measured 0.2, no estimates


def test_per_row_results_are_not_kept_in_fallback() -> None:
    _, src, fake, snap, hub = world()
    fake.fail_all = QueryError("unreachable", "ConnectionError: refused", transient=True)
    hub.poll_now()
    seen: list[list[int]] = []
    kept_rows(src, snap, seen)
    kept_rows(src, snap, seen)
    assert seen == [list(range(6))] * 2  # requests change with every bind: read afresh


def test_per_row_results_recompute_marked_rows_only_when_asked_for() -> None:
    _, src, _, snap, _ = world()
    view = src.view(snap)
    seen: list[list[int]] = []

    def compute(rows: np.ndarray) -> np.ndarray:
        seen.append(rows.tolist())
        return view.usage(CPU, rows).utilisation

    view.per_row("lazy", compute)
    src.reserve(make_pod("a").req(cpu="1").info(), "n4")
    src.reserve(make_pod("b").req(cpu="1").info(), "n1")
    got = view.per_row("lazy", compute, np.array([2, 3], dtype=np.int64))
    assert len(seen) == 1  # n1 and n4 changed, neither asked for
    np.testing.assert_array_equal(got, view.usage(CPU, np.array([2, 3], dtype=np.int64)).utilisation)
    got = view.per_row("lazy", compute, np.array([0, 1], dtype=np.int64))
    assert seen[-1] == [1, 4]  # every marked row at once
    np.testing.assert_array_equal(got, view.usage(CPU, np.array([0, 1], dtype=np.int64)).utilisation)
    view.per_row("lazy", compute, np.array([4], dtype=np.int64))
    assert len(seen) == 2


def test_per_row_refuses_a_boolean_mask_for_rows() -> None:
    """Rows are read with take(), which would take a mask's True / False for rows 1 / 0."""
    _, src, _, snap, _ = world()
    view = src.view(snap)
    mask = np.zeros(len(snap), dtype=bool)
    with pytest.raises(TypeError, match="idx must be row numbers"):
        view.per_row("mask", lambda rows: view.usage(CPU, rows).utilisation, mask)


def test_each_source_has_its_own_view_even_when_they_share_a_poller() -> None:
    _, src, _, snap, hub = world()
    closed = hub.source(PrometheusArgs(stale_policy="failClosed"))
    assert closed.poller is src.poller  # same connection: one poller, one table
    assert closed.view(snap) is not src.view(snap)
    assert closed.view(snap).fail_closed and not src.view(snap).fail_closed


def test_a_reservation_is_marked_in_every_kept_result_from_one_read_of_the_changes() -> None:
    _, src, _, snap, _ = world()
    view = src.view(snap)
    seen: dict[str, list[list[int]]] = {"a": [], "b": []}

    def computer(key: str) -> Callable[[np.ndarray], np.ndarray]:
        def compute(rows: np.ndarray) -> np.ndarray:
            seen[key].append(rows.tolist())
            return view.usage(CPU, rows).utilisation

        return compute

    view.per_row("a", computer("a"))
    view.per_row("b", computer("b"))
    est = src.ledger
    calls = []
    changes = est.changes
    est.changes = lambda since, snapshot: calls.append(since) or changes(since, snapshot)  # type: ignore[method-assign]
    src.reserve(make_pod("p").req(cpu="1").info(), "n2")
    view.per_row("a", computer("a"))
    view.per_row("b", computer("b"))
    view.per_row("a", computer("a"))
    assert len(calls) == 1  # read once for both keys, not again while nothing changed
    assert seen == {"a": [list(range(6)), [2]], "b": [list(range(6)), [2]]}


def test_kept_results_see_an_estimate_expire_with_nothing_else_changing() -> None:
    """An estimate's lifetime ends between polls while every sample stays fresh: the kept
    result must not take 'no new reservation' for 'nothing changed'."""
    clock, src, _, snap, _ = world()
    src.ledger.args = replace(src.ledger.args, max_lifetime_seconds=5.0)
    seen: list[list[int]] = []
    src.reserve(make_pod("p").req(cpu="1").info(), "n3")
    with_pod = kept_rows(src, snap, seen)[3]
    clock.step(6)  # the CPU samples (0..50 s old) stay within maxSampleAge (60 s)
    expired = kept_rows(src, snap, seen)
    assert seen[-1] == [3]  # only the estimate's row
    assert with_pod == pytest.approx(expired[3] + 1000 * 0.85 / 4000)
    np.testing.assert_array_equal(expired, src.view(snap).usage(CPU, snap.all_rows).utilisation)


def test_kept_rounded_cold_link_scores_equal_the_rounded_formula() -> None:
    """cold_link_int_scores keeps rows that score on their own; any other row (n5: no link
    speed) sends the rows asked for through the whole formula."""
    clock, src, _, snap, _ = world()
    own, mixed = np.array([3, 0, 1], dtype=np.int64), np.array([5, 2], dtype=np.int64)

    def both(idx: np.ndarray) -> tuple[list[int], list[int]]:
        want = to_int_scores(cold_link_scores(src, snap, idx))
        return cold_link_int_scores(src, snap, idx).tolist(), want.tolist()

    for _ in range(2):  # computed, then kept
        got, want = both(own)
        assert got == want and min(got) >= 0
        got, want = both(mixed)
        assert got == want
    src.reserve(make_pod("p").info(), "n0")
    got, want = both(own)
    assert got == want
    assert both(np.zeros(0, dtype=np.int64)) == ([], [])
    clock.step(57)  # n3..n5 network samples (3..5 s old) age out
    got, want = both(own)
    assert got == want


def test_marked_rows_are_recomputed_for_every_key_at_once_reading_the_network_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, src, _, snap, _ = world()
    view = src.view(snap)
    reads: list[list[int]] = []
    network = LoadView._network

    def counted(self: LoadView, idx: np.ndarray) -> NetworkLoad:
        reads.append(idx.tolist())
        return network(self, idx)

    monkeypatch.setattr(LoadView, "_network", counted)
    busy = view.per_row("busy", lambda rows: view.network(rows).busy).copy()
    fresh = view.per_row("fresh", lambda rows: view.network(rows).fresh).copy()
    assert reads == [list(range(6))] * 2
    src.reserve(make_pod("p").info(), "n4")  # 1 MiB/s each way by default
    got = view.per_row("busy", lambda rows: view.network(rows).busy, np.array([4], dtype=np.int64))
    assert reads[2:] == [[4]]  # both keys recomputed from one read
    assert got[0] == busy[4] + 1024 * 1024
    assert view.per_row("fresh", lambda rows: view.network(rows).fresh).tolist() == fresh.tolist()
    assert reads[2:] == [[4]]
