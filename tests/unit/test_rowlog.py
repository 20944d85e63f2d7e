"""RowLog: the rows changed since a reader's counter, None once the log no longer holds them."""

from __future__ import annotations

import pytest

from netsched.framework import rowlog
from netsched.framework.rowlog import RowLog


def test_rows_since_a_counter_in_order_with_repeats() -> None:
    log = RowLog()
    assert log.counter == 0 and log.since(0) == []
    assert [log.append(r) for r in (4, 2, 4)] == [1, 2, 3]
    assert log.since(0) == [4, 2, 4]
    assert log.since(1) == [2, 4]
    assert log.since(3) == []


def test_a_reader_behind_the_kept_rows_gets_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rowlog, "MAX_ROWS", 4)
    log = RowLog()
    for r in range(5):  # the fifth change drops the oldest two
        log.append(r)
    assert log.since(1) is None
    assert log.since(2) == [2, 3, 4]


@pytest.mark.parametrize(("step", "counter"), [(False, 2), (True, 3)])
def test_restart_answers_nothing_before_it(step: bool, counter: int) -> None:
    log = RowLog()
    log.append(7)
    log.append(8)
    log.restart(step=step)
    assert log.counter == counter
    assert log.since(1) is None  # logged before the restart: of an old layout
    # A reader at the counter from before a stepped restart is behind it: it re-reads every row.
    assert log.since(2) == ([] if not step else None)
    log.append(1)
    assert log.since(counter) == [1]


def test_a_log_started_at_a_counter_goes_on_from_it() -> None:
    log = RowLog(10)
    assert log.counter == 10 and log.since(10) == [] and log.since(9) is None
    assert log.append(0) == 11
