"""The args of the two noderesources plugins, as kube's NodeResourcesFitArgs and
NodeResourcesBalancedAllocationArgs (v1).

NodeResourcesFitArgs: ignored extended resources and the scoring strategy.  A
missing scoringStrategy means LeastAllocated over cpu and memory with weight 1,
a weight of 0 means 1, weights must be in (0, 100], and a RequestedToCapacityRatio
shape needs increasing utilizations in [0, 100] with scores in [0, 10].

NodeResourcesBalancedAllocationArgs: which resources to balance.  An empty list
means cpu and memory; a weight of 0 (or none) means 1, and any other weight is
rejected (the formula has no weights); a resource may appear once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import Fields, PluginArgs, join

from .resources import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    qualified_name_errors,
)

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    utilization: int
    score: int  # 0..MAX_CUSTOM_PRIORITY_SCORE; scaled to 0..100 when scoring

    def encode(self) -> dict[str, int]:
        return {"utilization": self.utilization, "score": self.score}


@dataclass(frozen=True)
class NodeResourcesFitArgs(PluginArgs):
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[UtilizationShapePoint, ...] = ()

    @classmethod
    def decode(cls, fields: Fields) -> NodeResourcesFitArgs:
        ignored = _names(fields, "ignoredResources", group=False)
        groups = _names(fields, "ignoredResourceGroups", group=True)
        scoring_type = LEAST_ALLOCATED
        resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
        shape: tuple[UtilizationShapePoint, ...] = ()
        if fields.has("scoringStrategy"):
            scoring_type, resources, shape = _strategy(fields.sub("scoringStrategy"))
        fields.finish()
        return cls(ignored, groups, scoring_type, resources, shape)

    def encode(self) -> dict[str, Any]:
        strategy: dict[str, Any] = {
            "type": self.scoring_type,
            "resources": [r.encode() for r in self.resources],
        }
        if self.scoring_type == REQUESTED_TO_CAPACITY_RATIO:
            strategy["requestedToCapacityRatio"] = {"shape": [p.encode() for p in self.shape]}
        return {
            "ignoredResources": list(self.ignored_resources),
            "ignoredResourceGroups": list(self.ignored_resource_groups),
            "scoringStrategy": strategy,
        }


def _names(fields: Fields, key: str, *, group: bool) -> tuple[str, ...]:
    out = []
    base = join(fields.path, key)
    for i, v in enumerate(fields.list(key)):
        p = join(base, i)
        if not isinstance(v, str):
            fields.errs.invalid(p, v, "must be a string")
            continue
        if group and "/" in v:
            fields.errs.invalid(p, v, "resource group name can't contain '/'")
        for msg in qualified_name_errors(v):
            fields.errs.invalid(p, v, msg)
        out.append(v)
    return tuple(out)


def _strategy(f: Fields) -> tuple[str, tuple[ResourceSpec, ...], tuple[UtilizationShapePoint, ...]]:
    type_path = join(f.path, "type")
    if not f.has("type"):
        # kube has no default for type once scoringStrategy is given.
        f.errs.unsupported(type_path, "", STRATEGIES)
    scoring_type = f.str("type", LEAST_ALLOCATED, choices=STRATEGIES)
    resources = resource_specs(f, "resources", DEFAULT_RESOURCES)
    for i, r in enumerate(resources):
        if not 0 < r.weight <= 100:
            f.errs.invalid(
                join(join(join(f.path, "resources"), i), "weight"),
                r.weight,
                f"resource weight of {r.name} not in valid range (0, 100]",
            )
    shape: tuple[UtilizationShapePoint, ...] = ()
    if f.has("requestedToCapacityRatio"):
        shape = _shape(f.sub("requestedToCapacityRatio"))
    elif scoring_type == REQUESTED_TO_CAPACITY_RATIO:
        f.errs.required(
            join(f.path, "requestedToCapacityRatio"), "required when type is RequestedToCapacityRatio"
        )
    f.finish()
    return scoring_type, resources, shape


def resource_specs(f: Fields, key: str, default: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
    """A `resources` list; empty means the default set, a weight of 0 (or none) means 1 (kube defaulting)."""
    out = []
    for item in f.items(key):
        name = item.str("name", "")
        if not name:
            f.errs.required(join(item.path, "name"))
        weight = item.int("weight", 0)
        item.finish()
        out.append(ResourceSpec(name, weight or 1))
    return tuple(out) or default


def _shape(f: Fields) -> tuple[UtilizationShapePoint, ...]:
    path = join(f.path, "shape")
    points = []
    for item in f.items("shape"):
        points.append(UtilizationShapePoint(item.int("utilization", 0), item.int("score", 0)))
        item.finish()
    f.finish()
    errs = f.errs
    if not points:
        errs.required(path, "at least one point must be specified")
        return ()
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            errs.invalid(
                join(join(path, i), "utilization"),
                points[i].utilization,
                "values must be sorted in increasing order",
            )
            break
    for i, pt in enumerate(points):
        if not 0 <= pt.utilization <= MAX_UTILIZATION:
            errs.invalid(
                join(join(path, i), "utilization"),
                pt.utilization,
                f"not in valid range [0, {MAX_UTILIZATION}]",
            )
        if not 0 <= pt.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.invalid(
                join(join(path, i), "score"), pt.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    return tuple(points)


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs(PluginArgs):
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    @classmethod
    def decode(cls, fields: Fields) -> NodeResourcesBalancedAllocationArgs:
        resources = resource_specs(fields, "resources", DEFAULT_RESOURCES)
        base = join(fields.path, "resources")
        seen: set[str] = set()
        for i, r in enumerate(resources):
            if r.name in seen:
                fields.errs.duplicate(join(join(base, i), "name"), r.name)
            seen.add(r.name)
            if r.weight != 1:
                fields.errs.invalid(join(join(base, i), "weight"), r.weight, "must be 1")
        fields.finish()
        return cls(resources)

    def encode(self) -> dict[str, Any]:
        return {"resources": [r.encode() for r in self.resources]}
