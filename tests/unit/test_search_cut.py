"""NodeSearch.find_feasible stops at the want-th feasible node as a one-by-one search would.

kube (schedule_one.go, one node at a time) walks the candidates from the rotating start,
stops at the want-th feasible node and starts the next search right after it.  netsched
filters chunks and cuts the last one at that node; these tests check the cut (which
feasible nodes, how many evaluated, the next start) against that one-by-one walk, with
filters rejecting some nodes, a start that wraps past the last row, a PreFilter node set,
and nodes with nominated pods (filtered one by one, after the chunk's batch).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from netsched.framework.cycle_state import CycleState
from netsched.framework.diagnosis import Diagnosis
from netsched.framework.extension_points import FilterPlugin
from netsched.framework.search import NodeSearch, num_feasible_nodes_to_find
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_framework, plugin_of

POD = make_pod("p").info()


class RejectRows(FilterPlugin):
    """Rejects the nodes whose number (name "n<row>") is in `rejected` (set by the test)."""

    name = "RejectRows"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.rejected: set[int] = set()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if int(node.name[1:]) in self.rejected:
            return Status.unschedulable("node(s) were rejected")
        return Status.success()


@dataclass(frozen=True)
class Search:
    """One search: where it starts, which rows the filter rejects, PreFilter's rows."""

    start: int
    rejected: frozenset[int]
    allowed: tuple[int, ...] | None = None


def walk(n: int, s: Search, want: int) -> tuple[list[int], int, int]:
    """The one-by-one search: (feasible rows in the order found, nodes evaluated, next start)."""
    order = list(s.allowed) if s.allowed is not None else [(s.start + i) % n for i in range(n)]
    found: list[int] = []
    evaluated = 0
    for row in order:
        evaluated += 1
        if row not in s.rejected:
            found.append(row)
            if len(found) == want:
                break
    # A PreFilter node set searches it from its first row and leaves the rotating start alone.
    nxt = (s.start + evaluated) % n if s.allowed is None else s.start
    return found, evaluated, nxt


def run(
    n: int,
    searches: list[Search],
    *,
    percentage: int | None = None,
    nominated: frozenset[int] = frozenset(),
) -> None:
    """Each search in turn on one NodeSearch (its chunk sizes follow the previous pass rates),
    checked against the walk."""
    names = [f"n{i}" for i in range(n)]
    snap = Snapshot.of(node_infos([make_node(m) for m in names]))
    others = {names[r]: [make_pod(f"nom-{r}").info()] for r in sorted(nominated)}
    fwk = build_framework([RejectRows], percentage_of_nodes_to_score=percentage, nominated=others)
    plugin = plugin_of(fwk, RejectRows)
    search = NodeSearch(fwk)
    for i, s in enumerate(searches):
        search.next_start_node_index = s.start
        plugin.rejected = set(s.rejected)
        allowed = None if s.allowed is None else np.asarray(s.allowed, dtype=np.int64)
        want = num_feasible_nodes_to_find(n if allowed is None else len(allowed), percentage)
        diag = Diagnosis(n, np.zeros(n, dtype=np.int8))
        feasible, evaluated = search.find_feasible(CycleState(), POD, snap, allowed, diag)
        found, evaluated_want, next_want = walk(n, s, want)
        ctx = f"search {i}: {s.start=} {want=}"
        if nominated:  # rows with nominated pods are checked after the chunk's batch
            assert sorted(feasible.tolist()) == sorted(found), ctx
        else:
            assert feasible.tolist() == found, ctx
        assert evaluated == evaluated_want, ctx
        assert search.next_start_node_index == next_want, ctx


def every(k: int, n: int, offset: int = 0) -> frozenset[int]:
    return frozenset(range(offset % k, n, k))


@pytest.mark.parametrize(
    ("n", "searches"),
    [
        pytest.param(130, [Search(0, frozenset())], id="none rejected"),
        pytest.param(130, [Search(0, every(7, 130))], id="every 7th rejected"),
        pytest.param(130, [Search(120, every(7, 130))], id="start wraps past the last row"),
        pytest.param(130, [Search(129, every(3, 130))], id="start at the last row"),
        pytest.param(130, [Search(50, frozenset(range(60, 130)))], id="too few feasible: all evaluated"),
        pytest.param(130, [Search(30, frozenset(range(0, 130, 2)))], id="half rejected, cut in a 2nd chunk"),
        pytest.param(
            300,
            [Search(280, every(5, 300)), Search(0, every(4, 300, 1)), Search(0, frozenset(range(200)))],
            id="a sequence: the next start and chunk sizes carry over",
        ),
        pytest.param(
            260,
            [Search(77, every(6, 260), tuple(range(1, 260, 2)))],
            id="PreFilter node set with rejections",
        ),
        pytest.param(
            260,
            [Search(5, frozenset(), tuple(range(40, 200)))],
            id="PreFilter node set, none rejected",
        ),
    ],
)
def test_cut_matches_the_one_by_one_walk(n: int, searches: list[Search]) -> None:
    run(n, searches)


def test_cut_matches_the_walk_with_a_percentage_of_nodes_to_score() -> None:
    run(1000, [Search(990, every(9, 1000)), Search(0, every(2, 1000)), Search(0, frozenset())], percentage=20)


# With every 7th row rejected, the 100th feasible row from row 0 is row 116; from row 120, row 106.
@pytest.mark.parametrize(
    ("n", "searches", "nominated"),
    [
        pytest.param(130, [Search(0, every(7, 130))], frozenset({120, 125}), id="after the cut"),
        pytest.param(130, [Search(120, every(7, 130))], frozenset({110, 111}), id="wrapped, after the cut"),
        pytest.param(130, [Search(0, every(7, 130))], frozenset({14, 70}), id="rejected, before the cut"),
    ],
)
def test_cut_matches_the_walk_with_nominated_rows(
    n: int, searches: list[Search], nominated: frozenset[int]
) -> None:
    run(n, searches, nominated=nominated)


@pytest.mark.parametrize(
    ("start", "nominated"),
    [
        pytest.param(0, frozenset({3}), id="before the cut"),
        pytest.param(0, frozenset({116}), id="the cut row itself"),
        pytest.param(120, frozenset({125}), id="wrapped, before the cut"),
    ],
)
def test_cut_matches_the_walk_with_a_feasible_nominated_row_up_to_the_cut(
    start: int, nominated: frozenset[int]
) -> None:
    run(130, [Search(start, every(7, 130))], nominated=nominated)


def test_cut_matches_the_walk_randomised() -> None:
    rng = random.Random(31)
    for _ in range(30):
        n = rng.randrange(100, 400)
        rate = rng.choice([0.0, 0.05, 0.3, 0.7, 0.95])
        searches = []
        for _ in range(3):
            rejected = frozenset(r for r in range(n) if rng.random() < rate)
            allowed = None
            if rng.random() < 0.3:
                allowed = tuple(sorted(rng.sample(range(n), rng.randrange(1, n))))
            searches.append(Search(rng.randrange(n), rejected, allowed))
        run(n, searches, percentage=rng.choice([None, 10, 40]))
