"""Kubernetes resource quantities ("500m", "1.5Gi", "2e3") as exact integers.

The scheduler compares requests with allocatable as integers in canonical
units: CPU in millicores, everything else in base units (bytes, counts).
Values are rounded up, as the API server does, so a request never shrinks.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Decimal:
    """Parse a quantity string (or a bare number) into an exact Decimal."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression {_PATTERN.pattern!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError("quantity must be finite")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"expected a quantity string, got {type(value).__name__}")
    m = _PATTERN.match(value.strip())
    if not m:
        raise QuantityError(f"quantities must match the regular expression {_PATTERN.pattern!r}")
    number, exponent, suffix = m.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as e:  # pragma: no cover - the regex already guards this
        raise QuantityError(str(e)) from e
    if exponent:
        return base * (Decimal(10) ** int(exponent[1:]))
    suffix = suffix or ""
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    return base * _DECIMAL[suffix]


def to_canonical(resource: str, value: object) -> int:
    """A quantity in the scheduler's integer unit for that resource (CPU: millicores)."""
    q = parse_quantity(value)
    if resource == CPU:
        q = q * 1000
    return int(math.ceil(q))


def format_canonical(resource: str, amount: int) -> str:
    """Inverse of to_canonical, for messages and written configs."""
    if resource == CPU:
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    return str(amount)
