"""Link load for a gang's placement: the measured view the decision is given, and the
utilisation per snapshot row it plans with.

LinkView is what GangTopology reads from the metrics cache (as NetworkTraffic
reads it) and hands the decision; LinkLoad turns it into each row's u(n), what
one member's bandwidth adds to it, and what the members planned so far added,
so the estimate, the simulation and the threshold share one formula (the
formulas are in placement.py's docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from netsched.framework import (
    BoolArray,
    FloatArray,
    IntArray,
    PodInfo,
    Snapshot,
)


@dataclass(frozen=True, slots=True)
class LinkView:
    """The metrics cache's link load over the snapshot rows, as NetworkTraffic reads it."""

    busy: FloatArray  # bytes/s of the busier direction (estimates of reserved pods included)
    speed: FloatArray  # bytes/s; NaN where unknown
    fresh: BoolArray
    fail_closed: bool
    bandwidth: Callable[[PodInfo], float]  # bytes/s a member adds (busier direction)
    measured: bool = True  # False: Prometheus unreachable, busy is what pods requested


class LinkLoad:
    """Per-row link utilisation for the decision, and what each planned member adds."""

    def __init__(
        self, links: LinkView | None, snapshot: Snapshot, limit: float | None, members: Sequence[PodInfo]
    ) -> None:
        n = len(snapshot)
        self.limit = limit
        self.usable = np.ones(n, dtype=bool)
        self.u = np.zeros(n)
        self.scale = np.zeros(n)  # utilisation per byte/s added (0: not known)
        self.absolute = np.zeros(n, dtype=bool)  # a link speed is known: the threshold applies
        self.added = np.zeros(n)  # utilisation the simulation added
        self.known = links is not None
        self.bandwidth = {p.uid: links.bandwidth(p) if links is not None else 0.0 for p in members}
        if links is None:
            return
        speed, busy, fresh = links.speed, np.nan_to_num(links.busy), links.fresh
        self.absolute = np.isfinite(speed) & (speed > 0)
        np.divide(1.0, speed, out=self.scale, where=self.absolute)
        np.divide(busy, speed, out=self.u, where=self.absolute)
        relative = fresh & ~self.absolute
        ref = float(busy[relative].max()) if relative.any() else 0.0
        if ref > 0:
            rel = ~self.absolute
            self.u[rel] = busy[rel] / ref
            self.scale[rel] = 1.0 / ref
        stale = ~fresh | (not links.measured and links.fail_closed)
        if links.fail_closed:
            self.usable &= ~stale
        elif stale.any():
            self.u[stale] = float(self.u[~stale].mean()) if (~stale).any() else 0.0

    def after(self, rows: IntArray, pod: PodInfo) -> FloatArray:
        """u_after of each row if `pod` joined it."""
        return self.u[rows] + self.added[rows] + self.bandwidth[pod.uid] * self.scale[rows]

    def over(self, rows: IntArray, after: FloatArray) -> BoolArray:
        if self.limit is None:
            return np.zeros(len(rows), dtype=bool)
        return self.absolute[rows] & (after > self.limit + 1e-9)

    def add(self, rows: IntArray | int, pod: PodInfo) -> None:
        self.added[rows] += self.bandwidth[pod.uid] * self.scale[rows]

    def reset(self) -> None:
        self.added[:] = 0.0

    def peak(self, rows: Sequence[int] | IntArray) -> float | None:
        if not self.known or not len(rows):
            return None
        return float((self.u[rows] + self.added[rows]).max())
