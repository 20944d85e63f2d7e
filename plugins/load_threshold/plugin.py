"""LoadThreshold: filter out nodes whose measured utilisation is above a limit.

A node is rejected when, for an enabled threshold (percent, 0 = disabled):

    network: max(rx, tx) / linkSpeed      > networkUtilizationPercent
    cpu:     measured cpu utilisation     > cpuUtilizationPercent
    memory:  measured memory utilisation  > memoryUtilizationPercent

each including the estimated load of pods reserved on the node since its last
sample (so a burst cannot push a node far past its limit before the metrics
catch up), but not the pod being scheduled: the filter describes the node.
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
    CPU,
    LINK_SPEED,
    MEMORY,
    METRICS_EVENTS,
    NETWORK_RX,
    NETWORK_TX,
    LoadView,
    MetricSource,
    SourceReservation,
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
        # Under this key in each view: the nonzero reason bits its kept rows have had (a superset
        # of what they hold now): while that is one value, a rejected row needs no look at which.
        self._seen_key = f"{self.name}/reason-bits-seen/{id(self)}"
        self._all_stale = sum(2 << (2 * i) for i in range(len(self.checks)))  # "no recent metrics" bits
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
        codes = self._kept_bits(view, idx)
        rejected = np.count_nonzero(codes)
        if not rejected:  # the usual case: one numpy call
            return []
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
            bits = int(self._kept_bits(view, np.array([row], dtype=np.int64))[0])
        return Status(CODE, list(self._reasons(bits)), self.name) if bits else Status.success()

    def _kept_bits(self, view: LoadView, idx: IntArray) -> IntArray:
        """reason_bits of rows `idx`: the verdict describes the node, not the pod, so the source's
        view keeps it between pods and recomputes only rows whose estimates changed."""
        return view.per_row(self, lambda rows: self._noted(view, self.reason_bits(view, rows)), idx)

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

    def reason_bits(self, view: LoadView, idx: IntArray) -> IntArray:
        """Per row of `idx` (rows of `view`'s snapshot): bit 2i = check i over its limit, bit
        2i+1 = no fresh metrics for it."""
        out = np.zeros(len(idx), dtype=np.int64)
        fail_closed = view.fail_closed
        if not view.measured:
            # Nothing measured is fresh: no check is over its limit, each is stale under failClosed.
            return out | self._all_stale if fail_closed else out
        for i, c in enumerate(self.checks):
            if c.kind == NETWORK:
                net = view.network(idx)
                u, fresh = net.utilisation(), net.fresh
            else:
                use = view.usage(c.kind, idx)
                u, fresh = use.utilisation, use.fresh
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
