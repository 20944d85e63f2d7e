"""Declared edges: the cold start before a workload's traffic has been measured.

A pod (through its template) may name the workloads it talks to:

    metadata:
      annotations:
        netsched.io/traffic-peers: "api=20Mi, shop/cache=5Mi, db"

Each entry is `[namespace/]workload[=rate]`: the namespace (a DNS-1123 label)
defaults to the pod's own; the workload is named as the mesh names it, so it
takes label-value syntax (letters of either case, digits, '-', '_', '.', e.g.
a Deployment "api.v2" or a workloadLabel value "Shop_API"); the rate is bytes/s
as a quantity (20Mi = 20 MiB/s, both directions together), at most MAX_RATE,
and defaults to 1Mi.  A malformed entry is reported (an Event naming it) and
left out; the other entries still count.  Measured edges replace declared ones
as soon as the workload has any.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from netsched.framework import PodInfo, QuantityError, parse_quantity

ANNOTATION = "netsched.io/traffic-peers"
DEFAULT_RATE = 1024.0 * 1024.0
# 1 TB/s, far above any NIC: a larger declared rate is a typo, and unbounded ones ("1e400",
# "5Ei" x distance) would overflow the integer costs.
MAX_RATE = 1e12
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # DNS-1123 label
# Label-value syntax, allowing a DNS-1123 subdomain's length (controller names may be 253 long).
_WORKLOAD = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True, slots=True)
class Declared:
    """Peer workload key -> bytes/s, and a message per malformed entry (each names it)."""

    edges: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def checked_rate(raw: object, zero: bool = False) -> float:
    """Bytes/s of a declared quantity (0 allowed when `zero`); ValueError says why it is not one."""
    try:
        rate = float(parse_quantity(raw))
    except QuantityError as e:
        raise ValueError(str(e)) from None
    if not math.isfinite(rate) or rate > MAX_RATE:
        raise ValueError(f"must be at most {MAX_RATE:.0e} bytes/s")
    if rate < 0 or (rate == 0 and not zero):
        raise ValueError("must be > 0")
    return rate


def declared_edges(pod: PodInfo) -> Declared:
    """The pod's annotated edges (none without the annotation), malformed entries left out."""
    raw = pod.annotations.get(ANNOTATION)
    out = Declared()
    if raw is None:
        return out
    for entry in (e.strip() for e in raw.split(",")):
        if entry:
            _entry(entry, pod.namespace, out)
    return out


def _entry(entry: str, namespace: str, out: Declared) -> None:
    where = f"metadata.annotations[{ANNOTATION}]: Invalid value: {entry!r}"
    name, _, rate_text = entry.partition("=")
    ns, _, wl = name.strip().rpartition("/")
    ns = ns or namespace
    # fullmatch: `$` would let a trailing newline through ("shop\n/cache").
    if not _NAMESPACE.fullmatch(ns) or not _WORKLOAD.fullmatch(wl):
        out.errors.append(
            f"{where}: want [namespace/]workload[=rate], the namespace a DNS-1123 label, "
            "the workload a label value"
        )
        return
    rate = DEFAULT_RATE
    if rate_text.strip():  # "db" and "db=" both take the default
        try:
            rate = checked_rate(rate_text.strip())
        except ValueError as e:
            out.errors.append(f"{where}: rate: {e}")
            return
    key = f"{ns}/{wl}"
    out.edges[key] = out.edges.get(key, 0.0) + rate
