"""Gangs in a scenario: PodGroups as written or generated, and how each one ended.

    podGroups:
      - apiVersion: scheduling.x-k8s.io/v1alpha1     # a PodGroup as written; its members are
        kind: PodGroup                               # pods of `pods` with the pod-group label
        metadata: {name: train-a}
        spec: {minMember: 4}
      - count: 2                                     # generated: 2 PodGroups and their pods
        namePrefix: train
        minMember: 4
        members: 4                                   # pods per group (default: minMember)
        scheduleTimeoutSeconds: 10                   # optional
        arrival: interleaved                         # or grouped (default): member arrival order
        pod: {cpu: "2", bandwidth: 1Gbit}            # a pod generator entry (as under `pods`)

A gang's outcome in a run: `all` (every member placed), `started` (at least
minMember), `split` (some placed but fewer than minMember: holding room it
cannot use), `none`; and, once minMember are placed, the seconds from its last
member's arrival to its last placed member's binding.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from netsched.framework.fields import ErrorList, Fields, join

if TYPE_CHECKING:  # mypy checks plugins/ as the package `plugins` (it cannot map it, python/mypy#10564)
    import plugins.gangs as gangs
else:
    import netsched.plugins.gangs as gangs
from netsched.simulate.generators import Names, _items, _pod_generator, _string_map, named_object

PODGROUPS_KEY = gangs.PODGROUPS_KEY  # the engine adds PodGroups under it

# The label pods join a gang with, and the topology annotations (netsched.plugins.gangs reads the same).
GROUP_LABEL = gangs.POD_GROUP_LABEL
LEGACY_GROUP_LABEL = gangs.LEGACY_POD_GROUP_LABEL
# PodGroups are created one second apart in listed order (Coscheduling's queue sort reads it).
_EPOCH = "2024-01-01T00:{m:02d}:{s:02d}Z"
ARRIVALS = ("grouped", "interleaved")


@dataclass
class PodGroups:
    objects: list[dict[str, Any]]  # PodGroup objects
    pods: list[dict[str, Any]]  # generated members, in arrival order


def decode_pod_groups(raw: Any, errs: ErrorList, rng: np.random.Generator) -> PodGroups:
    out = PodGroups([], [])
    names = Names()
    seen: set[str] = set()
    for path, item in _items(raw, "podGroups", errs):
        if isinstance(item, dict) and any(k in item for k in ("kind", "metadata", "apiVersion")):
            made = [_object(item, path, errs)]
            members: list[dict[str, Any]] = []
        elif isinstance(item, dict):
            made, members = _generated(Fields(item, path, errs), rng, names)
        else:
            errs.invalid(path, type(item).__name__, "must be a PodGroup object or a generator mapping")
            continue
        for obj in made:
            if obj is None:
                continue
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            if key in seen:
                errs.duplicate(f"{path}.metadata.name", key)
                continue
            seen.add(key)
            n = len(out.objects)
            obj["metadata"].setdefault("creationTimestamp", _EPOCH.format(m=n // 60 % 60, s=n % 60))
            out.objects.append(obj)
        out.pods += members
    return out


def _object(item: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any] | None:
    meta = named_object(item, path, errs, "PodGroup")
    if meta is None:
        return None
    spec = item.get("spec")
    mm = spec.get("minMember") if isinstance(spec, dict) else None
    if isinstance(mm, bool) or not isinstance(mm, int) or mm < 1:
        errs.invalid(f"{path}.spec.minMember", mm, "must be a positive integer")
        return None
    obj = copy.deepcopy(item)
    obj.setdefault("apiVersion", gangs.PODGROUP_API_VERSION)
    obj.setdefault("kind", "PodGroup")
    ns = obj["metadata"].setdefault("namespace", "default")
    obj["metadata"].setdefault("uid", f"sim-pg-{ns}-{meta['name']}")
    obj["metadata"].setdefault("resourceVersion", "1")
    return obj


def _generated(
    f: Fields, rng: np.random.Generator, names: Names
) -> tuple[list[dict[str, Any] | None], list[dict[str, Any]]]:
    count = f.int("count", 1, min=1, max=10_000)
    prefix = f.str("namePrefix", "gang")
    namespace = f.str("namespace", "default")
    min_member = f.int("minMember", 1, min=1, max=100_000)
    members = f.int("members", min_member, min=1, max=100_000)
    timeout = f.int("scheduleTimeoutSeconds", 0, min=1) if f.has("scheduleTimeoutSeconds") else 0
    arrival = f.str("arrival", "grouped", choices=ARRIVALS)
    annotations = _string_map(f, "annotations")
    pod = f.any("pod", {})
    f.finish()
    pod_path = join(f.path, "pod")
    if not isinstance(pod, dict):
        f.errs.invalid(pod_path, type(pod).__name__, "must be a pod generator mapping")
        return [], []
    for key in ("count", "namePrefix", "namespace"):
        if key in pod:
            f.errs.forbidden(join(pod_path, key), f"set by the group ({key} of the gang's members)")
    groups: list[dict[str, Any] | None] = []
    per_group: list[list[dict[str, Any]]] = []
    for name in names.take(prefix, count):
        spec: dict[str, Any] = {"minMember": min_member}
        if timeout:
            spec["scheduleTimeoutSeconds"] = timeout
        groups.append(
            {
                "apiVersion": gangs.PODGROUP_API_VERSION,
                "kind": "PodGroup",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": f"sim-pg-{namespace}-{name}",
                    "resourceVersion": "1",
                    **({"annotations": dict(annotations)} if annotations else {}),
                },
                "spec": spec,
            }
        )
        labels = {**(pod.get("labels") or {}), GROUP_LABEL: name}
        item = {**pod, "count": members, "namePrefix": name, "namespace": namespace, "labels": labels}
        per_group.append(_pod_generator(Fields(item, pod_path, f.errs), rng, Names(), None))
    if arrival == "interleaved":
        pods = [g[i] for i in range(members) for g in per_group if i < len(g)]
    else:
        pods = [p for g in per_group for p in g]
    return groups, pods


# ---------------------------------------------------------------- outcomes


@dataclass(frozen=True, slots=True)
class GangResult:
    key: str  # namespace/name
    min_member: int
    members: int
    placed: int
    outcome: str  # all | started | split | none
    seconds_to_full: float | None  # last member's arrival -> last placed member bound
    level: str = ""  # the topology level `spans` counts ("" when none is known)
    spans: int | None = None  # domains of `level` the placed members are in

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.key,
            "minMember": self.min_member,
            "members": self.members,
            "placed": self.placed,
            "outcome": self.outcome,
            "secondsToFullPlacement": self.seconds_to_full,
            "level": self.level,
            "domainsSpanned": self.spans,
        }

    def spanned(self) -> str:
        """ "1 rack", "3 racks", "-" (nothing placed or no level)."""
        if not self.spans or not self.level:
            return "-"
        short = self.level.rsplit("/", 1)[-1]
        return f"{self.spans} {short}{'' if self.spans == 1 else 's'}"


def group_of(pod: Mapping[str, Any]) -> str:
    """ "namespace/group" of a pod object's gang ("" when none)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = labels.get(GROUP_LABEL) or labels.get(LEGACY_GROUP_LABEL) or ""
    return f"{meta.get('namespace') or 'default'}/{name}" if name else ""


