"""LoadThreshold: filter out nodes that would be above a utilisation limit with the pod.

A node is rejected when, for an enabled threshold (percent, 0 = disabled):

    network: max(rx + pod rx, tx + pod tx) / linkSpeed    > networkUtilizationPercent
    cpu:     cpu utilisation + pod cpu / allocatable       > cpuUtilizationPercent
    memory:  memory utilisation + pod memory / allocatable > memoryUtilizationPercent

where a node's load is its reading corrected by the source's ledger (pods
placed since the reading's window began, less what it still holds of pods gone:
a burst cannot push a node past its limit before the metrics catch up, and a
rollout's departed pods do not keep it full), and the pod's is its estimate
(max(request, limit) x factor; for network its bandwidth annotations, else
what a plugin of its cycle knows of the traffic it would put on each node's
link, TrafficAffinity's BANDWIDTH_HINT, else the default): a node stays under
its limit with the pod, so a pull towards a node's peers never buys a hot link.
Nodes with no link speed are not checked for network.  A node without a
fresh sample passes (stalePolicy failOpen) or is rejected with "node(s) had
no recent <kind> metrics" (failClosed); while Prometheus is down nothing is
fresh, so failClosed rejects every node.

The reasons read like kube's own in FailedScheduling events:
"0/5 nodes are available: 2 node(s) had cpu utilisation above 65%."  The
code is UnschedulableAndUnresolvable: evicting pods cannot lower a measured
load within a scheduling cycle, so preemption skips these nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    IntArray,
    NodeInfo,
    PodInfo,
    Rejection,
    Snapshot,
    Status,
    names,
)
from netsched.metrics.plugin_api import (
    BANDWIDTH_HINT,
    CPU,
    CPU_COL,
    LINK_SPEED,
    MEMORY,
    MEMORY_COL,
    METRICS_EVENTS,
    NETWORK_RX,
    NETWORK_TX,
    RX_COL,
    TX_COL,
    FloatArray,
    LoadView,
    MetricSource,
    RepeatedLoads,
    SourceReservation,
    annotated,
    source_for,
)

from .args import LoadThresholdArgs

NETWORK = "network"
CODE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@dataclass(frozen=True, slots=True)
class _Check:
    kind: str  # network | cpu | memory
    limit: float  # fraction
    over_reason: str
    stale_reason: str


class LoadThreshold(FilterPlugin[LoadThresholdArgs], SourceReservation[LoadThresholdArgs]):
    name = names.LOAD_THRESHOLD

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return METRICS_EVENTS

    def __init__(self, args: LoadThresholdArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        limits = (
            (NETWORK, self.args.network_utilization_percent),
            (CPU, self.args.cpu_utilization_percent),
            (MEMORY, self.args.memory_utilization_percent),
        )
        self.checks = tuple(
            _Check(
                kind,
                pct / 100.0,
                f"node(s) had {kind} utilisation above {pct:g}%",
                f"node(s) had no recent {kind} metrics",
            )
            for kind, pct in limits
            if pct > 0
        )
        self._texts: dict[int, tuple[str, ...]] = {}
        self._loads = RepeatedLoads()  # pod loads whose verdicts the view keeps per row
        # Under this key in each view: the nonzero reason bits its kept rows have had (a superset
        # of what they hold now): while that is one value, a rejected row needs no look at which.
        self._seen_key = f"{self.name}/reason-bits-seen/{id(self)}"
        self._all_stale = sum(2 << (2 * i) for i in range(len(self.checks)))  # "no recent metrics" bits
        self._checks_network = any(c.kind == NETWORK for c in self.checks)
        self.source = source_for(handle, self.args.prometheus, self.name, filters=True)
        for c in self.checks:
            if c.kind == NETWORK:
                self.source.require(NETWORK_RX, NETWORK_TX, LINK_SPEED)
            else:
                self.source.require(c.kind)

    def load_reading(self) -> tuple[MetricSource, dict[str, float | None]]:
        """The limits (fractions) the placement metrics and the threshold gauges read
        (netsched.observability.placement)."""
        return self.source, {c.kind: c.limit for c in self.checks}

    # ------------------------------------------------------------ filtering

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> list[Rejection]:
        view = self.source.view(snapshot)
        codes, kept = self._bits(state, pod, view, snapshot, idx)
        rejected = np.count_nonzero(codes)
        if not rejected:  # the usual case: one numpy call
            return []
        if kept:
            seen = self._seen(view)
            if len(seen) == 1:  # every rejected row has that one reason set
                (top,) = seen
                return [Rejection(codes != 0, self._reasons(top), CODE)]
        top = int(codes.max())
        hit = codes == top
        if np.count_nonzero(hit) == rejected:  # one reason set: no sort (np.unique)
            return [Rejection(hit, self._reasons(top), CODE)]
        return [
            Rejection(codes == bits, self._reasons(int(bits)), CODE) for bits in np.unique(codes[codes != 0])
        ]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        snapshot = self.handle.snapshot()
        row = snapshot.index.get(node.name)
        if row is None:  # a node this cycle knows nothing of: no metrics for it either
            bits = self._all_stale if self.source.fail_closed else 0
        else:
            view = self.source.view(snapshot)
            bits = int(self._bits(state, pod, view, snapshot, np.array([row], dtype=np.int64))[0][0])
        return Status(CODE, list(self._reasons(bits)), self.name) if bits else Status.success()

    def _bits(
        self, state: CycleState, pod: PodInfo, view: LoadView, snapshot: Snapshot, idx: IntArray
    ) -> tuple[IntArray, bool]:
        """reason_bits of rows `idx` with the pod counted, and whether they come from the view's
        kept verdicts.  A verdict depends on the pod only through its load: pods of a load seen
        before (a workload's replicas) read the verdicts the view keeps for it and recomputes
        only on rows whose readings changed; a pod whose link load differs from node to node
        (a traffic hint) is judged on `idx` alone."""
        load = self.source.pod_load(pod)
        network = self._network_rows(state, pod, snapshot, idx)
        if network is not None:
            return self.reason_bits(view, idx, load, network), False
        shape = tuple(load.tolist())
        if not self._loads.repeated(shape, view):
            return self.reason_bits(view, idx, load), False
        got = view.per_row(
            (self, shape), lambda rows: self._noted(view, self.reason_bits(view, rows, load)), idx
        )
        return got, True

    def _network_rows(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: IntArray
    ) -> tuple[FloatArray, FloatArray] | None:
        """The pod's (rx, tx) link load on each row of `idx` as a plugin of its cycle knows it
        (BANDWIDTH_HINT), when it is not annotated and the network check is on; None: its
        estimate's, the same on every row."""
        if not self._checks_network or annotated(pod) or pod.host_network:
            return None
        hint = state.get(BANDWIDTH_HINT)
        return hint.rows(pod, snapshot, idx) if hint is not None else None

    def _noted(self, view: LoadView, bits: IntArray) -> IntArray:
        """`bits`, their nonzero values added to what `view`'s kept rows have had (not in
        fallback, where nothing is kept: the set stays empty and says nothing)."""
        if view.measured:
            seen = self._seen(view)
            seen.update(bits.tolist())
            seen.discard(0)
        return bits

    def _seen(self, view: LoadView) -> set[int]:
        seen: set[int] = view.derived(self._seen_key, lambda _: set())
        return seen

    def reason_bits(
        self,
        view: LoadView,
        idx: IntArray,
        load: FloatArray | None = None,
        network: tuple[FloatArray, FloatArray] | None = None,
    ) -> IntArray:
        """Per row of `idx` (rows of `view`'s snapshot): bit 2i = check i over its limit with a
        pod of `load` ([cpu, memory, rx, tx]: CPU_COL...; None: the node alone) placed there,
        bit 2i+1 = no fresh metrics for it.  `network`: the pod's (rx, tx) per row instead of
        the load's."""
        out = np.zeros(len(idx), dtype=np.int64)
        fail_closed = view.fail_closed
        if not view.measured:
            # Nothing measured is fresh: no check is over its limit, each is stale under failClosed.
            return out | self._all_stale if fail_closed else out
        for i, c in enumerate(self.checks):
            if c.kind == NETWORK:
                net = view.network(idx)
                if network is not None:
                    u = net.with_pod(*network)
                elif load is not None:
                    u = net.with_pod(float(load[RX_COL]), float(load[TX_COL]))
                else:
                    u = net.utilisation()
                fresh = net.fresh
            else:
                use = view.usage(c.kind, idx)
                u, fresh = use.utilisation, use.fresh
                if load is not None:
                    amount = float(load[CPU_COL if c.kind == CPU else MEMORY_COL])
                    u = u + amount / view.allocatable(c.kind).take(idx)
            over = u > c.limit  # NaN (no link speed, no sample) compares False
            over &= fresh
            np.bitwise_or(out, 1 << (2 * i), out=out, where=over)
            if fail_closed:
                np.bitwise_or(out, 2 << (2 * i), out=out, where=~fresh)
        return out

    def _reasons(self, bits: int) -> tuple[str, ...]:
        """The texts of a reason-bits value, built the first time a node is rejected with it."""
        got = self._texts.get(bits)
        if got is None:
            got = self._texts[bits] = self._build_reasons(bits)
        return got

    def _build_reasons(self, bits: int) -> tuple[str, ...]:
        out = []
        for i, c in enumerate(self.checks):
            if bits & (1 << (2 * i)):
                out.append(c.over_reason)
            if bits & (2 << (2 * i)):
                out.append(c.stale_reason)
        return tuple(out)
