"""DefaultPreemptionArgs: kube's DefaultPreemptionArgs (v1), same defaults and validation.

Preemption dry-runs nodes until it has found
max(minCandidateNodesAbsolute, nodes x minCandidateNodesPercentage / 100)
candidates (capped at the number of nodes that might help), starting from a
random node, then picks the best.  Fewer candidates is faster; more finds
better victims.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import Fields, PluginArgs, join


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs(PluginArgs):
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def decode(cls, fields: Fields) -> DefaultPreemptionArgs:
        pct_path = join(fields.path, "minCandidateNodesPercentage")
        abs_path = join(fields.path, "minCandidateNodesAbsolute")
        pct = fields.int("minCandidateNodesPercentage", 10)
        absolute = fields.int("minCandidateNodesAbsolute", 100)
        if not 0 <= pct <= 100:
            fields.errs.invalid(pct_path, pct, "not in valid range [0, 100]")
        if absolute < 0:
            fields.errs.invalid(abs_path, absolute, "not in valid range [0, inf)")
        if pct == 0 and absolute == 0:
            fields.errs.invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
            fields.errs.invalid(
                abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"
            )
        fields.finish()
        return cls(pct, absolute)

    def encode(self) -> dict[str, Any]:
        return {
            "minCandidateNodesPercentage": self.min_candidate_nodes_percentage,
            "minCandidateNodesAbsolute": self.min_candidate_nodes_absolute,
        }

    def num_candidates(self, num_nodes: int) -> int:
        """kube's calculateNumCandidates."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        return min(n, num_nodes)
