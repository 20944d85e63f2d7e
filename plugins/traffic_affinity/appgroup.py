"""Declared edges from scheduler-plugins' AppGroup (appgroup.diktyo.x-k8s.io/v1alpha1).

The networkaware plugins (Diktyo) declare an application as an AppGroup: its
workloads and each one's dependencies.  A pod joins it with two labels:

    appgroup.diktyo.x-k8s.io: <AppGroup name>              (in the pod's namespace)
    appgroup.diktyo.x-k8s.io.workload: <workload selector>

Its edges are the dependencies of its workload entry, and the workloads that
depend on it (an edge counts both ways), each named by the dependency's
`workload.name` (the Deployment or StatefulSet: the mesh's name, so measured
and declared edges meet) in its namespace (default: the AppGroup's).  The rate
is `minBandwidth` (a quantity in bytes/s, at most declared.MAX_RATE) when set,
else the annotation's default; a malformed one is reported (an Event on the pod
naming the AppGroup and the field) and that dependency left out.  Read only when the CRD is installed and the objects are watched; an AppGroup
that names no such workload gives no edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netsched.framework import PodInfo

from .declared import DEFAULT_RATE, Declared, checked_rate

APPGROUPS_KEY = "appgroup.diktyo.x-k8s.io/appgroups"  # how the object store keeps them
APPGROUP_LABEL = "appgroup.diktyo.x-k8s.io"
WORKLOAD_LABEL = "appgroup.diktyo.x-k8s.io.workload"


def appgroup_edges(pod: PodInfo, appgroup: Mapping[str, Any] | None) -> Declared:
    """Peer workload key -> bytes/s for `pod` from its AppGroup (none when it names none)."""
    out = Declared()
    selector = pod.labels.get(WORKLOAD_LABEL)
    if appgroup is None or not selector:
        return out
    meta = _dict(appgroup.get("metadata"))
    ns = str(meta.get("namespace") or pod.namespace)
    name = f"AppGroup {ns}/{meta.get('name', '')}"
    for i, entry in enumerate(_list(_dict(appgroup.get("spec")).get("workloads"))):
        own = _dict(entry.get("workload"))
        for j, dep in enumerate(_list(entry.get("dependencies"))):
            peer = _dict(dep.get("workload"))
            path = f"{name}: spec.workloads[{i}]"
            if own.get("selector") == selector:
                other, other_path = peer, f"{path}.dependencies[{j}].workload"
            elif peer.get("selector") == selector:
                # It depends on the pod's workload: the edge counts both ways.
                other, other_path = own, f"{path}.workload"
            else:
                continue
            _add(out, other, other_path, dep, f"{path}.dependencies[{j}].minBandwidth", ns)
    return out


def _add(
    out: Declared, workload: Mapping[str, Any], path: str, dep: Mapping[str, Any], rate_path: str, ns: str
) -> None:
    """Add the edge to `workload` (at `path`), or report why not (nothing is dropped silently)."""
    name, peer_ns = workload.get("name"), workload.get("namespace") or ns
    if not isinstance(name, str) or not name or not isinstance(peer_ns, str):
        out.errors.append(f"{path}: Invalid value: {dict(workload)!r}: want name and namespace strings")
        return
    raw = dep.get("minBandwidth")
    try:
        # Diktyo reads a missing or zero minBandwidth as "no minimum": the default rate.
        rate = (checked_rate(raw, zero=True) if raw is not None else 0.0) or DEFAULT_RATE
    except ValueError as e:
        out.errors.append(f"{rate_path}: Invalid value: {raw!r}: {e}")
        return
    key = f"{peer_ns}/{name}"
    out.edges[key] = out.edges.get(key, 0.0) + rate


def _list(v: Any) -> list[Mapping[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _dict(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, dict) else {}