def gang_outcomes(
    groups: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    arrivals: Mapping[str, float],
    placements: Mapping[str, str],
    bound_at: Mapping[str, float],
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
    levels: Sequence[str] = (),
) -> list[GangResult]:
    """Each PodGroup's outcome; `pods` are the scenario's pods to place, `arrivals` and `bound_at`
    simulated seconds by pod key.  Domains spanned are counted at the level the PodGroup's
    topology annotation names, else at the innermost of `levels` (the scenario's node
    topology), from the nodes' labels."""
    node_labels = node_labels or {}
    members: dict[str, list[str]] = {}
    for raw in pods:
        g = group_of(raw)
        if g:
            meta = raw["metadata"]
            members.setdefault(g, []).append(f"{meta.get('namespace') or 'default'}/{meta['name']}")
    out = []
    for obj in groups:
        meta = obj["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        mm = int(obj["spec"]["minMember"])
        keys = members.get(key, [])
        placed = [k for k in keys if k in placements]
        if placed and len(placed) == len(keys):
            outcome = "all"
        elif len(placed) >= mm:
            outcome = "started"
        else:
            outcome = "split" if placed else "none"
        seconds = None
        if placed and len(placed) >= mm:
            last_arrival = max(arrivals[k] for k in keys)
            seconds = max(0.0, max(bound_at.get(k, last_arrival) for k in placed) - last_arrival)
        level = _level(obj, levels)
        spans = None
        if level and placed:
            spans = len({node_labels.get(placements[k], {}).get(level) for k in placed})
        out.append(GangResult(key, mm, len(keys), len(placed), outcome, seconds, level, spans))
    return out


def _level(group: Mapping[str, Any], levels: Sequence[str]) -> str:
    """The level the PodGroup's topology annotation names (as the gang plugins parse it), else
    the innermost of `levels`."""
    try:
        topology = gangs.parse_group(group).topology
    except (gangs.GroupError, AttributeError, TypeError):  # malformed (a spec field of the wrong type too)
        return _annotated_level(group, levels)
    if topology is not None:
        return str(topology.level)
    return levels[-1] if levels else ""


def _annotated_level(group: Mapping[str, Any], levels: Sequence[str]) -> str:
    """A PodGroup the gang plugins reject (both annotations set, a level that is no label key, a
    malformed spec): its members are never placed, and the report names the level its
    annotations ask for as it always did (required first, a non-empty string)."""
    annotations = (group.get("metadata") or {}).get("annotations") or {}
    for key in (gangs.TOPOLOGY_REQUIRED, gangs.TOPOLOGY_PREFERRED):
        if isinstance(annotations.get(key), str) and annotations[key]:
            return str(annotations[key])
    return levels[-1] if levels else ""
