"""The ledger: pods placed and gone, with their times, and what each reading misses of them.

A Prometheus reading is not a value "now": `rate(x[W])` evaluated at sample
time ts is the average over the window [ts - W, ts], and a gauge is its value
at ts.  A pod placed since the window began is only partly in the reading (its
load ramps in over the window); a pod gone since then is partly still in it
(its load ramps out).  In a rollout both happen at once: the old pods' load
lingers while the new pods' is not there yet.  Correcting only the first
(what the estimator did before) reads every node of a rollout as carrying its
old pods and its new ones together.

So the ledger keeps, per pod it knows a time for, when its load on its node
began and ended (`start`, `end`; -inf: before anything the ledger knows, +inf:
running) and how much load that is, and for each reading derives

    load now = reading + sum over pods of load x (running now - held),
    held     = |[start, end] & [ts - W, ts]| / W     (W > 0: a rate)
             = 1 if start <= ts < end else 0          (W = 0: a gauge)

per resource group (CPU, memory, network: each with its own sample
timestamps ts, so a node whose CPU was sampled after a pod started and whose
memory was not is corrected for each as it stands).  A pod reserved now
(ts < start) adds its whole load; a pod gone now subtracts what the reading
still holds of it, and nothing once the window no longer covers it.  An
entry ends when it corrects nothing any more in any group (fully held while
running, fully out once gone), or `maxLifetimeSeconds` after its last event
(a node whose samples stopped is not corrected for ever).

Where the load of a pod comes from: its measured per-pod usage where
Prometheus has per-pod series (cAdvisor; MetricSource passes it in), else its
estimate (estimation.pod_load: max(request, limit) x factor, bandwidth
annotations, a plugin's hint, the default).  When it begins: a reading taken
`coverMarginSeconds` after the reservation holds the pod whole (start-up,
image pulls and the window: the margin defaults to the rate window, at least
30 s), so in a rate group its load begins `coverMarginSeconds - W` after the
reservation (at least at it) and ramps in over the window; a gauge shows it
whole from `coverMarginSeconds` on.

Per-node totals are kept by node and projected onto the rows of each
snapshot that reads them (the scheduling cycle's, an explanation's or a
rebalancer's copy: a few alignments, each with its own change log, so reading
a copy never realigns the cycle's rows), updated in place on each event
(O(1) per alignment), recomputed from the entries when a new sample arrives
(O(entries), once per poll).  `fork()` copies the entries for a what-if
(a plan's moves recorded on the copy, never on the live ledger).  Keyed by pod uid: three
plugins reserving the same pod count it once.  Reserve runs on the scheduling
thread, unreserve on a binding thread, departures on the watch's: a lock
guards every operation.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from netsched.framework.rowlog import RowLog
from netsched.framework.snapshot import FloatArray, Snapshot
from netsched.framework.types import PodInfo
from netsched.metrics.args import EstimationArgs
from netsched.metrics.estimation import (
    COLUMNS,
    GROUP_COLUMNS,
    RX_COL,
    TX_COL,
    BandwidthHint,
    annotated,
    load_key,
    pod_load,
)

# Sample timestamps per resource group (CPU, memory, network), aligned with snapshot rows (NaN: none).
Coverage = tuple[FloatArray, FloatArray, FloatArray]

_LOADS_KEPT = 256  # distinct pod loads Ledger.load keeps
_ALIGNMENTS_KEPT = 4  # snapshot layouts read recently: the cycle's and a few copies
_ALL_OPEN = (1 << len(GROUP_COLUMNS)) - 1
_NEVER = math.inf
_NO_SAMPLE = (math.nan, math.nan, math.nan)


class _Entry(NamedTuple):
    """One pod's line: its load on `node` from `start` to `end` (wall seconds), and the resource
    groups it still corrects (bits 1 << group).  A NamedTuple: a tuple of strings, numbers and
    an array, which the garbage collector stops tracking after its first pass (there is one
    per pod placed or gone in the last minutes)."""

    uid: str
    key: str  # "namespace/name": how per-pod series name it
    node: str
    start: float  # when it was placed (its reservation); -inf: before anything the ledger knows
    end: float  # when it left; +inf: running
    load: FloatArray  # [cpu millicores, memory bytes, rx bytes/s, tx bytes/s]
    open: int
    stamp: float  # the time of its last event (start or end), for maxLifetimeSeconds
    # Its network load is its own (annotated, a plugin's hint, a host-network pod's): a per-pod
    # network series does not replace it (it counts traffic with peers on the same node too,
    # which never reaches the NIC; a host-network pod's is the node's).
    own_network: bool = False


def with_measured(load: FloatArray, measured: FloatArray, own_network: bool) -> FloatArray:
    """`load` with its measured columns (not NaN) replaced; the network columns kept when they
    are the pod's own (see _Entry.own_network)."""
    got = measured
    if own_network:
        got = measured.copy()
        got[[RX_COL, TX_COL]] = np.nan
    out: FloatArray = np.where(np.isnan(got), load, got)
    return out


