"""Load of pods placed since the metrics last looked.

Measured load lags: a pod reserved now shows up in rate() only after it has
started and a rate window has passed, and the poller samples every few
seconds.  Without correction every pod of a burst lands on the node that
looked idle at the last poll.  So each reservation adds the pod's expected
load to its node (Koordinator's estimator: max(request, limit) x factor for
CPU and memory; the bandwidth annotations, else the bandwidth hint a plugin left
in the pod's cycle state (BANDWIDTH_HINT: the pod's measured traffic leaving the
node, computed on that cycle's snapshot), else a default, for network) until a
sample taken after `reservation time + coverMarginSeconds` covers it, or
`maxLifetimeSeconds` passes.  Coverage is judged per resource group, against
that group's own sample timestamps.

Per-node totals are kept as an array aligned with the snapshot's rows and
updated in place on reserve/unreserve (O(1)), so scoring a pod never loops
over nodes or pods in Python.  Keyed by pod uid: three plugins reserving the
same pod count it once.  Reserve runs on the scheduling thread, unreserve may
run on a binding thread: a lock guards every operation.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from netsched.framework.quantity import CPU, MEMORY, QuantityError, parse_quantity
from netsched.framework.rowlog import RowLog
from netsched.framework.snapshot import FloatArray, Snapshot
from netsched.framework.types import PodInfo
from netsched.metrics.args import EstimationArgs

INGRESS_BANDWIDTH = "kubernetes.io/ingress-bandwidth"
EGRESS_BANDWIDTH = "kubernetes.io/egress-bandwidth"

CPU_COL, MEMORY_COL, RX_COL, TX_COL = 0, 1, 2, 3
COLUMNS = 4
# Resource groups a sample can cover, and the columns each holds.
GROUP_COLUMNS = ((CPU_COL,), (MEMORY_COL,), (RX_COL, TX_COL))
CPU_GROUP, MEMORY_GROUP, NETWORK_GROUP = 0, 1, 2


def annotated_bandwidth(pod: PodInfo, key: str, default: float) -> float:
    """Bytes/s from a CNI bandwidth annotation ("10M" = 10 Mbit/s), else `default`."""
    raw = pod.annotations.get(key)
    if not raw:
        return default
    try:
        bits = float(parse_quantity(raw))
    except QuantityError:
        return default
    return bits / 8 if bits >= 0 else default


def pod_bandwidth(pod: PodInfo, default: float) -> tuple[float, float]:
    """(receive, transmit) bytes/s the pod is expected to add to its node."""
    return (
        annotated_bandwidth(pod, INGRESS_BANDWIDTH, default),
        annotated_bandwidth(pod, EGRESS_BANDWIDTH, default),
    )


def _annotated(pod: PodInfo) -> bool:
    return INGRESS_BANDWIDTH in pod.annotations or EGRESS_BANDWIDTH in pod.annotations


# (pod, node) -> (rx, tx) bytes/s the pod will add to the node's link, or None when unknown.
BandwidthHint = Callable[[PodInfo, str], "tuple[float, float] | None"]
# The cycle-state key under which a plugin of the pod's own profile leaves its BandwidthHint
# for Reserve: per cycle, so two profiles (or an explanation's replica) never share one.
BANDWIDTH_HINT = "netsched.metrics/bandwidth-hint"


def pod_load(pod: PodInfo, args: EstimationArgs) -> FloatArray:
    """[cpu millicores, memory bytes, rx bytes/s, tx bytes/s] expected of the pod."""
    cpu = max(pod.nonzero_cpu, pod.limits.get(CPU, 0)) * args.cpu_factor
    mem = max(pod.nonzero_memory, pod.limits.get(MEMORY, 0)) * args.memory_factor
    rx, tx = pod_bandwidth(pod, args.default_bandwidth_bytes)
    return np.array([cpu, mem, rx, tx], dtype=np.float64)


def _load_key(pod: PodInfo) -> tuple[object, ...]:
    """Everything pod_load reads of `pod`: pods with equal keys have equal loads."""
    limits, annotations = pod.limits, pod.annotations
    return (
        pod.nonzero_cpu,
        pod.nonzero_memory,
        limits.get(CPU, 0),
        limits.get(MEMORY, 0),
        annotations.get(INGRESS_BANDWIDTH),
        annotations.get(EGRESS_BANDWIDTH),
    )


@dataclass(frozen=True, slots=True)
class Estimates:
    """Estimated extra load per snapshot row (copies: safe to keep for the cycle)."""

    cpu: FloatArray  # millicores
    memory: FloatArray  # bytes
    rx: FloatArray  # bytes/s
    tx: FloatArray  # bytes/s


# Sample timestamps per resource group, aligned with snapshot rows (NaN: no sample).
Coverage = tuple[FloatArray, FloatArray, FloatArray]


# A pending pod: (uid, node, reserved at, load, open groups as bits 1 << group).  A plain
# tuple, not a class: there is one per pod reserved in the last minutes, and the garbage
# collector stops tracking a tuple of strings, numbers and an array after its first pass
# (an object and a list per pod that it kept scanning made its older collections run
# about twice as often as with kube's default profile alone).
_Pending = tuple[str, str, float, FloatArray, int]
_LOADS_KEPT = 256  # distinct pod loads Estimator.load keeps
_NODE, _AT, _OPEN = 1, 2, 4  # positions in a _Pending read by name
_ALL_OPEN = (1 << len(GROUP_COLUMNS)) - 1


class Estimator:
    def __init__(self, args: EstimationArgs, wall: Callable[[], float]) -> None:
        self.args = args
        self._wall = wall
        self._lock = threading.Lock()
        self._pods: dict[str, _Pending] = {}
        self._by_node: dict[str, FloatArray] = {}
        self._count: dict[str, int] = {}  # pending pods per node
        # Reservation order, for lifetime expiry: times and uids side by side (no tuple per pod).
        self._order_at: deque[float] = deque()
        self._order_uid: deque[str] = deque()
        self._index: dict[str, int] | None = None  # the snapshot.index `_rows` is aligned with
        self._rows: FloatArray = np.zeros((0, COLUMNS))
        self._synced_version = -1
        self._loads: dict[tuple[object, ...], FloatArray] = {}  # load() by _load_key
        # Change tracking for readers that keep per-row results (LoadView.per_row): every
        # change of a row is a new generation, logged; realigning changes everything.
        self._changes = RowLog()  # its counter is the generation; realigning steps and restarts it

    def __len__(self) -> int:
        return len(self._pods)

    # ------------------------------------------------------------ reserve / unreserve

    def add(
        self, pod: PodInfo, node: str, at: float | None = None, hint: BandwidthHint | None = None
    ) -> None:
        """Count `pod` on `node` from `at` (wall seconds); idempotent per pod uid.  `hint`: the
        pod's network load as a plugin of its cycle knows it (used when not annotated)."""
        if self.holds(pod.uid, node):
            return  # already counted there (a profile calls one reserving plugin per source)
        load = self.load(pod)
        if hint is not None and not _annotated(pod):
            got = hint(pod, node)
            if got is not None:
                load = load.copy()  # load() shares its array with the scoring plugins
                load[RX_COL], load[TX_COL] = got
        with self._lock:
            old = self._pods.get(pod.uid)
            if old is not None:
                if old[_NODE] == node:
                    return
                self._drop(old)
            when = self._wall() if at is None else at
            self._pods[pod.uid] = (pod.uid, node, when, load, _ALL_OPEN)
            self._order_at.append(when)
            self._order_uid.append(pod.uid)
            self._count[node] = self._count.get(node, 0) + 1
            self._apply(node, load)

    def holds(self, uid: str, node: str) -> bool:
        """Whether the pod `uid` is already counted on `node` (add() would change nothing)."""
        p = self._pods.get(uid)
        return p is not None and p[_NODE] == node

    def load(self, pod: PodInfo) -> FloatArray:
        """pod_load(pod), computed once per distinct load (a scoring plugin reads it, then
        reserving it does; pods of one workload share theirs); one array per load, shared:
        do not modify it."""
        key = _load_key(pod)
        got = self._loads.get(key)
        if got is None:
            if len(self._loads) >= _LOADS_KEPT:  # many distinct pods: start over
                self._loads.clear()
            got = self._loads[key] = pod_load(pod, self.args)
        return got

    def remove(self, uid: str) -> None:
        with self._lock:
            p = self._pods.get(uid)
            if p is not None:
                self._drop(p)

    def _drop(self, p: _Pending) -> None:
        """Forget a pending pod, taking back what is still open of its load."""
        uid, node, _, load, open_groups = p
        del self._pods[uid]
        left = load.copy()
        for g, cols in enumerate(GROUP_COLUMNS):
            if not open_groups & (1 << g):
                left[list(cols)] = 0.0
        n = self._count[node] - 1
        if n:
            self._count[node] = n
            self._apply(node, -left)
        else:
            # Last pod on the node: reset to exact zero rather than keep float residue.
            del self._count[node]
            self._by_node.pop(node, None)
            self._apply(node, None)

    def _apply(self, node: str, delta: FloatArray | None) -> None:
        if delta is not None:
            tot = self._by_node.get(node)
            if tot is None:
                tot = self._by_node[node] = np.zeros(COLUMNS)
            tot += delta
        if self._index is not None:
            row = self._index.get(node)
            if row is not None:
                self._rows[row] = self._by_node.get(node, 0.0)
                self._changes.append(row)

    # ------------------------------------------------------------ reading

    def rows(self, snapshot: Snapshot, version: int, coverage: Callable[[], Coverage]) -> FloatArray:
        """Estimated load per row of `snapshot`: (rows, COLUMNS), live (reserve and unreserve
        update it in place) and read-only; no per-node work unless a new sample came.

        `version` identifies the metrics table; when it changed since the last
        call, `coverage()` supplies sample timestamps and covered estimates end.
        """
        with self._lock:
            self._expire_old(self._wall() - self.args.max_lifetime_seconds)
            if version != self._synced_version:
                self._synced_version = version
                if self._pods:
                    self._expire_covered(snapshot, coverage())
            if self._index is not snapshot.index:
                self._align(snapshot)
            view = self._rows.view()
        view.flags.writeable = False
        return view

    def settled(self, version: int, snapshot: Snapshot, now: float) -> int | None:
        """The current generation if rows(snapshot, version, ...) at wall time `now` would change
        nothing (no estimate to expire or cover, rows aligned with `snapshot`), else None: an
        O(1) check a reader makes per pod before it calls rows() (which reads the clock again).
        The lifetime test is _expire_old's, on the oldest reservation."""
        with self._lock:
            if version != self._synced_version or self._index is not snapshot.index:
                return None
            order = self._order_at
            if order and order[0] < now - self.args.max_lifetime_seconds:
                return None
            return self._changes.counter

    def changes(self, since: int) -> tuple[int, list[int] | None]:
        """(current generation, rows changed after generation `since`, in order and possibly
        repeated: a reader polls per pod, so usually one); None: every row may have changed
        (realigned since).  Call after rows() for the same snapshot."""
        with self._lock:
            gen = self._changes.counter
            if since == gen:
                return gen, []
            rows = self._changes.since(since)
            return gen, None if rows is None else list(rows)

    def _align(self, snapshot: Snapshot) -> None:
        self._index = snapshot.index
        self._rows = np.zeros((len(snapshot), COLUMNS))
        self._changes.restart(step=True)
        for node, tot in self._by_node.items():
            row = snapshot.index.get(node)
            if row is not None:
                self._rows[row] = tot

    def _expire_old(self, cutoff: float) -> None:
        order = self._order_at
        while order and order[0] < cutoff:
            at, uid = order.popleft(), self._order_uid.popleft()
            p = self._pods.get(uid)
            if p is not None and p[_AT] == at:
                self._drop(p)

    def _expire_covered(self, snapshot: Snapshot, coverage: Coverage) -> None:
        margin = self.args.cover_margin_seconds
        for p in list(self._pods.values()):
            uid, node, at, load, open_groups = p
            row = snapshot.index.get(node)
            if row is None:
                self._drop(p)  # the node is gone
                continue
            covered = np.zeros(COLUMNS)
            for g, cols in enumerate(GROUP_COLUMNS):
                if open_groups & (1 << g) and coverage[g][row] > at + margin:  # NaN compares False
                    open_groups &= ~(1 << g)
                    covered[list(cols)] = load[list(cols)]
            if open_groups != p[_OPEN]:
                p = self._pods[uid] = (uid, node, at, load, open_groups)
            if covered.any():
                self._apply(node, -covered)
            if not open_groups:
                self._drop(p)
