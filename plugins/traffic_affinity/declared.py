"""Declared edges: the cold start before a workload's traffic has been measured.

A pod (through its template) may name the workloads it talks to:

    metadata:
      annotations:
        netsched.io/traffic-peers: "api=20Mi, shop/cache=5Mi, db"

Each entry is `[namespace/]workload[=rate]`: the namespace defaults to the
pod's own, the rate is bytes/s as a quantity (20Mi = 20 MiB/s, both
directions together) and defaults to 1Mi.  Measured edges replace declared
ones as soon as the workload has any.
"""

from __future__ import annotations

import re

from netsched.framework import PodInfo, QuantityError, parse_quantity

ANNOTATION = "netsched.io/traffic-peers"
DEFAULT_RATE = 1024.0 * 1024.0
# A DNS-1123 label: namespace and workload names.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class DeclaredEdgesError(ValueError):
    """The annotation is malformed; the message names the annotation and the entry."""


def declared_edges(pod: PodInfo) -> dict[str, float]:
    """Peer workload key -> bytes/s from the pod's annotation ({} without one)."""
    raw = pod.annotations.get(ANNOTATION)
    if raw is None:
        return {}
    out: dict[str, float] = {}
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        name, _, rate_text = entry.partition("=")
        ns, _, wl = name.strip().rpartition("/")
        ns = ns or pod.namespace
        if not _NAME.match(ns) or not _NAME.match(wl):
            raise DeclaredEdgesError(
                f"metadata.annotations[{ANNOTATION}]: Invalid value: {entry!r}: "
                "want [namespace/]workload[=rate], names as DNS-1123 labels"
            )
        rate = DEFAULT_RATE
        if rate_text:
            try:
                rate = float(parse_quantity(rate_text.strip()))
            except QuantityError as e:
                raise DeclaredEdgesError(
                    f"metadata.annotations[{ANNOTATION}]: Invalid value: {entry!r}: rate: {e}"
                ) from None
            if rate <= 0:
                raise DeclaredEdgesError(
                    f"metadata.annotations[{ANNOTATION}]: Invalid value: {entry!r}: rate must be > 0"
                )
        key = f"{ns}/{wl}"
        out[key] = out.get(key, 0.0) + rate
    return out