def held(start: float, end: float, ts: float, window: float) -> float:
    """How much of a load present from `start` to `end` a reading at `ts` over `window` seconds
    holds (0..1): the overlap of [start, end] with [ts - window, ts] over the window; a gauge
    (window 0) holds it whole while start <= ts < end.  NaN ts (no sample): nothing."""
    if ts != ts:
        return 0.0
    if window <= 0:
        return 1.0 if start <= ts < end else 0.0
    lo, hi = max(start, ts - window), min(end, ts)
    return max(hi - lo, 0.0) / window


class _Alignment:
    """The totals projected onto one snapshot layout's rows, and the log of rows changed."""

    __slots__ = ("index", "rows", "changes")

    def __init__(self, index: dict[str, int], n: int, counter: int) -> None:
        self.index = index  # the snapshot.index the rows follow
        self.rows: FloatArray = np.zeros((n, COLUMNS))
        self.changes = RowLog(counter)


class Ledger:
    def __init__(self, args: EstimationArgs, wall: Callable[[], float], window: float) -> None:
        """`window`: the rate window of the CPU and network queries, in seconds (memory is a
        gauge)."""
        self.args = args
        self._wall = wall
        self._windows = (window, 0.0, window)  # per resource group
        # Per group, from a reservation to the moment its load begins in readings of that group.
        self._delays = tuple(max(args.cover_margin_seconds - w, 0.0) for w in self._windows)
        self._lock = threading.Lock()
        self._pods: dict[str, _Entry] = {}
        self._by_node: dict[str, FloatArray] = {}
        self._count: dict[str, int] = {}  # entries per node
        # Events in time order, for lifetime expiry: times and uids side by side (no tuple each).
        self._order_at: deque[float] = deque()
        self._order_uid: deque[str] = deque()
        # The snapshot layouts read recently, by id(snapshot.index), most recent last.
        self._alignments: OrderedDict[int, _Alignment] = OrderedDict()
        self._generations = 0  # the highest change counter any alignment has reached
        self._synced_version = -1
        # The sample timestamps (CPU, memory, network) the totals are as of, by node.
        self._coverage: dict[str, tuple[float, float, float]] | None = None
        self._loads: dict[tuple[object, ...], FloatArray] = {}  # load() by load_key

    def __len__(self) -> int:
        return len(self._pods)

    # ------------------------------------------------------------ events

    def add(
        self, pod: PodInfo, node: str, at: float | None = None, hint: BandwidthHint | None = None
    ) -> None:
        """A reservation: `pod` runs on `node` from `at` (wall seconds); idempotent per pod uid.
        `hint`: the pod's network load as a plugin of its cycle knows it (when not annotated)."""
        if self.holds(pod.uid, node):
            return  # already counted there (a profile calls one reserving plugin per source)
        load = self.load(pod)
        own = annotated(pod) or pod.host_network
        if hint is not None and not own:
            got = hint(pod, node)
            if got is not None:
                load = load.copy()  # load() shares its array with the scoring plugins
                load[RX_COL], load[TX_COL] = got
                own = True
        with self._lock:
            old = self._pods.get(pod.uid)
            if old is not None:
                if old.node == node and old.end == _NEVER:
                    return
                self._drop(old)
            when = self._wall() if at is None else at
            self._enter(_Entry(pod.uid, pod.key, node, when, _NEVER, load, _ALL_OPEN, when, own))

    def depart(
        self,
        pod: PodInfo,
        at: float,
        network: tuple[float, float] | None = None,
        measured: FloatArray | None = None,
        stamps: tuple[float, float, float] | None = None,
    ) -> None:
        """`pod` stopped loading its node at `at` (deleted, terminating, finished).  What it
        carried: its reservation's load if the ledger has one, else its estimate, with
        `network` ((rx, tx) bytes/s a plugin knows it carried) when it is not annotated;
        `measured` (its per-pod usage as last read, NaN where not measured) replaces either,
        as it does at each reading (rows()).  A pod the ledger never saw placed has been
        running since before any window: it starts at -inf.  `stamps`: the node's sample
        timestamps (CPU, memory, network) in the table `measured` was read from; the node's
        entries are corrected against them first, so a measured share read after the last
        view was built is un-ramped by the window it was read over (not dropped as "held
        less than half")."""
        node = pod.node_name
        if not node:
            return
        with self._lock:
            if stamps is not None:
                self._sync_node(node, stamps)
            old = self._pods.get(pod.uid)
            if old is not None and old.end != _NEVER:
                return  # already gone
            if old is not None and old.node == node:
                self._drop(old)
                start, carried, own = old.start, old.load, old.own_network
            else:
                if old is not None:
                    self._drop(old)
                start, carried, own = -_NEVER, self.load(pod), annotated(pod) or pod.host_network
                if network is not None and not own:
                    carried = carried.copy()
                    carried[RX_COL], carried[TX_COL] = network
                    own = True
            if measured is not None:
                carried = with_measured(carried, self._unramped(measured, start, node), own)
            self._enter(_Entry(pod.uid, pod.key, node, start, at, carried, _ALL_OPEN, at, own))

    def hold(self, uid: str, key: str, node: str, load: FloatArray, at: float) -> None:
        """Count `load` running on `node` from `at` under `uid`, as a reservation is counted: a
        place a plan keeps for a pod not created yet (the Rebalancer's replacement), released
        with remove(uid) once the pod itself is reserved, or with the entry's lifetime."""
        with self._lock:
            old = self._pods.get(uid)
            if old is not None:
                self._drop(old)
            self._enter(_Entry(uid, key, node, at, _NEVER, load, _ALL_OPEN, at, True))

    def remove(self, uid: str) -> None:
        """Unreserve: the pod was never bound; forget it entirely."""
        with self._lock:
            p = self._pods.get(uid)
            if p is not None:
                self._drop(p)

    def holds(self, uid: str, node: str) -> bool:
        """Whether the pod `uid` is counted running on `node` (add() would change nothing)."""
        p = self._pods.get(uid)
        return p is not None and p.node == node and p.end == _NEVER

    def load(self, pod: PodInfo) -> FloatArray:
        """pod_load(pod), computed once per distinct load (a scoring plugin reads it, then
        reserving it does; pods of one workload share theirs); one array per load, shared:
        do not modify it."""
        key = load_key(pod)
        got = self._loads.get(key)
        if got is None:
            if len(self._loads) >= _LOADS_KEPT:  # many distinct pods: start over
                self._loads.clear()
            got = self._loads[key] = pod_load(pod, self.args)
        return got

    # ------------------------------------------------------------ bookkeeping (lock held)

    def _enter(self, e: _Entry) -> None:
        self._pods[e.uid] = e
        self._order_at.append(e.stamp)
        self._order_uid.append(e.uid)
        self._count[e.node] = self._count.get(e.node, 0) + 1
        self._apply(e.node, self._correction(e))

    def _drop(self, e: _Entry) -> None:
        """Forget an entry, taking back what it corrects."""
        del self._pods[e.uid]
        n = self._count[e.node] - 1
        if n:
            self._count[e.node] = n
            self._apply(e.node, -self._correction(e))
        else:
            # Last entry of the node: reset to exact zero rather than keep float residue.
            del self._count[e.node]
            self._by_node.pop(e.node, None)
            self._apply(e.node, None)

    def _sync_node(self, node: str, stamps: tuple[float, float, float]) -> None:
        """The node's coverage moved to `stamps` (a newer table than the last rows() read):
        its entries are corrected against them; the other nodes wait for the next rows()."""
        cov = self._coverage
        if cov is None or cov.get(node) == stamps:
            return
        entries = [e for e in self._pods.values() if e.node == node]
        before = sum((self._correction(e) for e in entries), np.zeros(COLUMNS))
        cov[node] = stamps
        after = sum((self._correction(e) for e in entries), np.zeros(COLUMNS))
        if entries:
            self._apply(node, after - before)

    def _unramped(self, measured: FloatArray, start: float, node: str) -> FloatArray:
        """A running pod's per-pod reading turned into what it uses: a rate() over a window the
        pod has run only part of holds only that part of it, as its node's does (Prometheus
        extrapolates a new series by half a scrape at most).  Columns of groups whose readings
        hold less than half of the pod are dropped (NaN: the estimate stands)."""
        stamps = self._coverage.get(node, _NO_SAMPLE) if self._coverage is not None else _NO_SAMPLE
        out = measured.copy()
        for g, cols in enumerate(GROUP_COLUMNS):
            # (A pod placed before anything the ledger knows has run through every window.)
            h = (
                1.0
                if start == -_NEVER
                else held(start + self._delays[g], _NEVER, stamps[g], self._windows[g])
            )
            for c in cols:
                out[c] = measured[c] / h if h >= 0.5 else math.nan
        return out

    def _correction(self, e: _Entry) -> FloatArray:
        """What `e` adds to its node's reading as of the coverage the totals are at."""
        running = 1.0 if e.end == _NEVER else 0.0
        out = np.zeros(COLUMNS)
        stamps = self._coverage.get(e.node, _NO_SAMPLE) if self._coverage is not None else _NO_SAMPLE
        for g, cols in enumerate(GROUP_COLUMNS):
            if not e.open & (1 << g):
                continue
            f = running - held(e.start + self._delays[g], e.end, stamps[g], self._windows[g])
            for c in cols:
                out[c] = e.load[c] * f
        return out

    def _apply(self, node: str, delta: FloatArray | None) -> None:
        if delta is not None:
            tot = self._by_node.get(node)
            if tot is None:
                tot = self._by_node[node] = np.zeros(COLUMNS)
            tot += delta
        for al in self._alignments.values():
            row = al.index.get(node)
            if row is not None:
                al.rows[row] = self._by_node.get(node, 0.0)
                al.changes.append(row)

    # ------------------------------------------------------------ reading

    def rows(
        self,
        snapshot: Snapshot,
        version: int,
        coverage: Callable[[], Coverage],
        measured: Callable[[str], FloatArray | None] | None = None,
    ) -> FloatArray:
        """Corrections per row of `snapshot`: (rows, COLUMNS), live (events update it in place)
        and read-only; no per-node work unless a new sample came.

        `version` identifies the metrics table; when it changed since the last call,
        `coverage()` supplies its sample timestamps (per row of `snapshot`), every entry is
        corrected anew against them and the ones that correct nothing any more end.
        `measured(key)`: the measured load of the pod "namespace/name" in that table (NaN
        where a column is not measured; None: not at all), which replaces its estimate
        (network only where the entry's is not its own).
        """
        with self._lock:
            self._expire_old(self._wall() - self.args.max_lifetime_seconds)
            if version != self._synced_version or self._coverage is None:
                self._synced_version = version
                cov = coverage()
                self._coverage = {
                    node: (float(cov[0][row]), float(cov[1][row]), float(cov[2][row]))
                    for node, row in snapshot.index.items()
                }
                self._resettle(measured)
            view = self._aligned(snapshot).rows.view()
        view.flags.writeable = False
        return view

    def settled(self, version: int, snapshot: Snapshot, now: float) -> int | None:
        """The current generation if rows(snapshot, version, ...) at wall time `now` would change
        nothing (no entry to expire or correct anew, rows aligned with `snapshot`), else None: an
        O(1) check a reader makes per pod before it calls rows() (which reads the clock again).
        The lifetime test is _expire_old's, on the oldest event."""
        with self._lock:
            al = self._alignments.get(id(snapshot.index))
            if version != self._synced_version or al is None or al.index is not snapshot.index:
                return None
            order = self._order_at
            if order and order[0] < now - self.args.max_lifetime_seconds:
                return None
            return al.changes.counter

    def changes(self, since: int, snapshot: Snapshot) -> tuple[int, list[int] | None]:
        """(current generation of `snapshot`'s rows, rows changed after generation `since`, in
        order and possibly repeated: a reader polls per pod, so usually one); None: every row
        may have changed (realigned since).  Call after rows() for the same snapshot."""
        with self._lock:
            al = self._aligned(snapshot)
            gen = al.changes.counter
            if since == gen:
                return gen, []
            rows = al.changes.since(since)
            return gen, None if rows is None else list(rows)

    def fork(self) -> Ledger:
        """A copy of the entries, for a what-if (a plan's moves): events recorded on it never
        reach this ledger; it reads against its own alignments."""
        with self._lock:
            out = Ledger(self.args, self._wall, self._windows[0])
            out._pods = dict(self._pods)
            out._by_node = {node: tot.copy() for node, tot in self._by_node.items()}
            out._count = dict(self._count)
            out._order_at = deque(self._order_at)
            out._order_uid = deque(self._order_uid)
            out._synced_version = self._synced_version
            out._coverage = dict(self._coverage) if self._coverage is not None else None
            out._loads = self._loads
            return out

    def _aligned(self, snapshot: Snapshot) -> _Alignment:
        """The alignment of `snapshot`'s layout, made (the totals projected) when first read."""
        key = id(snapshot.index)
        al = self._alignments.get(key)
        if al is not None and al.index is snapshot.index:
            self._alignments.move_to_end(key)
            return al
        # A new layout: its log starts past every counter a reader may hold, so a reader that
        # read another layout re-reads every row.
        self._generations = max([self._generations, *(a.changes.counter for a in self._alignments.values())])
        al = self._alignments[key] = _Alignment(snapshot.index, len(snapshot), self._generations + 1)
        self._alignments.move_to_end(key)
        self._project(al)
        while len(self._alignments) > _ALIGNMENTS_KEPT:
            _, old = self._alignments.popitem(last=False)
            self._generations = max(self._generations, old.changes.counter)
        return al

    def _project(self, al: _Alignment) -> None:
        al.rows[:] = 0.0
        for node, tot in self._by_node.items():
            row = al.index.get(node)
            if row is not None:
                al.rows[row] = tot

    def _expire_old(self, cutoff: float) -> None:
        order = self._order_at
        while order and order[0] < cutoff:
            at, uid = order.popleft(), self._order_uid.popleft()
            p = self._pods.get(uid)
            if p is not None and p.stamp == at:
                self._drop(p)

    def _resettle(self, measured: Callable[[str], FloatArray | None] | None) -> None:
        """Every entry corrected against the new coverage; those correcting nothing any more end
        (a group stays closed once its readings hold the pod whole, or no longer hold it)."""
        assert self._coverage is not None
        self._by_node = {node: np.zeros(COLUMNS) for node in self._count}
        for e in list(self._pods.values()):
            stamps = self._coverage.get(e.node)
            if stamps is None:
                # The node is gone from the cluster: nothing of it is read any more.
                self._forget(e)
                continue
            load = e.load
            if measured is not None and e.end == _NEVER:
                # (A gone pod keeps what it carried when it left: its series now ramp out.)
                got = measured(e.key)
                if got is not None:
                    load = with_measured(load, self._unramped(got, e.start, e.node), e.own_network)
            still = e.open
            for g in range(len(GROUP_COLUMNS)):
                ts = stamps[g]
                edge = e.start + self._delays[g] if e.end == _NEVER else e.end
                if still & (1 << g) and ts == ts and ts - self._windows[g] >= edge:
                    still &= ~(1 << g)  # held whole (running) or out of every later window (gone)
            if not still:
                self._forget(e)
                continue
            if still != e.open or load is not e.load:
                e = self._pods[e.uid] = e._replace(open=still, load=load)
            self._by_node[e.node] += self._correction(e)
        for al in self._alignments.values():
            self._project(al)
            al.changes.restart(step=True)

    def _forget(self, e: _Entry) -> None:
        """Drop an entry during _resettle (the totals are being rebuilt: nothing to take back)."""
        del self._pods[e.uid]
        n = self._count[e.node] - 1
        if n:
            self._count[e.node] = n
        else:
            del self._count[e.node]
            self._by_node.pop(e.node, None)
