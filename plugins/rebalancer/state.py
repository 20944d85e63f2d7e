"""What the rebalancer remembers between rounds, and keeps where the API server keeps it.

Cooldowns (a workload, a node: no move before a time), the moves in flight
(a workload's evicted pod: from which node, to which the plan sent its
replacement, until when the plan holds) and the times of recent evictions (the
per-minute limit) decide what the next round may do.  A process that is
SIGKILLed loses its memory, and a new leader must not move at once what the
old one just moved, so they live in a ConfigMap (`state` in the args; deploy/
ships it empty, with the Role to get and patch it): read when a replica starts
leading, written after each round that evicted.  Written with the
resourceVersion read, so two leaders for a moment cannot both win; a ConfigMap
that is missing or unreadable is reported once and the rebalancer goes on with
what it holds in memory.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from netsched.framework import CONFIGMAPS, ClusterAPI

from .args import StateRef

log = logging.getLogger(__name__)

KEY = "state.json"  # the ConfigMap's data key
MINUTE = 60.0


@dataclass(slots=True)
class Move:
    """A workload's pod the rebalancer evicted: its replacement should go to `target`, never
    back to `source`, while the plan holds (until `until`)."""

    pod: str  # "namespace/name" of the evicted pod
    source: str
    target: str
    until: float  # wall seconds
    trigger: str
    round: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "source": self.source,
            "target": self.target,
            "until": self.until,
            "trigger": self.trigger,
            "round": self.round,
        }


@dataclass(slots=True)
class State:
    workloads: dict[str, float] = field(default_factory=dict)  # workload -> cooldown ends
    nodes: dict[str, float] = field(default_factory=dict)  # node -> cooldown ends
    moves: dict[str, Move] = field(default_factory=dict)  # workload -> its move in flight
    evictions: list[float] = field(default_factory=list)  # times of recent evictions
    round: int = 0

    def expire(self, now: float) -> None:
        """Forget what no longer binds at `now`."""
        self.workloads = {k: t for k, t in self.workloads.items() if t > now}
        self.nodes = {k: t for k, t in self.nodes.items() if t > now}
        self.moves = {k: m for k, m in self.moves.items() if m.until > now}
        self.evictions = [t for t in self.evictions if t > now - MINUTE]

    def evictions_in_window(self, now: float) -> int:
        """Evictions in the 60 s before `now` (any 60-s window holds at most the limit)."""
        return sum(1 for t in self.evictions if t > now - MINUTE)

    def encode(self) -> str:
        return json.dumps(
            {
                "round": self.round,
                "workloadCooldowns": self.workloads,
                "nodeCooldowns": self.nodes,
                "moves": {k: m.to_dict() for k, m in self.moves.items()},
                "evictions": self.evictions,
            },
            sort_keys=True,
        )

    @classmethod
    def decode(cls, text: str) -> State:
        """The state a ConfigMap holds; what cannot be read is dropped (and the rest kept)."""
        try:
            raw = json.loads(text)
        except ValueError:
            return cls()
        if not isinstance(raw, dict):
            return cls()
        out = cls(round=_int(raw.get("round")))
        out.workloads = _times(raw.get("workloadCooldowns"))
        out.nodes = _times(raw.get("nodeCooldowns"))
        out.evictions = [float(t) for t in raw.get("evictions") or () if isinstance(t, int | float)]
        for k, m in (raw.get("moves") or {}).items():
            try:
                out.moves[str(k)] = Move(
                    str(m["pod"]),
                    str(m["source"]),
                    str(m["target"]),
                    float(m["until"]),
                    str(m.get("trigger", "")),
                    int(m.get("round", 0)),
                )
            except (KeyError, TypeError, ValueError):
                continue
        return out


def _int(v: object) -> int:
    return v if isinstance(v, int) else 0


def _times(raw: object) -> dict[str, float]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float)}


class Store:
    """The state's ConfigMap: `load` when leading begins, `save` after a round that moved."""

    def __init__(self, api: ClusterAPI, ref: StateRef) -> None:
        self._api = api
        self._ref = ref
        self._version = ""  # resourceVersion read last
        self._reported = False

    def load(self) -> State:
        try:
            got = self._api.get_object(CONFIGMAPS, self._ref.namespace, self._ref.name)
        except Exception as e:  # an outage: go on with memory, say so once
            self._report("read", e)
            return State()
        if got is None:
            self._report("read", "not found")
            return State()
        self._version = str((got.get("metadata") or {}).get("resourceVersion") or "")
        return State.decode(str((got.get("data") or {}).get(KEY) or ""))

    def save(self, state: State) -> None:
        patch: dict[str, Any] = {"data": {KEY: state.encode()}}
        if self._version:
            patch["metadata"] = {"resourceVersion": self._version}
        try:
            got = self._api.patch_object(CONFIGMAPS, self._ref.namespace, self._ref.name, patch)
        except Exception as e:
            self._report("write", e)
            return
        self._version = str((got.get("metadata") or {}).get("resourceVersion") or "")

    def _report(self, what: str, err: object) -> None:
        if self._reported:
            return
        self._reported = True
        log.warning(
            "Cannot keep the rebalancer's state in its ConfigMap; cooldowns live in memory only "
            "op=%s configmap=%s/%s err=%s hint=%s",
            what,
            self._ref.namespace,
            self._ref.name,
            err,
            "apply deploy/ (it ships the ConfigMap and the Role to get and patch it)",
        )
