"""The metrics cache: immutable tables swapped whole after each poll.

A poll parses every query result into a `Series` (keys, values, sample
timestamps as arrays) and publishes a new `MetricsTable` by replacing one
reference.  Readers take the reference once and never see half a poll; no
lock on the read path.  Series are kept by mapping key rather than by node
row, so a node added between polls resolves as soon as it appears (rows are
assigned when a reader aligns the table with its snapshot, see source.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.framework.snapshot import FloatArray
from netsched.metrics.args import NodeMappingArgs
from netsched.metrics.mapping import series_key
from netsched.metrics.queries import QueryKey

# rate() over jittered scrapes can put an idle CPU a hair below zero; values
# this close to 0 are noise, not broken data.
NEGATIVE_TOLERANCE = 0.05


class BadResponse(ValueError):
    """A query answered with something other than an instant vector."""


@dataclass(frozen=True, slots=True)
class Series:
    """One query's result: parallel arrays, one entry per usable series."""

    keys: tuple[str, ...]
    values: FloatArray
    timestamps: FloatArray
    total: int  # series returned, including dropped ones
    dropped: Mapping[str, int] = field(default_factory=dict)  # reason -> count

    @classmethod
    def empty(cls) -> Series:
        return cls((), np.zeros(0), np.zeros(0), 0)


@dataclass(frozen=True, slots=True)
class MetricsTable:
    """Everything one poller knows, as of one poll."""

    version: int
    polled_at: float  # wall time of the poll that made this table (0 = never polled)
    series: Mapping[QueryKey, Series]
    errors: Mapping[QueryKey, str]  # query -> reason it failed on the last poll
    reachable: bool  # the last poll got at least one answer

    @classmethod
    def initial(cls) -> MetricsTable:
        return cls(0, 0.0, {}, {}, False)

    def successor(
        self,
        polled_at: float,
        fresh: Mapping[QueryKey, Series],
        errors: Mapping[QueryKey, str],
        wanted: Iterable[QueryKey],
        reachable: bool,
    ) -> MetricsTable:
        """The next table: new results win, failed queries keep their last (ageing) result."""
        merged: dict[QueryKey, Series] = {}
        for key in wanted:
            got = fresh.get(key)
            if got is None:
                got = self.series.get(key)
            if got is not None:
                merged[key] = got
        return MetricsTable(self.version + 1, polled_at, merged, dict(errors), reachable)


def parse_vector(result: Any, mapping: NodeMappingArgs) -> Series:
    """An /api/v1/query `data.result` instant vector -> Series.

    NaN, ±Inf and clearly negative samples are dropped (and counted by reason):
    a division by a zero link speed or a counter reset must not look like an
    idle node.
    """
    if not isinstance(result, list) or any(not isinstance(s, dict) for s in result):
        raise BadResponse("query must return an instant vector (got a scalar, string or matrix)")
    keys: list[str] = []
    values: list[float] = []
    stamps: list[float] = []
    dropped: Counter[str] = Counter()
    for s in result:
        try:
            ts_raw, v_raw = s["value"]
            ts, v = float(ts_raw), float(v_raw)
        except (KeyError, TypeError, ValueError) as e:
            raise BadResponse(f"malformed sample {s!r}: {e}") from e
        if math.isnan(v):
            dropped["nan"] += 1
            continue
        if math.isinf(v):
            dropped["inf"] += 1
            continue
        if v < 0:
            if v < -NEGATIVE_TOLERANCE:
                dropped["negative"] += 1
                continue
            v = 0.0
        metric = s.get("metric")
        keys.append(series_key(metric if isinstance(metric, dict) else {}, mapping))
        values.append(v)
        stamps.append(ts)
    return Series(
        tuple(keys),
        np.array(values, dtype=np.float64),
        np.array(stamps, dtype=np.float64),
        len(result),
        dict(dropped),
    )
