"""Counts (or score sums) per (topology key, value): kube's topologyToMatchedTermCount.

Values the snapshot knows live in an array per key indexed by label code, so
the batch filter reads a whole chunk of nodes with one fancy index; values it
does not know (a node outside the snapshot, seen only during preemption) fall
back to a dict.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from netsched.framework import IntArray, LabelCodes, LookalikePods


class TopoCounts:
    __slots__ = ("_codes", "_arrays", "_extra")

    def __init__(self) -> None:
        self._codes: dict[str, LabelCodes] = {}
        self._arrays: dict[str, IntArray] = {}
        self._extra: dict[tuple[str, str], int] = {}

    def clone(self) -> TopoCounts:
        out = TopoCounts()
        out._codes = dict(self._codes)
        out._arrays = {k: a.copy() for k, a in self._arrays.items()}
        out._extra = dict(self._extra)
        return out

    def bind(self, key: str, codes: LabelCodes) -> IntArray:
        """The array for key over these codes (created on first use, absorbing dict entries)."""
        arr = self._arrays.get(key)
        if arr is None:
            arr = self._arrays[key] = np.zeros(codes.size + 1, dtype=np.int64)
            self._codes[key] = codes
            for k, v in [kv for kv in self._extra if kv[0] == key]:
                c = codes.index.get(v)
                if c is not None:
                    arr[c] += self._extra.pop((k, v))
        return arr

    def add_group(self, key: str, codes: LabelCodes, group: LookalikePods, weight: int) -> bool:
        """Add weight per pod of the group to the domain of its row; True when any row has the key."""
        arr = self.bind(key, codes)
        c = codes.codes
        if group.dense is not None:
            valid = (c >= 0) & (group.dense != 0)
            if not valid.any():
                return False
            arr += codes.sum_rows(group.dense * weight, valid)
            return True
        touched = False
        for row, n in group.rows.items():
            code = c[row]
            if code >= 0:
                arr[code] += n * weight
                touched = True
        return touched

    def add_rows(self, key: str, codes: LabelCodes, row_counts: IntArray, weight: int) -> bool:
        """Add weight per pod counted on each row to that row's domain; True when any counted row has the key."""
        arr = self.bind(key, codes)
        valid = (codes.codes >= 0) & (row_counts != 0)
        if not valid.any():
            return False
        arr += codes.sum_rows(row_counts * weight if weight != 1 else row_counts, valid)
        return True

    def update(self, labels: Mapping[str, str], key: str, delta: int) -> None:
        """kube's update(node, key, delta): the node's domain for key, if it has the label."""
        value = labels.get(key)
        if value is None:
            return
        codes = self._codes.get(key)
        c = codes.index.get(value) if codes is not None else None
        if c is not None:
            self._arrays[key][c] += delta
            return
        n = self._extra.get((key, value), 0) + delta
        if n:
            self._extra[(key, value)] = n
        else:
            self._extra.pop((key, value), None)

    def get(self, key: str, value: str) -> int:
        n = self._extra.get((key, value), 0)
        codes = self._codes.get(key)
        if codes is not None:
            c = codes.index.get(value)
            if c is not None:
                n += int(self._arrays[key][c])
        return n

    def at_rows(self, key: str, codes: LabelCodes, rows: IntArray) -> IntArray:
        """Count of the domain of each row (0 where the row lacks the key)."""
        return self.bind(key, codes)[codes.codes[rows]]

    def topology_keys(self) -> set[str]:
        return set(self._arrays) | {k for k, _ in self._extra}

    def is_empty(self) -> bool:
        """No domain with a non-zero count (kube: the map has no entries)."""
        return not self._extra and not any(a.any() for a in self._arrays.values())
