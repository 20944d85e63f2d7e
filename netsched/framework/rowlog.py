"""Which rows changed since a reader last looked: one bounded log for every per-row cache.

A reader that keeps per-row results (LoadView's kept results, TrafficAffinity's
placed-pod index) remembers the log's counter when it last synced and asks
`since(counter)` for the rows changed after it, instead of comparing every row.
Each change is one counter step; `restart()` ends what the log can answer (a new
row layout: the logged rows name old rows), and a reader further behind than the
log keeps (or than a restart) gets None and re-reads every row.  Not thread-safe:
its owner (the snapshot, the estimator under its lock) serialises the calls.
"""

from __future__ import annotations

MAX_ROWS = 4096  # changes kept for readers (each reads them once per cycle or pod)


class RowLog:
    __slots__ = ("counter", "_rows", "_base")

    def __init__(self, counter: int = 0) -> None:
        self.counter = counter  # the latest change's number (0: none yet); never goes back
        self._rows: list[int] = []  # row changed at counter _base + i + 1
        self._base = counter

    def append(self, row: int) -> int:
        """Log a change of `row`; its counter."""
        self.counter += 1
        self._rows.append(row)
        if len(self._rows) > MAX_ROWS:  # a reader this far behind re-reads every row
            del self._rows[: MAX_ROWS // 2]
            self._base += MAX_ROWS // 2
        return self.counter

    def restart(self, step: bool = False) -> None:
        """Answer nothing before now (the logged rows are of an old layout); `step`: count this
        as a change of every row, so that a reader at the current counter re-reads them too."""
        if step:
            self.counter += 1
        self._rows = []
        self._base = self.counter

    def since(self, counter: int) -> list[int] | None:
        """Rows changed after `counter` (in order, may repeat); None when the log no longer
        holds them all (re-read every row)."""
        if counter < self._base:
            return None
        return self._rows[counter - self._base :]
