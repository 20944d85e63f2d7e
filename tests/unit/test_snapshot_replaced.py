"""Snapshot.replaced_since: the rows a per-row index must re-read, from the log or, for a reader
further behind than the log keeps, from row_version."""

from __future__ import annotations

import pytest

from netsched.framework import rowlog
from netsched.framework.snapshot import Snapshot
from netsched.testing.builders import make_node, node_infos


def test_replaced_rows_from_the_log_and_beyond_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rowlog, "MAX_ROWS", 4)
    nodes = node_infos([make_node(f"n{i}") for i in range(6)], [])
    snap = Snapshot.of(nodes)
    start = snap.row_counter
    for row in (1, 3, 1):
        snap.set_node(row, nodes[row].clone())
    mid = snap.row_counter
    assert snap.replaced_since(start) == [1, 3, 1]
    assert snap.replaced_since(mid) == []
    for row in (0, 5, 2):
        snap.set_node(row, nodes[row].clone())
    assert snap.replaced_since(mid) == [0, 5, 2]
    # The log dropped its oldest entries: a reader that far behind gets every newer row.
    assert sorted(set(snap.replaced_since(start))) == [0, 1, 2, 3, 5]


def test_what_if_copy_logs_its_own_replacements() -> None:
    # Before: the copy took the counter but not the log (base 0), so replaced_since(counter)
    # sliced past the log's end and missed rows replaced on the copy.
    nodes = node_infos([make_node(f"n{i}") for i in range(4)], [])
    live = Snapshot.of(nodes)
    for row in (0, 1, 2):
        live.set_node(row, nodes[row].clone())
    trial = live.what_if()
    seen = trial.row_counter
    assert seen == live.row_counter == 3
    trial.set_node(3, nodes[3].clone())
    assert trial.replaced_since(seen) == [3]
    assert sorted(set(trial.replaced_since(0))) == [0, 1, 2, 3]  # older: from row_version
    assert live.replaced_since(seen) == []  # the live snapshot is untouched


def test_rebuild_forgets_the_old_layouts_rows() -> None:
    # Before: after shrinking, the log still named row 3 of the old layout.
    nodes = node_infos([make_node(f"n{i}") for i in range(4)], [])
    snap = Snapshot.of(nodes)
    snap.set_node(3, nodes[3].clone())
    before = snap.row_counter
    snap.rebuild(nodes[:2])
    assert len(snap) == 2 and snap.replaced_since(0) == []
    assert snap.row_counter == before  # never goes back: an old reader's counter stays valid
    snap.set_node(1, nodes[1].clone())
    assert snap.replaced_since(before) == [1] and snap.replaced_since(0) == [1]
