"""An out-of-tree Score plugin in about twenty lines: prefer nodes with few pods.

Register it with one call and enable it in the profile with a weight:

    python examples/out_of_tree_plugin.py --config my-config.yaml --kubeconfig ~/.kube/config

    profiles:
    - schedulerName: netsched
      plugins:
        multiPoint:
          enabled:
          - {name: FewestPods, weight: 2}
"""

from __future__ import annotations

import sys

import netsched
from netsched.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, ScorePlugin


class FewestPods(ScorePlugin[None]):  # [None]: it takes no args
    name = "FewestPods"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        capacity = max(1, node.allocatable.get("pods", 0))  # 0 when the kubelet posted no status yet
        return MAX_NODE_SCORE - MAX_NODE_SCORE * len(node.pods) // capacity


if __name__ == "__main__":
    sys.exit(netsched.main(netsched.with_plugin(FewestPods)))
