"""`example` (seed article): an out-of-tree plugin at preFilter, filter and preBind, one call to register.

Run:  python examples/example_plugin.py --config examples/example_plugin.yaml
PreFilter and Filter log and pass; PreBind checks the chosen node is still known.
"""

from __future__ import annotations

import logging
import sys

import netsched
from netsched.framework import (
    CycleState,
    FilterPlugin,
    NodeInfo,
    PodInfo,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Snapshot,
    Status,
)

log = logging.getLogger("example_plugin")


class Example(PreFilterPlugin[None], FilterPlugin[None], PreBindPlugin[None]):
    name = "example"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        log.info("PreFilter pod=%s", pod.key)
        return None, Status.success()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        log.info("Filter pod=%s node=%s", pod.key, node.name)
        return Status.success()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if self.handle.snapshot().get(node_name) is None:
            return Status.as_error(LookupError(f"preBind: node {node_name!r} is not in the snapshot"))
        log.info("PreBind pod=%s node=%s", pod.key, node_name)
        return Status.success()


if __name__ == "__main__":
    sys.exit(netsched.main(netsched.with_plugin(Example)))
