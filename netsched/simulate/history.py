"""The simulated cluster's true state over time, and what a Prometheus reading makes of it.

Prometheus never reports "now".  A scrape samples every counter and gauge
every `scrapeIntervalSeconds`; a query at time t sees the samples up to the
last scrape s <= t.  `rate(counter[W])` is then the average of the true rate
over the window [s - W, s] (the counter's increase over it, divided by W), and
a gauge is its value at s.  So a pod that is gone still counts in a rate for
up to W after it left, fading out, a new pod's load ramps in over W, and a
reading changes only once per scrape.  (Prometheus' own rate() divides the
increase between the first and last samples inside the window and
extrapolates to its edges; with samples every scrape interval that is this
average to within one interval at the window's edges.  netsched/simulate/README.md
says so.)

This is the overlap the scheduler's ledger corrects readings by
(netsched.metrics.ledger.held), written here on its own and over arrays: the
simulator is the reference the ledger's corrections are checked against, so it
must not borrow them (tests/unit/test_simulate_window.py keeps the two equal).

The true state is kept so that those averages are exact: each placed pod is
an interval [its start, its deletion) on a node, cut into rows of constant
load where its load changes (`podLoad` in the timeline); a node's background
is a Track of curves, one per timeline change.  Everything between two of
those times is constant (or, for a background series, linear), so a window's
average is a sum over pieces: numpy over the rows, no time stepping.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework.snapshot import BoolArray, FloatArray, IntArray
from netsched.simulate.units import Curve

# A time within this of a scrape counts as that scrape (float sums of poll intervals).
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Window:
    """What one reading covers: a rate() is the average over [end - length, end], a gauge the
    value at end (the last scrape at or before the query)."""

    end: float
    length: float

    @classmethod
    def at(cls, t: float, scrape_interval: float, length: float) -> Window:
        """The window a query at `t` reads: scrapes at multiples of `scrape_interval` (0: every
        moment is a scrape)."""
        if scrape_interval <= 0:
            return cls(t, length)
        return cls(math.floor(t / scrape_interval + _EPS) * scrape_interval, length)

    @property
    def start(self) -> float:
        return self.end - self.length

    def share(self, start: FloatArray, end: FloatArray) -> FloatArray:
        """The fraction of the window each interval [start, end) covers; with no length, 1 where
        the interval holds the window's end (a gauge)."""
        if self.length <= 0:
            return self.holds(start, end).astype(np.float64)
        lo = np.maximum(start, self.start)
        hi = np.minimum(end, self.end)
        out: FloatArray = np.clip((hi - lo) / self.length, 0.0, 1.0)
        return out

    def holds(self, start: FloatArray, end: FloatArray) -> BoolArray:
        """Where [start, end) holds the window's end: what a gauge scraped then sees."""
        return (start <= self.end) & (self.end < end)

    def pieces(self, cuts: FloatArray) -> list[tuple[float, float]]:
        """(piece start, weight) of the window cut at `cuts`: the state at a piece's start holds
        through it, and the weights (its share of the window) add up to 1.  No length: the
        window's end alone, weight 1."""
        if self.length <= 0:
            return [(self.end, 1.0)]
        inside = cuts[(cuts > self.start) & (cuts < self.end)]
        points = np.unique(np.concatenate(([self.start], inside, [self.end])))
        return [(float(u), float(v - u) / self.length) for u, v in zip(points[:-1], points[1:], strict=True)]


class Track:
    """A value over time made of curves, each from its own time on (the scenario's `metrics:`
    from the start, then each timeline `load` change): piecewise linear, exactly averaged."""

    def __init__(self, curve: Curve) -> None:
        self._from: list[float] = [-math.inf]
        self._curves: list[Curve] = [curve]

    def change(self, at: float, curve: Curve) -> None:
        """From `at` on (later than every earlier change) the value follows `curve`."""
        self._from.append(at)
        self._curves.append(curve)

    @property
    def changes(self) -> list[float]:
        return self._from[1:]

    def at(self, t: float) -> float:
        i = np.searchsorted(self._from, t, side="right") - 1
        return self._curves[int(i)].at(t)

    def mean(self, w: Window) -> float:
        if w.length <= 0:
            return self.at(w.end)
        i = int(np.searchsorted(self._from, w.end, side="right")) - 1
        if self._from[i] <= w.start and len(self._curves[i].points) == 1:
            return self._curves[i].points[0][1]  # a constant through the window: exactly it
        total = 0.0
        bounds = [*self._from[1:], math.inf]
        for lo, hi, curve in zip(self._from, bounds, self._curves, strict=True):
            total += curve.integral(max(lo, w.start), min(hi, w.end))
        return total / w.length


@dataclass(frozen=True, slots=True)
class PodLoad:
    """A pod's true load while it runs: bytes/s received and sent, CPU cores, memory bytes."""

    rx: float = 0.0
    tx: float = 0.0
    cpu: float = 0.0
    memory: float = 0.0


