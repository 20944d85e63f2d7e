"""NodeResourcesBalancedAllocationArgs: which resources to balance.

As in kube: an empty list means cpu and memory; a weight of 0 (or none) means
1, and any other weight is rejected (the formula has no weights); a resource
may appear once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import Fields, PluginArgs, join
from netsched.plugins.node_resources_fit.args import resource_specs
from netsched.plugins.node_resources_fit.resources import DEFAULT_RESOURCES, ResourceSpec


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
