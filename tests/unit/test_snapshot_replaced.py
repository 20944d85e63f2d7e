"""Snapshot.replaced_since: the rows a per-row index must re-read, from the log or, for a reader
further behind than the log keeps, from row_version."""

from __future__ import annotations

import pytest

from netsched.framework import snapshot as snapshot_module
from netsched.framework.snapshot import Snapshot
from netsched.testing.builders import make_node, node_infos


def test_replaced_rows_from_the_log_and_beyond_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_module, "_REPLACED_MAX", 4)
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