@dataclass(frozen=True, slots=True)
class Columns:
    """PodHistory as arrays: per pod, then per load row."""

    node: IntArray  # node row
    bound: FloatArray
    start: FloatArray
    end: FloatArray  # inf while it runs
    group: IntArray  # traffic workload index, -1: none
    row_pod: IntArray  # the pod each row belongs to (a pod's rows together, in time order)
    row_from: FloatArray
    row_to: FloatArray  # the next row's from, or inf
    row_load: FloatArray  # rows x [rx, tx, cpu, memory]


class PodHistory:
    """Every pod that was bound: its node, when it was bound, started and deleted, and its load
    rows (each from a time on).  Arrays are rebuilt only after a change."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.keys: list[str] = []
        self._node: list[int] = []
        self._bound: list[float] = []
        self._start: list[float] = []
        self._end: list[float] = []
        self._group: list[int] = []  # traffic workload index, -1: none
        self._row_pod: list[int] = []
        self._row_from: list[float] = []
        self._row_load: list[tuple[float, float, float, float]] = []
        self._arrays: Columns | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def add(
        self,
        key: str,
        node: int,
        bound: float,
        start: float,
        group: int,
        loads: Sequence[tuple[float, PodLoad]],
    ) -> None:
        """A pod bound to node row `node` at `bound`, running from `start`; `loads`: (from, load)
        in time order, the first from -inf (rows are clipped to the pod's running interval)."""
        i = len(self.keys)
        self.index[key] = i
        self.keys.append(key)
        self._node.append(node)
        self._bound.append(bound)
        self._start.append(start)
        self._end.append(math.inf)
        self._group.append(group)
        for at, load in loads:
            self._row_pod.append(i)
            self._row_from.append(at)
            self._row_load.append((load.rx, load.tx, load.cpu, load.memory))
        self._arrays = None

    def change(self, key: str, at: float, load: PodLoad) -> None:
        """The bound pod `key` carries `load` from `at` on (a timeline change resolved when it
        starts: the pods then on some nodes)."""
        i = self.index[key]
        self._row_pod.append(i)
        self._row_from.append(at)
        self._row_load.append((load.rx, load.tx, load.cpu, load.memory))
        self._arrays = None

    def load_of(self, key: str, t: float) -> PodLoad:
        """The load row of pod `key` in effect at max(t, its start)."""
        got = self.load_at(t)[self.index[key]]
        return PodLoad(*(float(v) for v in got))

    def end(self, key: str, at: float) -> bool:
        """The pod is gone from `at` on (deleted, evicted); False when it was never bound."""
        i = self.index.get(key)
        if i is None or self._end[i] <= at:
            return i is not None
        self._end[i] = at
        if self._arrays is not None:
            self._arrays.end[i] = at
        return True

    def a(self) -> Columns:
        """The history as arrays (rebuilt after a pod is added)."""
        if self._arrays is None:
            pod = np.array(self._row_pod, dtype=np.int64)
            frm = np.array(self._row_from, dtype=np.float64)
            # A pod's rows together, in time order (change() appends to a pod added earlier).
            order = np.lexsort((frm, pod))
            pod, frm = pod[order], frm[order]
            loads = np.array(self._row_load, dtype=np.float64).reshape(-1, 4)[order]
            to = np.full(len(frm), math.inf)
            same = pod[1:] == pod[:-1]
            to[:-1][same] = frm[1:][same]
            self._arrays = Columns(
                node=np.array(self._node, dtype=np.int64),
                bound=np.array(self._bound, dtype=np.float64),
                start=np.array(self._start, dtype=np.float64),
                end=np.array(self._end, dtype=np.float64),
                group=np.array(self._group, dtype=np.int64),
                row_pod=pod,
                row_from=frm,
                row_to=to,
                row_load=loads,
            )
        return self._arrays

    def rows_in_effect(self) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
        """(pod, from, to, load) of every row, clipped to its pod's running interval."""
        a = self.a()
        pod = a.row_pod
        return pod, np.maximum(a.row_from, a.start[pod]), np.minimum(a.row_to, a.end[pod]), a.row_load

    def cuts(self) -> FloatArray:
        """Every time the set of running pods changes (starts and ends)."""
        a = self.a()
        both = np.concatenate((a.start, a.end))
        out: FloatArray = both[np.isfinite(both)]
        return out

    def running(self, t: float) -> BoolArray:
        """Per pod: runs at t (started, not yet gone)."""
        a = self.a()
        out: BoolArray = (a.start <= t) & (t < a.end)
        return out

    def live(self, t: float) -> BoolArray:
        """Per pod: bound at or before t and not gone: what a placement "in full" counts."""
        a = self.a()
        out: BoolArray = (a.bound <= t) & (t < a.end)
        return out

    def load_at(self, t: float) -> FloatArray:
        """Per pod, the load of its row in effect at max(t, its start) ([rx, tx, cpu, memory])."""
        a = self.a()
        out = np.zeros((len(self.keys), 4))
        when = np.maximum(t, a.start)[a.row_pod]
        hit = (a.row_from <= when) & (when < a.row_to)
        out[a.row_pod[hit]] = a.row_load[hit]
        return out

    def changes(self) -> float:
        """The last time the true state changed (a start or an end; -inf: never)."""
        cuts = self.cuts()
        return float(cuts.max()) if len(cuts) else -math.inf
