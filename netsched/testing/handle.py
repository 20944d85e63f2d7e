"""What a test's scheduler sends to the cluster, recorded instead of sent.

MemoryAPI (netsched.inmemory's, re-exported) and RecordingEvents stand in for
the ClusterAPI and the event recorder of a test Framework
(netsched.testing.framework.build_framework), so plugins run through the real
runtime and tests assert on the calls they made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netsched.framework.types import ObjectRef, PodInfo
from netsched.inmemory import MemoryAPI


@dataclass
class RecordingEvents:
    events: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def event(self, obj: PodInfo | ObjectRef, type_: str, reason: str, action: str, message: str) -> None:
        self.events.append((obj.key, type_, reason, action, message))


__all__ = ["MemoryAPI", "RecordingEvents"]
