"""The claims a pod uses: persistentVolumeClaim volumes and generic ephemeral volumes.

A generic ephemeral volume is a claim named "<pod>-<volume>" that the
ephemeral-volume controller creates, owned by the pod (kube's
ephemeral.VolumeClaimName / VolumeIsForPod).  PodInfo lifts the plain claim
names at parse time; ephemeral volumes are rare, so they are read from the raw
spec here, only when the pod has some volume at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from netsched.framework import PodInfo


@dataclass(frozen=True, slots=True)
class PodClaim:
    name: str
    ephemeral: bool = False


def pod_volumes(pod: PodInfo) -> list[object]:
    """The pod's spec.volumes as the API gave them ([] when none or malformed)."""
    spec = pod.raw.get("spec") if pod.raw else None
    vols = spec.get("volumes") if isinstance(spec, dict) else None
    return vols if isinstance(vols, list) else []


def pod_has_claims(pod: PodInfo) -> bool:
    """The fast test every volume plugin's PreFilter starts with."""
    if pod.pvc_names:
        return True
    return any(isinstance(v, dict) and v.get("ephemeral") is not None for v in pod_volumes(pod))


def pod_claims(pod: PodInfo) -> list[PodClaim]:
    """Every claim of the pod, in spec.volumes order."""
    if not pod.raw:
        return [PodClaim(n) for n in pod.pvc_names]
    out = []
    for v in pod_volumes(pod):
        if not isinstance(v, dict):
            continue
        pvc = v.get("persistentVolumeClaim")
        if isinstance(pvc, dict) and pvc.get("claimName"):
            out.append(PodClaim(str(pvc["claimName"])))
        elif v.get("ephemeral") is not None:
            out.append(PodClaim(f"{pod.name}-{v.get('name', '')}", ephemeral=True))
    return out
