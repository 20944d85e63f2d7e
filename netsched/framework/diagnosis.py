"""Why a pod fits nowhere: the filters' Rejections and the Diagnosis they add up to.

A filter plugin's batch form returns Rejections (a mask over the nodes it was
asked about, with the reasons); the runtime counts them into a Diagnosis,
which PostFilter (preemption) reads to pick its candidate nodes and which
becomes kube's "0/N nodes are available: ..." message.  A module of its own
because both sides of the plugin contract use it: the plugin bases, and the
Handle, whose `filter_rows` answers a "what if" question with one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from netsched.framework.snapshot import BoolArray, IntArray
from netsched.framework.status import Code, Status


@dataclass(slots=True)
class Rejection:
    """Nodes (a mask over the batch) rejected by one filter for one reason set.  The Diagnosis
    keeps the mask until it is read: a filter must not modify a mask it has returned."""

    mask: BoolArray
    reasons: tuple[str, ...]
    code: Code = Code.UNSCHEDULABLE


class Diagnosis:
    """Why a pod fits nowhere: per-node codes plus the reason histogram kube prints.

    `node_codes[i]` is the Code of snapshot row i (SUCCESS for nodes not
    evaluated or feasible).  Preemption only considers rows whose code is
    UNSCHEDULABLE.

    A search that finds nodes never reads these: the filters' rejections are
    recorded as they come (the rows and the masks) and counted into the codes and the
    histogram when first read, which is only when the pod fits nowhere.
    """

    __slots__ = (
        "num_all_nodes",
        "_node_codes",
        "_reasons",
        "_unschedulable_plugins",
        "pending_plugins",
        "pre_filter_msg",
        "post_filter_msg",
        "_recorded",
    )

    def __init__(
        self,
        num_all_nodes: int,
        node_codes: npt.NDArray[np.int8],
        reasons: dict[str, int] | None = None,
        unschedulable_plugins: set[str] | None = None,
        pending_plugins: set[str] | None = None,
        pre_filter_msg: str = "",
        post_filter_msg: str = "",
    ) -> None:
        self.num_all_nodes = num_all_nodes
        self._node_codes = node_codes
        self._reasons: dict[str, int] = {} if reasons is None else reasons
        self._unschedulable_plugins: set[str] = (
            set() if unschedulable_plugins is None else unschedulable_plugins
        )
        self.pending_plugins: set[str] = set() if pending_plugins is None else pending_plugins
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = post_filter_msg
        # (plugin, the rows it looked at, rejection) not yet counted into the fields
        # above: a search that finds nodes never gathers the rejected rows
        self._recorded: list[tuple[str, IntArray, Rejection]] = []

    @property
    def node_codes(self) -> npt.NDArray[np.int8]:
        self._count_recorded()
        return self._node_codes

    @property
    def reasons(self) -> dict[str, int]:
        self._count_recorded()
        return self._reasons

    @property
    def unschedulable_plugins(self) -> set[str]:
        self._count_recorded()
        return self._unschedulable_plugins

    def record(
        self, plugin: str, rows: IntArray, rejections: list[Rejection]
    ) -> tuple[BoolArray, Status | None]:
        """Count one filter's rejections of snapshot `rows`: (rejected mask, an Error status if
        the plugin reported one).  Each row keeps its most severe code."""
        failed: BoolArray | None = None  # the first mask itself, until a second one is or-ed in
        for rej in rejections:
            if rej.code == Code.ERROR:
                return np.zeros(len(rows), dtype=bool), Status(Code.ERROR, list(rej.reasons), plugin)
            failed = rej.mask if failed is None else failed | rej.mask
            self._recorded.append((plugin, rows, rej))  # (an empty mask counts for nothing)
        return (np.zeros(len(rows), dtype=bool) if failed is None else failed), None

    def record_node(self, row: int, st: Status) -> None:
        """One node's rejection by the per-node filters (nodes with nominated pods)."""
        self.node_codes[row] = int(st.code)
        self._count(st.plugin, st.reasons, 1)

    def _count_recorded(self) -> None:
        recorded = self._recorded
        if not recorded:
            return
        self._recorded = []
        codes = self._node_codes
        for plugin, rows, rej in recorded:
            hit = rows[rej.mask]
            if len(hit):
                codes[hit] = np.maximum(codes[hit], int(rej.code))
                self._count(plugin, rej.reasons, len(hit))

    def _count(self, plugin: str, reasons: Iterable[str], nodes: int) -> None:
        for reason in reasons:
            self._reasons[reason] = self._reasons.get(reason, 0) + nodes
        self._unschedulable_plugins.add(plugin)

    def message(self) -> str:
        """kube's FitError text: each part is appended as " part." (so a preemption message
        that ends in "." gives kube's familiar double dot)."""
        out = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            out += f" {self.pre_filter_msg}."
        else:
            hist = sorted(f"{n} {r}" for r, n in self.reasons.items())
            if hist:
                out += f" {', '.join(hist)}."
        if self.post_filter_msg:
            out += f" {self.post_filter_msg}."
        return out
