"""What a plugin holds: a view of one poller under one `prometheus:` args block.

    self.source = handle.metrics.source(args.prometheus)
    self.source.require(NETWORK_RX, NETWORK_TX)           # built-in metrics
    self.source.require_query("gpu", "avg by ($by) (DCGM_FI_DEV_GPU_UTIL) / 100")
    values, age = self.source.values(NETWORK_RX, snapshot)  # arrays over snapshot rows

Reads never query Prometheus: they align the poller's current table with the
snapshot's rows (a dict lookup per series, once per poll and node layout,
cached in `snapshot.cache`) and then cost a few vector operations per cycle.
The view also owns the staleness rules (maxSampleAgeSeconds, stalePolicy)
and the ledger shared by every plugin using the same args (ledger.py: pods
placed and gone with their times, and what each reading misses of them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import BoolArray, FloatArray, IntArray, Snapshot
from netsched.framework.types import PodInfo
from netsched.metrics.args import PrometheusArgs
from netsched.metrics.cache import MetricsTable, Series
from netsched.metrics.estimation import (
    BANDWIDTH_HINT,
    COLUMNS,
    CPU_COL,
    MEMORY_COL,
    RX_COL,
    TX_COL,
    Estimates,
    annotated,
    pod_bandwidth,
)
from netsched.metrics.ledger import Ledger, with_measured
from netsched.metrics.mapping import NodeResolver, align
from netsched.metrics.poller import Poller
from netsched.metrics.queries import (
    CORRECTED_METRICS,
    POD_CPU,
    POD_LABEL,
    POD_MEMORY,
    POD_NETWORK_RX,
    POD_NETWORK_TX,
    POD_USAGE,
    QueryKey,
    builtin_query,
    pod_usage_query,
    render,
)
from netsched.metrics.selfcheck import SelfCheckReport
from netsched.metrics.view import LoadView, coverage

T = TypeVar("T")
_RESOLVER = "netsched.metrics/resolver"
# Where each kind of per-pod usage goes in a ledger load, and its scale (cores -> millicores).
_POD_COLUMNS = {
    POD_CPU: (CPU_COL, 1000.0),
    POD_MEMORY: (MEMORY_COL, 1.0),
    POD_NETWORK_RX: (RX_COL, 1.0),
    POD_NETWORK_TX: (TX_COL, 1.0),
}

# (pod) -> (rx, tx) bytes/s the running pod carries over its node's link, or None when unknown:
# what a plugin that knows the pod's traffic tells the ledger when the pod leaves.
DepartureHint = Callable[[PodInfo], "tuple[float, float] | None"]


class MetricSource:
    def __init__(self, args: PrometheusArgs, poller: Poller, wall: Callable[[], float], view: int) -> None:
        self.args = args
        self.poller = poller
        self.wall = wall  # the clock (wall seconds)
        self._keys: dict[str, QueryKey] = {}
        self._lock = threading.Lock()
        self.ledger = Ledger(args.estimation, wall, args.rate_window_seconds)
        self._departure_hints: dict[str, DepartureHint] = {}
        self._per_table: dict[str, tuple[MetricsTable, Any]] = {}
        # Per-pod usage of the table read last: (table, {"namespace/name": [(kind, position)]}, series).
        self._pod_usage: tuple[MetricsTable, dict[str, list[tuple[str, int]]], Series | None] | None = None
        self._aligned_key = f"netsched.metrics/aligned/{poller.name}"
        self._bandwidth_key = f"netsched.metrics/pod-bandwidth/{poller.name}/{view}"
        self._view_key = f"netsched.metrics/view/{poller.name}/{view}"
        self._ledger_key = f"netsched.metrics/ledger/{poller.name}/{view}"

    @property
    def name(self) -> str:
        return self.poller.name

    # ------------------------------------------------------------ declaring queries

    def require(self, *metrics: str) -> None:
        """Poll these built-in metrics (netsched.metrics.NETWORK_RX, CPU...), and with
        `perPodUsage` the per-pod usage that corrects each (cAdvisor; optional)."""
        for m in metrics:
            self._bind(m, builtin_query(m, self.args))
            if m in CORRECTED_METRICS and self.args.per_pod_usage:
                self._bind(POD_USAGE, pod_usage_query(self.args), POD_LABEL, optional=True)

    def require_query(self, name: str, promql: str) -> None:
        """Poll a custom instant query returning one series per node ($by, $window are substituted)."""
        self._bind(name, render(promql, self.args))

    def require_keyed_query(self, name: str, promql: str, key_label: str) -> None:
        """Poll a query whose series are keyed by `key_label`, not by node (read with `series`)."""
        self._bind(name, render(promql, self.args), key_label)

    def _bind(self, name: str, promql: str, key_label: str = "", *, optional: bool = False) -> None:
        with self._lock:
            old = self._keys.get(name)
            if old is not None and (old.promql, old.key_label) != (promql, key_label):
                raise ValueError(f"metric {name!r} is already bound to another query: {old.promql}")
            key = QueryKey(name, promql, key_label, optional)
            self._keys[name] = key
        self.poller.require(key)

    def query(self, metric: str) -> str:
        """The PromQL polled for `metric`."""
        return self._key(metric).promql

    def _key(self, metric: str) -> QueryKey:
        key = self._keys.get(metric)
        if key is None:
            raise KeyError(f"metric {metric!r} was not required from source {self.name}")
        return key

    # ------------------------------------------------------------ state

    @property
    def polled(self) -> bool:
        return self.poller.table.version > 0

    @property
    def in_fallback(self) -> bool:
        """Prometheus did not answer the last poll (or none has run): plugins score by requests."""
        return self.poller.fallback or self.poller.table.version == 0

    @property
    def fail_closed(self) -> bool:
        return self.args.fail_closed

    @property
    def max_age(self) -> float:
        return self.args.max_sample_age_seconds

    def self_check(self) -> SelfCheckReport:
        with self._lock:
            keys = list(self._keys.values())
        return self.poller.self_check(keys)

    # ------------------------------------------------------------ reading

    def values(self, metric: str, snapshot: Snapshot) -> tuple[FloatArray, FloatArray]:
        """(value, sample age in seconds) per snapshot row; NaN where the node has no sample.

        The value array is shared and read-only; the age array is new each call.
        """
        vals, ts = self._aligned(self._key(metric), snapshot)
        age = self.wall() - ts
        np.maximum(age, 0.0, out=age)  # a Prometheus clock slightly ahead is not "from the future"
        return vals, age

    def fresh(self, metric: str, snapshot: Snapshot) -> tuple[FloatArray, BoolArray]:
        """(value, usable) per row: usable = has a sample no older than maxSampleAgeSeconds."""
        vals, age = self.values(metric, snapshot)
        return vals, age <= self.max_age  # NaN age compares False

    def per_table(self, name: str, build: Callable[[MetricsTable], T]) -> T:
        """`build(table)` once per polled table, for readers off the scheduling thread (a watch
        thread's departure hint, a periodic task), which must not build LoadViews: those live
        in the cycle snapshot's cache.  The latest result is kept per name."""
        table = self.poller.table
        got = self._per_table.get(name)
        if got is None or got[0] is not table:
            got = self._per_table[name] = (table, build(table))
        value: T = got[1]
        return value

    def series(self, metric: str) -> Series | None:
        """The last answer to `metric`'s query as polled (None before its first answer)."""
        return self.keyed_series(metric, self.poller.table)

    def keyed_series(self, metric: str, table: MetricsTable) -> Series | None:
        """`metric`'s answer in `table` (a LoadView's), None before its first answer."""
        return table.series.get(self._key(metric))

    def requires(self, metric: str) -> bool:
        return metric in self._keys

    def view(self, snapshot: Snapshot) -> LoadView:
        """The shared LoadView of `snapshot` as of the current table (see view.py): built once
        per poll, fallback change and node layout, kept in the snapshot's cache."""
        poller = self.poller
        table = poller.table
        measured = not (poller.fallback or table.version == 0)  # not in_fallback
        v: LoadView | None = snapshot.cache.get(self._view_key)
        # Still the view of this source (a reloaded config may make another one under the same
        # key), table, fallback state and snapshot?
        if (
            v is None
            or v.table is not table
            or v.measured != measured
            or v.source is not self
            or v.snapshot is not snapshot
        ):
            ledger: Ledger | None = snapshot.cache.get(self._ledger_key)
            v = snapshot.cache[self._view_key] = LoadView(self, snapshot, table, measured, ledger)
        return v

    def what_if(self, snapshot: Snapshot, ledger: Ledger | None = None) -> Ledger:
        """A fork of the ledger that `snapshot` (a what-if copy, never the cycle's) reads from now
        on: every plugin on this source sees, on that snapshot, the moves a plan records on the
        fork (`depart`, `add`), and the live ledger never does.  Returns the fork (the same one
        if `snapshot` already has it; `ledger`: this one instead, e.g. a fork of a fork for a
        trial move)."""
        got: Ledger | None = snapshot.cache.get(self._ledger_key)
        if ledger is not None and got is not ledger:
            got = snapshot.cache[self._ledger_key] = ledger
            snapshot.cache.pop(self._view_key, None)
        elif got is None:
            got = snapshot.cache[self._ledger_key] = self.ledger.fork()
            snapshot.cache.pop(self._view_key, None)
        return got

    def aligned(self, metric: str, snapshot: Snapshot, table: MetricsTable) -> tuple[FloatArray, FloatArray]:
        """(value, sample timestamp) of `metric` in `table` per snapshot row; read-only."""
        return self._aligned(self._key(metric), snapshot, table)

    def _aligned(
        self, key: QueryKey, snapshot: Snapshot, table: MetricsTable | None = None
    ) -> tuple[FloatArray, FloatArray]:
        table = self.poller.table if table is None else table
        entry: Any = snapshot.cache.get(self._aligned_key)
        if entry is None or entry[0] is not table:
            entry = (table, {})
            snapshot.cache[self._aligned_key] = entry
        got: tuple[FloatArray, FloatArray] | None = entry[1].get(key)
        if got is None:
            series = table.series.get(key)
            n = len(snapshot)
            if series is None:
                vals, ts = np.full(n, np.nan), np.full(n, np.nan)
            else:
                vals, ts = align(_resolver(snapshot).rows(series.keys), series.values, series.timestamps, n)
            vals.flags.writeable = False
            ts.flags.writeable = False
            got = entry[1][key] = (vals, ts)
        return got

    # ------------------------------------------------------------ estimation

    def reserve(self, pod: PodInfo, node_name: str, state: CycleState | None = None) -> None:
        """Count the pod on the node in the ledger until the readings hold it (idempotent per
        uid); `state`: the pod's cycle, where a plugin may have left a BANDWIDTH_HINT."""
        hint = state.get(BANDWIDTH_HINT) if state is not None else None
        self.ledger.add(pod, node_name, self.wall(), hint)

    def pod_load(self, pod: PodInfo) -> FloatArray:
        """What `pod` is expected to add to a node ([cpu, memory, rx, tx]: CPU_COL...), as the
        ledger counts it; computed once per pod (shared array: do not modify)."""
        return self.ledger.load(pod)

    def unreserve(self, pod: PodInfo) -> None:
        self.ledger.remove(pod.uid)

    def depart(self, pod: PodInfo, ledger: Ledger | None = None) -> None:
        """`pod` stopped loading its node now (deleted, terminating, finished): the ledger
        (`ledger`: a what-if's fork instead) takes out what the readings still hold of it, by
        its measured usage where the per-pod series have it, else its reservation's or
        estimated load (network from a departure hint)."""
        if not pod.node_name:
            return
        book = self.ledger if ledger is None else ledger
        measured = self.measured_usage(pod.key)
        stamps = self._node_stamps(pod.node_name) if measured is not None else None
        book.depart(pod, self.wall(), self._departure_network(pod), measured, stamps)

    def _node_stamps(self, node: str) -> tuple[float, float, float] | None:
        """The sample timestamps (CPU, memory, network) of `node` in the current table, which
        the per-pod usage a departure reads comes from: the ledger's own are those of the last
        view built, maybe a poll older (None: the hub knows no nodes yet)."""
        directory = self.poller.directory
        if directory is None:
            return None
        table = self.poller.table
        got: Any = self._per_table.get(_LEDGER_STAMPS)  # (table, (directory, node -> stamps))
        if got is None or got[0] is not table or got[1][0] is not directory:
            got = self._per_table[_LEDGER_STAMPS] = (
                table,
                (directory, self._stamps_by_node(table, directory)),
            )
        stamps: tuple[float, float, float] | None = got[1][1].get(node)
        return stamps

    def _stamps_by_node(
        self, table: MetricsTable, directory: NodeResolver
    ) -> dict[str, tuple[float, float, float]]:
        n = len(directory)

        def stamps(metric: str) -> FloatArray:
            key = self._keys.get(metric)
            series = table.series.get(key) if key is not None else None
            if series is None:
                return np.full(n, np.nan)
            return align(directory.rows(series.keys), series.values, series.timestamps, n)[1]

        cpu, mem, net = coverage(stamps)
        return {
            name: (float(cpu[row]), float(mem[row]), float(net[row]))
            for row, name in enumerate(directory.names)
        }

    def pod_usage(self, pod: PodInfo) -> FloatArray:
        """What `pod` loads its node with now, as the ledger would take it out if it left
        ([cpu millicores, memory bytes, rx, tx bytes/s]): its measured per-pod usage where the
        series have it, else its estimate, with the network a plugin knows it carries across
        its node's link (a departure hint) when it is not annotated.  What a plan moves."""
        load = self.ledger.load(pod).copy()
        own = annotated(pod) or pod.host_network
        if not own:
            net = self._departure_network(pod)
            if net is not None:
                load[RX_COL], load[TX_COL] = net
                own = True
        measured = self.measured_usage(pod.key)
        return with_measured(load, measured, own) if measured is not None else load

    def set_departure_hint(self, owner: str, hint: DepartureHint | None) -> None:
        """Register (None: remove) what `owner` (e.g. a profile's TrafficAffinity) knows of a
        leaving pod's link load; the hint of the pod's own profile is asked first."""
        with self._lock:
            if hint is None:
                self._departure_hints.pop(owner, None)
            else:
                self._departure_hints[owner] = hint

    def _departure_network(self, pod: PodInfo) -> tuple[float, float] | None:
        with self._lock:
            hints = sorted(self._departure_hints.items(), key=lambda kv: kv[0] != pod.scheduler_name)
        for _, hint in hints:
            got = hint(pod)
            if got is not None:
                return got
        return None

    def measured_usage(self, key: str, table: MetricsTable | None = None) -> FloatArray | None:
        """The per-pod usage of the pod "namespace/name" in `table` (default: the current one) as
        a ledger load ([cpu millicores, memory, rx, tx], NaN where not measured or stale); None
        when no per-pod series names it."""
        table = self.poller.table if table is None else table
        got = self._pod_usage
        if got is None or got[0] is not table:
            got = self._pod_usage = (table, *self._usage_index(table))
        _, index, series = got
        parts = index.get(key)
        if not parts or series is None:
            return None
        out = np.full(COLUMNS, np.nan)
        now = self.wall()
        for kind, i in parts:
            if now - series.timestamps[i] <= self.max_age:
                col, scale = _POD_COLUMNS[kind]
                out[col] = series.values[i] * scale
        return out

    def _usage_index(self, table: MetricsTable) -> tuple[dict[str, list[tuple[str, int]]], Series | None]:
        """The per-pod series of `table` by pod: one pass per table, then a lookup per pod that
        leaves or is corrected."""
        key = self._keys.get(POD_USAGE)
        series = table.series.get(key) if key is not None else None
        index: dict[str, list[tuple[str, int]]] = {}
        if series is not None:
            for i, k in enumerate(series.keys):
                pod, _, kind = k.rpartition("/")
                if kind in _POD_COLUMNS:
                    index.setdefault(pod, []).append((kind, i))
        return index, series

    def estimates(self, snapshot: Snapshot) -> Estimates:
        """The ledger's corrections per snapshot row (copies): load of pods placed since their
        node's readings, less what the readings still hold of pods gone."""
        rows = self.view(snapshot).estimates()
        return Estimates(*(rows[:, c].copy() for c in (CPU_COL, MEMORY_COL, RX_COL, TX_COL)))

    def requested_bandwidth(self, snapshot: Snapshot, idx: IntArray) -> tuple[FloatArray, FloatArray]:
        """(rx, tx) bytes/s of rows `idx` from the bandwidth annotations of the pods on each node.

        The fallback when Prometheus is down.  Only the rows asked for are looked at, and
        of those only nodes whose NodeInfo changed since the last call are summed again.
        """
        nodes = snapshot.nodes
        n = len(nodes)
        cached: Any = snapshot.cache.get(self._bandwidth_key)
        if cached is None or len(cached[0]) != n:
            cached = ([None] * n, [-1] * n, [-1] * n, np.zeros(n), np.zeros(n))
            snapshot.cache[self._bandwidth_key] = cached
        seen, gens, counts, rx, tx = cached
        default = self.args.estimation.default_bandwidth_bytes
        for i in idx.tolist():
            node = nodes[i]
            # The cache replaces a changed node's object; the other checks cover in-place edits.
            if seen[i] is node and gens[i] == node.generation and counts[i] == len(node.pods):
                continue
            r = t = 0.0
            for pod in node.pods.values():
                pr, pt = pod_bandwidth(pod, default)
                r += pr
                t += pt
            seen[i], gens[i], counts[i], rx[i], tx[i] = node, node.generation, len(node.pods), r, t
        return rx[idx], tx[idx]


_LEDGER_STAMPS = "ledger-stamps"  # per_table: each node's sample timestamps, for departures


def _resolver(snapshot: Snapshot) -> NodeResolver:
    r: NodeResolver | None = snapshot.cache.get(_RESOLVER)
    if r is None:
        r = snapshot.cache[_RESOLVER] = NodeResolver(snapshot.nodes)
    return r
