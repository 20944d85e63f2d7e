"""The read side of the metrics cache: what a sample says about the nodes, derived once.

Every metric plugin of every profile reads one source's nodes through a
LoadView (`source.view(snapshot)`).  A view is built at most once per
(metrics table, fallback state, snapshot layout) and kept in the snapshot's
cache, so the per-node work a sample implies (aligning series with rows,
freshness masks, the fallback decision) is done once per poll, not once per
pod and plugin.  What changes between two polls is kept current in place:
the estimator's per-row totals (updated O(1) at reserve / unreserve) and the
freshness masks (recomputed only when a sample actually ages out).

Per pod, a plugin asks for the rows its cycle looks at (`idx`: the chunk
being filtered, the feasible nodes being scored) and gets those rows only,
so the load-aware profile costs what the default profile costs: work over
the nodes the cycle considers, not over the whole cluster.

Not every reading is a node column: `derived(name, build)` memoises any value
computed from the view's table (e.g. a graph of workload pairs), once per
sample generation, for every plugin that asks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from netsched.framework.snapshot import BoolArray, FloatArray, IntArray, Snapshot
from netsched.metrics.cache import MetricsTable, Series
from netsched.metrics.estimation import CPU_COL, MEMORY_COL, RX_COL, TX_COL
from netsched.metrics.ledger import Coverage
from netsched.metrics.queries import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX

T = TypeVar("T")
_NO_BOUNDS = (float("-inf"), float("inf"))


def coverage(stamps: Callable[[str], FloatArray]) -> Coverage:
    """The ledger's sample timestamps per resource group from each metric's (`stamps(metric)`,
    NaN where none): a network estimate ends when both directions have been sampled after it."""
    return stamps(CPU), stamps(MEMORY), np.fmin(stamps(NETWORK_RX), stamps(NETWORK_TX))


class _Rows(Protocol):
    def rows(
        self,
        snapshot: Snapshot,
        version: int,
        coverage: Callable[[], Coverage],
        measured: Callable[[str], FloatArray | None] | None = None,
    ) -> FloatArray: ...
    def changes(self, since: int, snapshot: Snapshot) -> tuple[int, list[int] | None]: ...
    def settled(self, version: int, snapshot: Snapshot, now: float) -> int | None: ...


class _Source(Protocol):
    """What a view reads of its MetricSource (source.py builds views; this avoids the cycle)."""

    @property
    def fail_closed(self) -> bool: ...
    @property
    def max_age(self) -> float: ...
    @property
    def ledger(self) -> _Rows: ...
    @property
    def wall(self) -> Callable[[], float]: ...
    def requires(self, metric: str) -> bool: ...
    def keyed_series(self, metric: str, table: MetricsTable) -> Series | None: ...
    def aligned(
        self, metric: str, snapshot: Snapshot, table: MetricsTable
    ) -> tuple[FloatArray, FloatArray]: ...
    def requested_bandwidth(self, snapshot: Snapshot, idx: IntArray) -> tuple[FloatArray, FloatArray]: ...
    def measured_usage(self, key: str, table: MetricsTable | None = None) -> FloatArray | None: ...


@dataclass(frozen=True, slots=True)
class NetworkLoad:
    """Network load of the rows asked for (arrays in the order of `idx`)."""

    busy: FloatArray  # bytes/s of the busier direction (links are full duplex)
    speed: FloatArray  # link speed bytes/s, NaN when unknown
    fresh: BoolArray
    measured: bool
    # Where the link speed is known (finite, > 0): the view passes its own, read once per view;
    # None (the default, for a NetworkLoad built elsewhere) computes it from `speed`.
    known: BoolArray | None = None
    # Each direction (bytes/s; `busy` is the larger): a pod's own load adds to each its way.
    # None (for a NetworkLoad built elsewhere): both read as `busy`.
    rx: FloatArray | None = None
    tx: FloatArray | None = None
    # utilisation(), worked out on first use (the readings of a recomputation are shared by
    # LoadThreshold's verdicts and NetworkTraffic's scores: one division for both).
    _utilisation: FloatArray | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.known is None:
            object.__setattr__(self, "known", speed_known(self.speed))

    def with_pod(self, rx: FloatArray | float, tx: FloatArray | float) -> FloatArray:
        """Utilisation of the busier direction with a pod's (rx, tx) bytes/s added (NaN where
        the link speed is unknown)."""
        own_rx = self.busy if self.rx is None else self.rx
        own_tx = self.busy if self.tx is None else self.tx
        busy = np.fmax(own_rx + rx, own_tx + tx)
        out = np.full(len(busy), np.nan)
        np.divide(busy, self.speed, out=out, where=self.speed_known())
        return out

    def speed_known(self) -> BoolArray:
        """Rows whose link speed is known (finite, > 0)."""
        assert self.known is not None  # set by __post_init__
        return self.known

    def utilisation(self) -> FloatArray:
        """busy / link speed; NaN where the link speed is unknown (read-only, shared)."""
        out = self._utilisation
        if out is None:
            out = np.full(len(self.busy), np.nan)
            np.divide(self.busy, self.speed, out=out, where=self.speed_known())
            out.flags.writeable = False
            object.__setattr__(self, "_utilisation", out)
        return out


@dataclass(frozen=True, slots=True)
class Usage:
    """CPU or memory utilisation of the rows asked for (0..1, may exceed 1 with estimates)."""

    utilisation: FloatArray
    fresh: BoolArray
    measured: bool


class LoadView:
    """One source's readings of one snapshot layout as of one metrics table."""

    __slots__ = (
        "measured",
        "table",
        "source",
        "snapshot",
        "_values",
        "_stamps",
        "_fresh",
        "_fresh_epoch",
        "_fresh_bounds",
        "_max_age",
        "_derived",
        "_per_row",
        "_kept_as_of",
        "_dirty",
        "_marked_gen",
        "_clean_idx",
        "_alloc",
        "_alloc_version",
        "_clean_gen",
        "_batch",
        "_blocks",
        "ledger",
    )

    def __init__(
        self,
        src: _Source,
        snapshot: Snapshot,
        table: MetricsTable,
        measured: bool,
        ledger: _Rows | None = None,
    ) -> None:
        self.measured = measured  # False: fallback, readings come from requests
        self.table = table
        self.source = src
        self.snapshot = snapshot
        # The ledger whose corrections the readings take: the source's, or a fork a what-if
        # snapshot carries (MetricSource.what_if).
        self.ledger = src.ledger if ledger is None else ledger
        self._values: dict[str, FloatArray] = {}
        self._stamps: dict[str, FloatArray] = {}
        # metric -> (mask, wall time it was computed at, oldest fresh stamp)
        self._fresh: dict[str, tuple[BoolArray, float, float]] = {}
        self._fresh_epoch = 0  # bumped whenever a freshness mask is replaced
        self._fresh_bounds = _NO_BOUNDS  # (latest computation, oldest fresh sample) over the masks
        self._max_age = src.max_age  # (a reload that changes it makes a new source, so a new view)
        self._derived: dict[str, Any] = {}
        self._per_row: dict[Hashable, _Kept] = {}
        self._kept_as_of = (-1, -1)  # (freshness epoch, allocatable version) of the kept results
        self._dirty: BoolArray = np.zeros(0, dtype=bool)  # rows to recompute in every kept result
        self._marked_gen = -1  # estimator generation `_dirty` reflects
        # The last `idx` found without marked rows, and the generation it was checked at.
        self._clean_idx: IntArray | None = None
        self._clean_gen = -1
        self._alloc: dict[str, FloatArray] = {}
        self._alloc_version = -1
        # While kept results are recomputed: (their rows, readings of those rows by kind), so
        # the plugins' computes read each of network() / usage() once for all of them.
        self._batch: tuple[IntArray, dict[Hashable, Any]] | None = None
        # network() / usage() inputs by kind: ((freshness epoch, allocatable version), block)
        self._blocks: dict[str, tuple[tuple[int, int], FloatArray]] = {}

    @property
    def fail_closed(self) -> bool:
        return self.source.fail_closed

    # ------------------------------------------------------------ per-row columns (all rows)

    def value(self, metric: str) -> FloatArray:
        """The polled value per snapshot row (NaN: no sample); read-only, shared."""
        got = self._values.get(metric)
        if got is None:
            got, self._stamps[metric] = self.source.aligned(metric, self.snapshot, self.table)
            self._values[metric] = got
        return got

    def stamps(self, metric: str) -> FloatArray:
        """Sample timestamp per snapshot row (NaN: no sample); read-only, shared."""
        if metric not in self._stamps:
            self.value(metric)
        return self._stamps[metric]

    def fresh(self, metric: str) -> BoolArray:
        """Rows whose sample is no older than maxSampleAgeSeconds, now.

        Recomputed only when the clock went back or the oldest fresh sample aged
        out since the last call: as time goes forward no stale row turns fresh.
        """
        got = self._fresh.get(metric)
        if got is not None and self._batch is not None:
            return got[0]  # kept results are being recomputed: _settle revalidated every mask
        now = self.source.wall()
        max_age = self._max_age
        if got is not None and got[1] <= now and now - got[2] <= max_age:
            return got[0]
        ts = self.stamps(metric)
        mask = (now - ts) <= max_age  # NaN (no sample) compares False
        oldest = float(ts[mask].min()) if mask.any() else float("inf")
        mask.flags.writeable = False
        self._fresh[metric] = (mask, now, oldest)
        if got is not None:  # a first mask changes no result kept so far: none read it
            self._fresh_epoch += 1
        # Conservative for a replaced mask (an older oldest): _revalidate then recomputes these.
        self._fresh_bounds = (max(self._fresh_bounds[0], now), min(self._fresh_bounds[1], oldest))
        return mask

    def _revalidate(self, now: float) -> None:
        """Every freshness mask current at wall time `now`.  One comparison while none can have
        changed: every mask holds while the latest computation is not in the future and the
        oldest fresh sample of any mask has not aged out."""
        latest, oldest = self._fresh_bounds
        if latest <= now and now - oldest <= self._max_age:
            return
        for metric in tuple(self._fresh):
            self.fresh(metric)  # recomputes only the masks that changed
        got = self._fresh.values()
        self._fresh_bounds = (max(g[1] for g in got), min(g[2] for g in got)) if got else _NO_BOUNDS

    def estimates(self) -> FloatArray:
        """The ledger's corrections of this view's readings: (rows, 4) with the estimation
        module's CPU_COL, MEMORY_COL, RX_COL, TX_COL (load of pods placed since a node's
        samples, less what the samples still hold of pods gone: may be negative); live and
        read-only."""
        batch = self._batch
        if batch is None:
            return self._ledger_rows()
        # Kept results are being recomputed: _settle has just expired and corrected the entries.
        got: FloatArray | None = batch[1].get(_ESTIMATES)
        if got is None:
            got = batch[1][_ESTIMATES] = self._ledger_rows()
        return got

    def _ledger_rows(self) -> FloatArray:
        return self.ledger.rows(self.snapshot, self.table.version, self._coverage, self._measured)

    def _measured(self, key: str) -> FloatArray | None:
        return self.source.measured_usage(key, self.table)

    def _coverage(self) -> Coverage:
        n = len(self.snapshot)
        return coverage(lambda m: self.stamps(m) if self.source.requires(m) else np.full(n, np.nan))

    # ------------------------------------------------------------ per pod: the rows a cycle looks at

    def network(self, idx: IntArray) -> NetworkLoad:
        """Network load of rows `idx`: measured + estimated, or requested bandwidth in fallback."""
        return self.batched(NETWORK_RX, idx, self._network)

    def _network(self, idx: IntArray) -> NetworkLoad:
        if not self.measured:  # (a link speed does not go stale: it is read as polled)
            rx, tx = self.source.requested_bandwidth(self.snapshot, idx)
            speed = self.value(LINK_SPEED).take(idx)
            known = self.derived(_SPEED_KNOWN, _speed_known).take(idx)
            return NetworkLoad(np.fmax(rx, tx), speed, np.ones(len(idx), dtype=bool), False, known, rx, tx)
        rows = self._inputs(NETWORK_RX, idx)
        est = self._estimates_of(idx)
        # (A reading less what it still holds of pods gone is never below nothing.)
        rx = np.maximum(rows[:, 0] + est[:, RX_COL], 0.0)
        tx = np.maximum(rows[:, 1] + est[:, TX_COL], 0.0)
        return NetworkLoad(np.fmax(rx, tx), rows[:, 2], rows[:, 3] > 0, True, rows[:, 4] > 0, rx, tx)

    def usage(self, resource: str, idx: IntArray) -> Usage:
        """CPU or memory (netsched.metrics CPU / MEMORY) utilisation of rows `idx`."""
        return self.batched(resource, idx, lambda rows: self._usage(resource, rows))

    def batched(self, kind: Hashable, idx: IntArray, read: Callable[[IntArray], T]) -> T:
        """read(idx), once per `kind` for the rows kept results are being recomputed on, so the
        computes of several per_row keys share a reading (they must not modify what it returns);
        otherwise just read(idx)."""
        batch = self._batch
        if batch is None or idx is not batch[0]:
            return read(idx)
        got: T | None = batch[1].get(kind)
        if got is None:
            got = batch[1][kind] = read(idx)
        return got

    def _usage(self, resource: str, idx: IntArray) -> Usage:
        col = CPU_COL if resource == CPU else MEMORY_COL
        if not self.measured:
            requested = self.snapshot.nonzero_requested[idx, col]
            return Usage(
                requested / self.allocatable(resource).take(idx), np.ones(len(idx), dtype=bool), False
            )
        rows = self._inputs(resource, idx)
        extra = np.divide(self._estimates_of(idx)[:, col], rows[:, 2])
        extra += rows[:, 0]
        return Usage(np.maximum(extra, 0.0, out=extra), rows[:, 1] > 0, True)

    def _inputs(self, kind: str, idx: IntArray) -> FloatArray:
        """Rows `idx` of what network() (kind NETWORK_RX: rx, tx, link speed, fresh, speed known)
        or usage(kind) (value, fresh, allocatable) reads of the sample, freshness current: one
        take() of a per-view block instead of one per column (1.0 / 0.0 for the masks)."""
        if self._batch is None:  # (recomputing kept results: _settle revalidated the masks)
            self._revalidate(self.source.wall())
        as_of = (self._fresh_epoch, self.snapshot.allocatable_version)
        got = self._blocks.get(kind)
        if got is None or got[0] != as_of:
            if kind == NETWORK_RX:
                cols = [
                    self.value(NETWORK_RX),
                    self.value(NETWORK_TX),
                    self.value(LINK_SPEED),
                    self.fresh(NETWORK_RX) & self.fresh(NETWORK_TX),
                    self.derived(_SPEED_KNOWN, _speed_known),
                ]
            else:
                cols = [self.value(kind), self.fresh(kind), self.allocatable(kind)]
            # Building may compute a first mask (no new epoch) but replaces none: as_of holds.
            got = self._blocks[kind] = (as_of, np.column_stack(cols).astype(np.float64))
        return got[1].take(idx, axis=0)

    def _estimates_of(self, idx: IntArray) -> FloatArray:
        """The estimates' rows `idx` ((rows, 4), once per recomputation of the kept results:
        read-only); take() rather than est[idx, col], numpy's slow mixed-indexing path."""
        return self.batched(_ESTIMATE_ROWS, idx, lambda rows: self.estimates().take(rows, axis=0))

    def allocatable(self, resource: str) -> FloatArray:
        """The nodes' allocatable `resource` (CPU or MEMORY) per row as floats, +inf where a node
        has none (so that any share of it is 0); read-only, rebuilt when an allocatable changes."""
        snapshot = self.snapshot
        if self._alloc_version != snapshot.allocatable_version:
            self._alloc.clear()
            self._alloc_version = snapshot.allocatable_version
        got = self._alloc.get(resource)
        if got is None:
            # The metric names "cpu" and "memory" are also the node table's resource columns.
            got = snapshot.allocatable[:, snapshot.col[resource]].astype(np.float64)
            got[~(got > 0)] = np.inf
            got.flags.writeable = False
            self._alloc[resource] = got
        return got

    # ------------------------------------------------------------ per-row results kept between pods

    def per_row(
        self, key: Hashable, compute: Callable[[IntArray], NDArray[Any]], idx: IntArray | None = None
    ) -> NDArray[Any]:
        """`compute(rows)` for rows `idx` (row numbers; default: every row, read-only), kept
        for the view's life.  For a result that does not depend on the pod (a filter's verdict, a
        pod-independent score); `compute` must be elementwise (row i's result reads only row i).

        Kept up to date lazily: a row whose estimates changed is marked once for every key, and
        the marked rows are recomputed together when a call asks for one of them (a search's
        chunks rotate over the nodes, so the node the last pod went to is seldom in the next
        pod's chunk), for every key read since the last such recomputation, the keys'
        computes sharing their network() and usage() readings of those rows; a key not read
        since owes those rows and recomputes all it owes when a call asks for one of them.
        Everything is recomputed after a sample ages out or an allocatable changes.  Not kept
        in fallback, where readings come from requests that change with every bind.  The
        first `compute` given for a key is the one kept.

        `idx` is only read, and the marked rows are looked for once per `idx` array object
        until a reservation marks more (the scorers of a cycle pass the same one): do not
        modify an array after passing it."""
        snapshot = self.snapshot
        if idx is not None and idx.dtype.kind == "b":  # take() would read True / False as rows 1 / 0
            raise TypeError("LoadView.per_row: idx must be row numbers, got a boolean mask")
        if not self.measured:
            return compute(snapshot.all_rows if idx is None else idx)
        self._settle()
        kept = self._per_row.get(key)
        if kept is None:
            # Computed over every row as of now: rows marked for the other keys are right here.
            kept = self._per_row[key] = _Kept(np.array(compute(snapshot.all_rows)), compute)
        else:
            if idx is None:
                if self._dirty.any():
                    self._recompute_marked(kept)
            elif idx is not self._clean_idx or self._clean_gen != self._marked_gen:
                # (The scorers of one cycle ask for the same rows: checked once for both.)
                if np.count_nonzero(self._dirty.take(idx)):  # (count_nonzero: ~2x faster than any())
                    self._recompute_marked(kept)
                self._clean_idx, self._clean_gen = idx, self._marked_gen
            kept.read = True
            if kept.owed is not None:
                self._pay(kept, idx)
        if idx is not None:
            # take(): the same rows as result[idx], ~4x faster on a 2-D result (numpy's fancy
            # indexing has a slow general path; a cycle asks for a few hundred rows).
            return kept.result.take(idx, axis=0)
        out = kept.result.view()
        out.flags.writeable = False
        return out

    def per_row_complete(
        self, key: Hashable, compute: Callable[[IntArray], IntArray], idx: IntArray
    ) -> IntArray | None:
        """per_row(key, compute, idx) for a `compute` that gives -1 where a row has no result
        of its own (LoadAware's kept scores, NetworkTraffic's rounded ones): None when a row of
        `idx` holds -1.  While no row of the kept result does, that costs no look at the rows."""
        out = self.per_row(key, compute, idx)
        kept = self._per_row.get(key) if self.measured else None
        if kept is not None:
            if kept.negative is None:
                kept.negative = bool(len(kept.result)) and int(kept.result.min()) < 0
            if not kept.negative:
                return out
        return out if not len(out) or out.min() >= 0 else None

    def forget(self, key: Hashable) -> None:
        """Stop keeping per_row(key)'s result (a plugin that bounds what it asks the view to keep)."""
        self._per_row.pop(key, None)

    def _recompute_marked(self, reading: _Kept) -> None:
        """The marked rows recomputed for `reading` and every key read since the last
        recomputation; a key not read since (e.g. LoadAware's carried columns once every pod's
        load has kept scores) owes them instead, and pays when next read (`_pay`)."""
        dirty = self._dirty
        due = []
        for kept in self._per_row.values():
            if kept.read or kept is reading:
                kept.read = False
                due.append(kept)
            elif kept.owed is None:
                kept.owed = dirty.copy()
            else:
                kept.owed |= dirty
        rows = dirty.nonzero()[0]
        self._recompute(due, rows)
        dirty[rows] = False

    def _pay(self, kept: _Kept, idx: IntArray | None) -> None:
        """The rows `kept` owes recomputed (all of them, once one is asked for)."""
        owed = kept.owed
        assert owed is not None
        if idx is not None and not np.count_nonzero(owed.take(idx)):
            return
        kept.owed = None
        self._recompute((kept,), owed.nonzero()[0])

    def _recompute(self, due: Iterable[_Kept], rows: IntArray) -> None:
        """Rows `rows` of each kept result in `due` recomputed, their computes sharing their
        network() and usage() readings of those rows (`batched`)."""
        self._batch = (rows, {})
        try:
            for kept in due:
                got = kept.result[rows] = kept.compute(rows)
                if kept.negative is False and len(got) and got.min() < 0:
                    kept.negative = True
        finally:
            self._batch = None

    def _settle(self) -> None:
        """Estimates expired and covered, freshness masks current, the kept results dropped if a
        sample aged out or an allocatable changed, and the rows whose estimates changed marked,
        as of now.  Three plugins ask per pod; while nothing changed (no estimate due to
        expire, no new reservation) that is one clock read and a few comparisons, and a
        reservation's row is marked once for all of them."""
        est = self.ledger
        now = self.source.wall()
        gen = est.settled(self.table.version, self.snapshot, now)
        latest, oldest = self._fresh_bounds
        if (
            gen == self._marked_gen  # no new reservation, nothing to expire or cover
            and latest <= now  # no freshness mask to recompute (_revalidate's test)
            and now - oldest <= self._max_age
            and self.snapshot.allocatable_version == self._kept_as_of[1]
        ):
            return
        if gen is None:
            self.estimates()  # expire and cover estimates first: they are part of the results
        self._revalidate(now)
        as_of = (self._fresh_epoch, self.snapshot.allocatable_version)
        if as_of != self._kept_as_of:
            self._per_row.clear()
            self._dirty = np.zeros(len(self.snapshot), dtype=bool)
            self._kept_as_of = as_of
        if gen is None or gen != self._marked_gen:
            gen, changed = est.changes(self._marked_gen, self.snapshot)
            if gen != self._marked_gen and self._per_row:  # none kept: the next is computed as of now
                if changed is None:
                    self._dirty[:] = True
                elif len(changed) <= _FEW:  # usually the row of the one pod reserved since
                    for row in changed:
                        self._dirty[row] = True
                else:
                    self._dirty[np.array(changed, dtype=np.int64)] = True
            self._marked_gen = gen

    # ------------------------------------------------------------ anything else a sample implies

    def series(self, metric: str) -> Series | None:
        """The view's answer to a query keyed otherwise than by node (require_keyed_query)."""
        return self.source.keyed_series(metric, self.table)

    def derived(self, name: str, build: Callable[[LoadView], T]) -> T:
        """`build(self)` once per view (sample generation, fallback state, layout), shared by
        every plugin asking for `name` (e.g. a traffic graph read from `self.table`)."""
        if name not in self._derived:
            self._derived[name] = build(self)
        got: T = self._derived[name]
        return got


