"""nodeFilter (seed article): a Filter that logs each node's allocatable CPU and memory and passes.

Run:  python examples/node_filter.py --config examples/node_filter.yaml
"""

from __future__ import annotations

import logging
import sys

import netsched
from netsched.framework import CPU, MEMORY, CycleState, FilterPlugin, NodeInfo, PodInfo, Status

log = logging.getLogger("node_filter")


class NodeFilter(FilterPlugin[None]):
    name = "nodeFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        cpu, memory = node.allocatable.get(CPU, 0), node.allocatable.get(MEMORY, 0)
        log.info("Node allocatable pod=%s node=%s cpu=%dm memory=%d", pod.key, node.name, cpu, memory)
        return Status.success()


if __name__ == "__main__":
    sys.exit(netsched.main(netsched.with_plugin(NodeFilter)))
