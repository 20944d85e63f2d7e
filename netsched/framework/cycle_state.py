"""Per-pod scratch space shared by the plugins of one scheduling cycle.

PreFilter/PreScore compute something once per pod and store it here for
Filter/Score to read for every node.  Preemption clones the state to try
"what if these pods were gone" without disturbing the real cycle.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from netsched.framework.snapshot import IntArray


class Explainable(Protocol):
    """What a plugin can add to a pod's explanation (netsched explain): its own section."""

    def to_dict(self) -> dict[str, object]: ...

    def lines(self) -> list[str]: ...


class CycleState:
    __slots__ = (
        "_data",
        "_notes",
        "skip_filter_plugins",
        "skip_score_plugins",
        "record_plugin_metrics",
        "score_rows",
        "tie_break",
    )

    def __init__(self) -> None:
        self._data: dict[str, object] = {}
        self._notes: dict[str, Explainable] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = False
        # The snapshot rows this cycle's PreScore and Score run on (the runtime sets them before
        # PreScore): a Score plugin whose per-node score() depends on the other candidates reads
        # them there instead of keeping a copy in PreScore.  Read-only.
        self.score_rows: IntArray | None = None
        # The node that wins a tie among the best total scores when it is among them ("": the
        # node search's random pick).  A PreFilter sets it for a pod whose node was decided
        # ahead of its cycle (the Rebalancer's replacement: its plan's target, chosen by the
        # same scores with ties to the first row), so the cycle and that decision agree.
        self.tie_break = ""

    def read(self, key: str) -> Any:
        """The value stored under key; KeyError names the key when missing."""
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"cycle state has no {key!r} (did its PreFilter/PreScore run?)") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: object) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def note(self, section: str, what: Explainable) -> None:
        """Add `section` to the pod's explanation (a decision a plugin took for the whole pod)."""
        self._notes[section] = what

    def notes(self) -> dict[str, Explainable]:
        return dict(self._notes)

    def clone(self) -> CycleState:
        """Values with a clone() method are cloned; others are shallow-copied."""
        out = CycleState()
        for k, v in self._data.items():
            cl = getattr(v, "clone", None)
            out._data[k] = cl() if callable(cl) else copy.copy(v)
        out._notes = dict(self._notes)
        out.skip_filter_plugins = set(self.skip_filter_plugins)
        out.skip_score_plugins = set(self.skip_score_plugins)
        out.record_plugin_metrics = self.record_plugin_metrics
        out.score_rows = self.score_rows
        out.tie_break = self.tie_break
        return out
