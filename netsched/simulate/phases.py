"""A run with a timeline, phase by phase: where the pods are and what that does to the links.

A phase is the initial placement, then each timeline entry.  Its figures are
taken once it is done: the initial placement when the first entry starts (or
the run ends), a rollout when it completes (every new pod available, no old
pod left; or at the end of the run, marked incomplete), any other change when
the next entry starts or the run ends.  They describe the placement at that
moment with every bound pod that is not gone counted in full (the true,
settled load: what a reading shows once its rate window covers only this
placement), never what a poll read at that moment:

- traffic: the share of the pairs' bytes/s between placed pods that crosses
  nodes and each topology level (traffic.shares);
- network: the highest NIC (busier direction / link speed) and the NICs above
  the run's LoadThreshold network limit (none configured: not counted);
- the highest CPU;
- hot nodes (background NIC >= 50 % of the link at that moment) and the pods
  on them, all and those of workloads in traffic pairs;
- pods created and deleted during the phase (deleted by a controller, or
  otherwise: preempted, evicted).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsched.simulate.model import LoadModel
from netsched.simulate.traffic import Shares, shares

HOT = 0.5  # background share of the link that makes a node "hot"


@dataclass(frozen=True, slots=True)
class Figures:
    """The placement at one moment, true load with every bound pod in full."""

    placed: int  # pods bound and not gone
    max_network: float
    over_limit: int | None  # NICs above `limit` (None: no limit configured)
    limit: float | None
    max_cpu: float
    hot_nodes: tuple[str, ...]
    on_hot: int  # pods on hot nodes
    traffic_on_hot: int  # of them, pods of workloads in traffic pairs
    traffic: Shares | None


def measure(
    model: LoadModel, t: float, limit: float | None, levels: Mapping[str, Sequence[str | None]]
) -> Figures:
    loads = model.loads(t)
    net_bg, _, _ = model.background(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        hot = np.nan_to_num(net_bg / model.link) >= HOT
    h = model.history
    live = h.live(t)
    a = h.a()
    on_hot = live & hot[a.node] if len(h) else live
    network = loads.network[np.isfinite(loads.network)]
    traffic = model.traffic(t)
    return Figures(
        placed=int(live.sum()),
        max_network=float(network.max()) if len(network) else math.nan,
        over_limit=int((network > limit).sum()) if limit is not None else None,
        limit=limit,
        max_cpu=float(np.nanmax(loads.cpu)) if len(loads.cpu) else math.nan,
        hot_nodes=tuple(n for n, is_hot in zip(model.names, hot.tolist(), strict=True) if is_hot),
        on_hot=int(on_hot.sum()),
        traffic_on_hot=int((on_hot & (a.group >= 0)).sum()) if len(h) else 0,
        traffic=shares(traffic, model.counts(t), len(model.names), levels) if traffic else None,
    )


@dataclass(frozen=True, slots=True)
class Phase:
    label: str  # "initial placement", "90 s: rollout Recreate (all)"
    started: float  # simulated seconds
    at: float  # when the figures were taken
    complete: bool  # False: a rollout that had not completed when the run ended
    pending: int  # pods created and not bound (nor gone) at `at`
    created: int  # pods created by controllers during the phase
    deleted: int  # pods deleted during the phase, all causes
    deleted_other: int  # of them, not by a controller (preempted, evicted)
    figures: Figures

    def to_dict(self) -> dict[str, Any]:
        f = self.figures
        return {
            "phase": self.label,
            "startedSeconds": _num(self.started),
            "atSeconds": _num(self.at),
            "complete": self.complete,
            "placed": f.placed,
            "pending": self.pending,
            "created": self.created,
            "deleted": self.deleted,
            "deletedOther": self.deleted_other,
            "maxNetwork": _num(f.max_network),
            "networkLimit": f.limit,
            "nicsOverLimit": f.over_limit,
            "maxCpu": _num(f.max_cpu),
            "hotNodes": list(f.hot_nodes),
            "podsOnHotNodes": f.on_hot,
            "trafficPodsOnHotNodes": f.traffic_on_hot,
            "traffic": f.traffic.to_dict() if f.traffic is not None else None,
        }


def _num(v: float) -> float | None:
    return None if v != v or math.isinf(v) else round(float(v), 6)
