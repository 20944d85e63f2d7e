"""InterPodAffinityArgs: kube's InterPodAffinityArgs (v1), same defaults and validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import Fields, PluginArgs, join

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs(PluginArgs):
    # Score added per existing pod whose *required* affinity matches the incoming pod.
    hard_pod_affinity_weight: int = 1
    # Skip scoring existing pods' preferred terms when the incoming pod has no preferred terms.
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def decode(cls, fields: Fields) -> InterPodAffinityArgs:
        weight = fields.int("hardPodAffinityWeight", 1)
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            fields.errs.invalid(
                join(fields.path, "hardPodAffinityWeight"),
                weight,
                f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
            )
            weight = 1
        ignore = fields.bool("ignorePreferredTermsOfExistingPods", False)
        fields.finish()
        return cls(weight, ignore)

    def encode(self) -> dict[str, Any]:
        return {
            "hardPodAffinityWeight": self.hard_pod_affinity_weight,
            "ignorePreferredTermsOfExistingPods": self.ignore_preferred_terms_of_existing_pods,
        }
