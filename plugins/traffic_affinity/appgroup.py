"""Declared edges from scheduler-plugins' AppGroup (appgroup.diktyo.x-k8s.io/v1alpha1).

The networkaware plugins (Diktyo) declare an application as an AppGroup: its
workloads and each one's dependencies.  A pod joins it with two labels:

    appgroup.diktyo.x-k8s.io: <AppGroup name>              (in the pod's namespace)
    appgroup.diktyo.x-k8s.io.workload: <workload selector>

Its edges are the dependencies of its workload entry, and the workloads that
depend on it (an edge counts both ways), each named by the dependency's
`workload.name` (the Deployment or StatefulSet: the mesh's name, so measured
and declared edges meet) in its namespace (default: the AppGroup's).  The rate
is `minBandwidth` (a quantity in bytes/s) when set, else the annotation's default.
Read only when the CRD is installed and the objects are watched; an AppGroup
that names no such workload gives no edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netsched.framework import PodInfo, QuantityError, parse_quantity

from .declared import DEFAULT_RATE

APPGROUPS_KEY = "appgroup.diktyo.x-k8s.io/appgroups"  # how the object store keeps them
APPGROUP_LABEL = "appgroup.diktyo.x-k8s.io"
WORKLOAD_LABEL = "appgroup.diktyo.x-k8s.io.workload"


def appgroup_edges(pod: PodInfo, appgroup: Mapping[str, Any] | None) -> dict[str, float]:
    """Peer workload key -> bytes/s for `pod` from its AppGroup ({} when it names none)."""
    selector = pod.labels.get(WORKLOAD_LABEL)
    if appgroup is None or not selector:
        return {}
    ns = str((appgroup.get("metadata") or {}).get("namespace") or pod.namespace)
    out: dict[str, float] = {}
    for entry in _list((appgroup.get("spec") or {}).get("workloads")):
        own = _dict(entry.get("workload"))
        deps = _list(entry.get("dependencies"))
        if own.get("selector") == selector:
            for dep in deps:
                _add(out, _dict(dep.get("workload")), dep, ns)
        else:
            for dep in deps:
                if _dict(dep.get("workload")).get("selector") == selector:
                    _add(out, own, dep, ns)
    return out


def _add(out: dict[str, float], workload: Mapping[str, Any], dep: Mapping[str, Any], ns: str) -> None:
    name = workload.get("name")
    if not isinstance(name, str) or not name:
        return
    key = f"{workload.get('namespace') or ns}/{name}"
    out[key] = out.get(key, 0.0) + _rate(dep.get("minBandwidth"))


def _rate(raw: Any) -> float:
    if raw is None:
        return DEFAULT_RATE
    try:
        rate = float(parse_quantity(raw))
    except QuantityError:
        return DEFAULT_RATE
    return rate if rate > 0 else DEFAULT_RATE


def _list(v: Any) -> list[Mapping[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _dict(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, dict) else {}
