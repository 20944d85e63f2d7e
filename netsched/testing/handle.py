"""What a test's scheduler sends to the cluster, recorded instead of sent.

RecordingAPI and RecordingEvents stand in for the ClusterAPI and the event
recorder of a test Framework (netsched.testing.framework.build_framework), so
plugins run through the real runtime and tests assert on the calls they made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netsched.framework.types import PodInfo
from netsched.kube.resources import Resource


@dataclass
class RecordingAPI:
    """ClusterAPI that records calls; set `fail_bind` to an exception to make bind raise."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)
    fail_bind: BaseException | None = None
    patches: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)

    def bind(self, pod: PodInfo, node_name: str) -> None:
        if self.fail_bind is not None:
            raise self.fail_bind
        self.calls.append(("bind", pod.key, node_name))

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        self.calls.append(("delete", pod.key, ""))

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        self.calls.append(("nominate", pod.key, node_name))

    def patch_object(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str = "",
    ) -> Mapping[str, Any]:
        """Recorded in `patches` (resource key, "ns/name", subresource, patch); returns the patch."""
        self.patches.append((resource.key, f"{namespace}/{name}", subresource, dict(patch)))
        return dict(patch)


@dataclass
class RecordingEvents:
    events: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, message: str) -> None:
        self.events.append((pod.key, type_, reason, action, message))
