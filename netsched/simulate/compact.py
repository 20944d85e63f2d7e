"""The one-line generator form of a scenario, turned into the mapping form.

    nodes: "50 nodes, 32 cpu, 128Gi, 10 Gbit"
    existingPods: "2 pods per node of 1 cpu, 2Gi, 100 Mbit"
    pods: "300 pods of 500m cpu, 1Gi, 20-50 Mbit"
    metrics: ["10 hot nodes at 60-80% network", "all nodes at 20% cpu, 30% memory"]

Each string becomes exactly the generator mapping a user could have written
(`{count: 50, cpu: "32", memory: "128Gi", linkSpeed: "10Gbit"}`), so both
forms share one decoder and one set of error messages.  Parts are separated
by commas and recognised by their unit: `cpu`/`cores`, a binary memory suffix
(Ki, Mi, Gi, Ti) or the word `memory`, a bit rate (`bit`/`bps`).  A range
is written `lo-hi` ("20-50 Mbit", "250m-1 cpu").
"""

from __future__ import annotations

import re
from typing import Any

_NUM = r"[0-9]*\.?[0-9]+"
_RATE = re.compile(rf"^(?P<lo>{_NUM})\s*(?:-\s*(?P<hi>{_NUM}))?\s*(?P<prefix>[kKMGT]?)(?:bit|bps)(?:/s)?$")
_CPU = re.compile(rf"^(?P<lo>{_NUM}m?)\s*(?:-\s*(?P<hi>{_NUM}m?))?\s*(?:cpus?|cores?)$")
_MEM_SUFFIX = r"(?:Ki|Mi|Gi|Ti|k|M|G|T)"
_MEM_WORD = re.compile(
    rf"^(?P<lo>{_NUM}{_MEM_SUFFIX}?)\s*(?:-\s*(?P<hi>{_NUM}{_MEM_SUFFIX}?))?\s*(?:memory|mem)$"
)
_MEM_BARE = re.compile(rf"^(?P<lo>{_NUM}(?:Ki|Mi|Gi|Ti)?)\s*(?:-\s*(?P<hi>{_NUM}(?:Ki|Mi|Gi|Ti)?))?$")
_PERCENT = re.compile(
    rf"^(?P<lo>{_NUM})\s*%?\s*(?:-\s*(?P<hi>{_NUM}))?\s*%\s*(?P<what>network|net|cpu|memory|mem)$"
)
_NODES = re.compile(r"^(?P<n>[0-9]+)\s+nodes?$")
_PODS = re.compile(r"^(?P<n>[0-9]+)\s+pods?(?P<per>\s+per\s+node)?(?:\s+of\s+(?P<rest>.+))?$")
_HOT = re.compile(r"^(?:(?P<n>[0-9]+)\s+hot\s+nodes?|(?P<all>all)\s+nodes?)\s+at\s+(?P<rest>.+)$")
_WORD = re.compile(r"^(?P<key>prefix|scheduler|namespace)\s+(?P<value>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)$")
_ZONES = re.compile(r"^(?P<n>[0-9]+)\s+zones?$")


def _parts(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _value(m: re.Match[str], suffix_group: str | None = None) -> Any:
    """A scalar, or [lo, hi] when the part was a range; the hi side's unit carries over to lo."""
    lo, hi = m.group("lo"), m.group("hi")
    if suffix_group is not None:
        unit = m.group(suffix_group) + "bit"
        return [lo + unit, hi + unit] if hi else lo + unit
    if not hi:
        return lo
    unit = re.sub(rf"^{_NUM}", "", hi)
    if unit and not re.sub(rf"^{_NUM}", "", lo):
        lo += unit
    return [lo, hi]


def _resource(part: str, out: dict[str, Any], rate_key: str) -> bool:
    """cpu, memory or a bit rate into `out`; False when the part is none of them."""
    m = _CPU.match(part)
    if m:
        out["cpu"] = _value(m)
        return True
    m = _MEM_WORD.match(part)
    if m:
        out["memory"] = _value(m)
        return True
    m = _MEM_BARE.match(part)
    # Without the word "memory" only a binary suffix says it is memory ("32" alone is not).
    if m and (m.group("hi") or m.group("lo")).endswith("i"):
        out["memory"] = _value(m)
        return True
    m = _RATE.match(part)
    if m:
        out[rate_key] = _value(m, "prefix")
        return True
    return False


def _word(part: str, out: dict[str, Any], keys: dict[str, str]) -> bool:
    m = _WORD.match(part)
    if m and m.group("key") in keys:
        out[keys[m.group("key")]] = m.group("value")
        return True
    return False


def node_generator(text: str) -> dict[str, Any]:
    """ "50 nodes, 32 cpu, 128Gi, 10 Gbit[, 3 zones][, prefix web]" -> a node generator mapping."""
    parts = _parts(text)
    m = _NODES.match(parts[0]) if parts else None
    if m is None:
        raise ValueError('must start with a node count, e.g. "50 nodes, 32 cpu, 128Gi, 10 Gbit"')
    out: dict[str, Any] = {"count": int(m.group("n"))}
    for part in parts[1:]:
        z = _ZONES.match(part)
        if z:
            out["zones"] = int(z.group("n"))
        elif not (_resource(part, out, "linkSpeed") or _word(part, out, {"prefix": "namePrefix"})):
            raise ValueError(
                f"cannot read {part!r} (expected cpu, memory such as 128Gi, a link speed, N zones)"
            )
    return out


def pod_generator(text: str) -> dict[str, Any]:
    """ "200 pods of 500m cpu, 1Gi, 50 Mbit" or "2 pods per node of 1 cpu" -> a pod generator mapping."""
    parts = _parts(text)
    m = _PODS.match(parts[0]) if parts else None
    if m is None:
        raise ValueError('must start with a pod count, e.g. "200 pods of 500m cpu, 1Gi, 50 Mbit"')
    out: dict[str, Any] = {"perNode" if m.group("per") else "count": int(m.group("n"))}
    rest = [m.group("rest")] if m.group("rest") else []
    keys = {"prefix": "namePrefix", "scheduler": "schedulerName", "namespace": "namespace"}
    for part in rest + parts[1:]:
        if not (_resource(part.strip(), out, "bandwidth") or _word(part.strip(), out, keys)):
            raise ValueError(
                f"cannot read {part!r} (expected cpu, memory such as 1Gi, a bandwidth such as 50 Mbit)"
            )
    return out


def metrics_rule(text: str) -> dict[str, Any]:
    """ "10 hot nodes at 60-80% network" -> {skew: {...}}; "all nodes at 20% cpu" -> {default: {...}}."""
    m = _HOT.match(text.strip())
    if m is None:
        raise ValueError('must read "N hot nodes at 60-80% network" or "all nodes at 20% cpu, 30% memory"')
    values: dict[str, Any] = {}
    for part in _parts(m.group("rest")):
        p = _PERCENT.match(part)
        r = _RATE.match(part.removesuffix("network").strip()) if part.endswith("network") else None
        if p:
            lo, hi = p.group("lo") + "%", (p.group("hi") + "%") if p.group("hi") else None
            key = {"net": "networkUtilization", "network": "networkUtilization", "mem": "memory"}.get(
                p.group("what"), p.group("what")
            )
            values[key] = [lo, hi] if hi else lo
        elif r:
            values["network"] = _value(r, "prefix")
        else:
            raise ValueError(f"cannot read {part!r} (expected e.g. 60-80% network, 20% cpu, 6Gbit network)")
    if m.group("all"):
        return {"default": values}
    return {"skew": {"hot": int(m.group("n")), **values}}
