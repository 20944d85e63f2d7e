"""Values a scenario may write: bit rates, fractions, ranges and time series.

Scenario authors think in link speeds ("10Gbit"), percentages ("60%") and
ranges ("20-50 Mbit" as ["20Mbit", "50Mbit"]); the simulator works in bytes
per second and fractions.  Each parser raises ValueError with a message
meant to follow a field path ("nodes[0].linkSpeed: Invalid value: ...").
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from netsched.framework.quantity import QuantityError, parse_quantity

_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKMGT]?)(bit|bps|b/s|B/s)?\s*$")
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def bits_per_second(value: object) -> float:
    """ "10Gbit", "50 Mbit", "1.5Gbps", "20MB/s" (bytes: x 8), "50M" (a Kubernetes quantity) or a
    number, in bits/s."""
    if isinstance(value, bool):
        raise ValueError("must be a bit rate such as 10Gbit or 50Mbit")
    if isinstance(value, int | float):
        bits = float(value)
    elif isinstance(value, str):
        m = _RATE.match(value)
        if m:
            bits = float(m.group(1)) * _PREFIX[m.group(2)] * (8 if m.group(3) == "B/s" else 1)
        else:
            try:
                bits = float(parse_quantity(value.strip()))
            except QuantityError:
                raise ValueError("must be a bit rate such as 10Gbit or 50Mbit") from None
    else:
        raise ValueError("must be a bit rate such as 10Gbit or 50Mbit")
    if not math.isfinite(bits) or bits < 0:
        raise ValueError("must be a finite, non-negative bit rate")
    return bits


def bandwidth_annotation(bits: float) -> str:
    """A bits/s figure as the CNI bandwidth annotation writes it ("50M", "1500k")."""
    whole = round(bits)
    for suffix, unit in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if whole >= unit and whole % unit == 0:
            return f"{whole // unit}{suffix}"
    if whole >= 10**3:
        return f"{round(whole / 10**3)}k"
    return str(whole)


def fraction(value: object) -> float:
    """0.6 or "60%" -> 0.6; must lie in [0, 1] (utilisation of a whole node)."""
    if isinstance(value, bool):
        raise ValueError("must be a fraction such as 0.6 or a percentage such as 60%")
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            out = float(value.strip()[:-1]) / 100
        except ValueError:
            raise ValueError("must be a fraction such as 0.6 or a percentage such as 60%") from None
    elif isinstance(value, int | float):
        out = float(value)
    else:
        raise ValueError("must be a fraction such as 0.6 or a percentage such as 60%")
    if not 0.0 <= out <= 1.0:
        raise ValueError("must be between 0 and 1 (0% and 100%)")
    return out


def number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("must be a number")
    if value < 0:
        raise ValueError("must not be negative")
    return float(value)


@dataclass(frozen=True, slots=True)
class Curve:
    """A value over simulated seconds: constant, or piecewise linear through (t, v) points.

    Before the first point the first value holds, after the last the last.
    """

    points: tuple[tuple[float, float], ...]

    @classmethod
    def constant(cls, value: float) -> Curve:
        return cls(((0.0, value),))

    def at(self, t: float) -> float:
        pts = self.points
        if t <= pts[0][0]:
            return pts[0][1]
        for (t0, v0), (t1, v1) in zip(pts, pts[1:], strict=False):
            if t <= t1:
                return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1
        return pts[-1][1]

    def scaled(self, k: float) -> Curve:
        return Curve(tuple((t, v * k) for t, v in self.points))

    def shifted(self, dt: float) -> Curve:
        """The same curve `dt` seconds later (a timeline change's series counts from its `at`)."""
        return Curve(tuple((t + dt, v) for t, v in self.points))

    def integral(self, a: float, b: float) -> float:
        """Exact integral over [a, b] (flat before the first point and after the last; a step
        where two points share a time)."""
        if b <= a:
            return 0.0
        pts = self.points
        (first, v_first), (last, v_last) = pts[0], pts[-1]
        total = v_first * (min(b, first) - a) if a < first else 0.0
        if b > last:
            total += v_last * (b - max(a, last))
        for (t0, v0), (t1, v1) in zip(pts, pts[1:], strict=False):
            lo, hi = max(a, t0), min(b, t1)
            if hi > lo:
                slope = (v1 - v0) / (t1 - t0)
                total += (v0 + slope * ((lo + hi) / 2 - t0)) * (hi - lo)  # a line's mean is its midpoint
        return total


def is_series(value: object) -> bool:
    """[[t0, v0], [t1, v1], ...] (as opposed to a [lo, hi] range)."""
    return isinstance(value, list) and bool(value) and all(isinstance(p, list) for p in value)


def is_range(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and not any(isinstance(p, list) for p in value)


class _Literal:
    """Printed as is in a FieldError (a str would be quoted)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def shown(value: object) -> object:
    """A value for an error message: scalars as they are, lists and mappings as JSON."""
    if isinstance(value, list | dict):
        return _Literal(json.dumps(value, default=str))
    return value