@dataclass(slots=True)
class _Kept:
    result: NDArray[Any]
    compute: Callable[[IntArray], NDArray[Any]]
    negative: bool | None = None  # whether a row holds a negative (per_row_complete); None: not asked
    read: bool = True  # read (or computed) since the marked rows were last recomputed
    owed: BoolArray | None = None  # rows marked while not read: recomputed when next read


class RepeatedLoads:
    """The pod loads seen in the current view, and the few whose per-row results the view keeps
    (LoadAware's scores of a load, LoadThreshold's verdicts on it).

    Per view (one poll and node layout): a load seen once is remembered (up to REMEMBER);
    seen again, its results are kept for every row if fewer than KEEP loads are (keeping one
    costs a pass over every row, and each kept load is recomputed on the rows reservations
    change).  A kept load is never displaced within a view: with more loads taking turns, the
    others take the per-pod path every time, instead of every promotion paying for a pass over
    the whole cluster.  The next view starts afresh.  A stream of pods that all differ never
    keeps anything and costs what it did before."""

    KEEP = 4
    REMEMBER = 16

    def __init__(self) -> None:
        self._view: LoadView | None = None
        self._seen: OrderedDict[tuple[float, ...], None] = OrderedDict()
        self._kept: set[tuple[float, ...]] = set()

    def repeated(self, shape: tuple[float, ...], view: LoadView) -> bool:
        """Whether `view` keeps (now) the results of pods of load `shape`."""
        if view is not self._view:
            self._view = view
            self._seen.clear()
            self._kept.clear()
        kept = self._kept
        if shape in kept:
            return True
        seen = self._seen
        if shape not in seen:
            seen[shape] = None
            if len(seen) > self.REMEMBER:
                seen.popitem(last=False)
            return False
        if len(kept) >= self.KEEP:
            return False
        del seen[shape]
        kept.add(shape)
        return True


_SPEED_KNOWN = "netsched.metrics/link-speed-known"
_FEW = 8  # rows marked one by one (an index array costs more below this)
_ESTIMATES = "netsched.metrics/estimates"
_ESTIMATE_ROWS = "netsched.metrics/estimate-rows"


def _speed_known(view: LoadView) -> BoolArray:
    return speed_known(view.value(LINK_SPEED))


def speed_known(speed: FloatArray) -> BoolArray:
    """Where a link speed is known: finite and > 0 (NaN: no sample)."""
    return np.isfinite(speed) & (speed > 0)


def ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    """num / den, 0 where den is 0 (a node without allocatable is not ours to score)."""
    out = np.zeros(len(num))
    np.divide(num, den, out=out, where=den > 0)
    return out
