"""Go duration strings ("15s", "1m30s", "100ms") <-> seconds.

kube writes every duration of its component config (leaseDuration and
friends) as a Go `time.Duration` string, so we read and write the same form:
a config written by netsched reads the way an operator used to kube expects,
and a kube config with durations loads unchanged.
"""

from __future__ import annotations

import re
from fractions import Fraction

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_MAX_NS = 2**63 - 1  # time.Duration is an int64 count of nanoseconds


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """Seconds from a Go duration string; DurationError says what is wrong."""
    s = text.strip()
    sign = 1
    if s and s[0] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise DurationError(f"invalid duration {text!r}")
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            if re.match(r"\d*\.?\d*$", s[pos:]):
                raise DurationError(f"missing unit in duration {text!r}")
            raise DurationError(f"invalid duration {text!r}")
        total += Fraction(m.group(1)) * _NS_PER_UNIT[m.group(2)]
        pos = m.end()
    if total > _MAX_NS:
        raise DurationError(f"duration {text!r} out of range")
    return sign * float(total) / 1e9


def format_duration(seconds: float) -> str:
    """The string Go's Duration.String() prints: "15s", "1m30s", "1h0m0s", "100ms"."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_frac(ns, 1_000)}µs"
    if ns < 1_000_000_000:
        return f"{sign}{_frac(ns, 1_000_000)}ms"
    hours, rest = divmod(ns, _NS_PER_UNIT["h"])
    minutes, rest = divmod(rest, _NS_PER_UNIT["m"])
    out = f"{_frac(rest, 1_000_000_000)}s"
    if hours or minutes:
        out = f"{minutes}m{out}"
    if hours:
        out = f"{hours}h{out}"
    return sign + out


def _frac(value: int, unit: int) -> str:
    """value/unit with the fraction's trailing zeros dropped (Go's fmtFrac)."""
    whole, part = divmod(value, unit)
    if not part:
        return str(whole)
    digits = str(part).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
