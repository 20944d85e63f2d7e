"""What a profile records: one event occurrence, queued; and the Event object it becomes.

As client-go's recorder: `KubeEventRecorder.event()` copies what it needs out of
the pod into an `Occurrence` and hands it to the broadcaster's queue, never
blocking and never raising; `event_body` is the Event a writer sends for it
(events.k8s.io/v1 with reportingController, or core/v1 with source.component),
built at write time because its name and API group are only known then.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from netsched.clock import Clock, microtime, rfc3339
from netsched.framework.types import ObjectRef, PodInfo
from netsched.kube.client import JsonObj
from netsched.kube.events.sink import CORE_V1, EVENTS_V1

log = logging.getLogger(__name__)

MAX_NOTE_BYTES = 1024  # events.k8s.io rejects longer notes
MAX_FIELD = 128  # reason, action, reportingController, reportingInstance


@dataclass(slots=True, frozen=True)
class Occurrence:
    """One call to KubeEventRecorder.event, as queued (copied out of the PodInfo)."""

    controller: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    type_: str
    reason: str
    action: str
    message: str
    wall: float
    kind: str = "Pod"
    api_version: str = "v1"

    @property
    def key(self) -> tuple[str, ...]:
        return (
            self.controller,
            self.uid or f"{self.namespace}/{self.name}",
            self.type_,
            self.reason,
            self.action,
            self.message,
        )

    @property
    def pod(self) -> str:
        return self.uid or f"{self.namespace}/{self.name}"


class OccurrenceQueue(Protocol):
    """Where a recorder puts occurrences (the EventBroadcaster), and its clock."""

    @property
    def clock(self) -> Clock: ...

    def submit(self, occ: Occurrence) -> None: ...


class KubeEventRecorder:
    """Records events for one scheduler name (profile); implements the framework's EventRecorder."""

    def __init__(self, broadcaster: OccurrenceQueue, scheduler_name: str) -> None:
        self._broadcaster = broadcaster
        self.scheduler_name = scheduler_name

    def event(self, obj: PodInfo | ObjectRef, type_: str, reason: str, action: str, message: str) -> None:
        """Queue an event about a pod, or another object by its reference (type_ Normal|Warning).
        Never blocks, never raises."""
        try:
            kind, api_version = (obj.kind, obj.api_version) if isinstance(obj, ObjectRef) else ("Pod", "v1")
            occ = Occurrence(
                self.scheduler_name,
                obj.namespace,
                obj.name,
                obj.uid,
                obj.resource_version,
                type_,
                reason,
                action,
                message,
                self._broadcaster.clock.wall(),
                kind,
                api_version,
            )
            self._broadcaster.submit(occ)
        except Exception:  # pragma: no cover - defensive: recording must never fail scheduling
            log.debug("Cannot queue event object=%s reason=%s", obj.key, reason, exc_info=True)


def event_body(api: str, name: str, occ: Occurrence, instance: str) -> JsonObj:
    """The Event named `name` for `occ` in API group `api`, reported by `instance`."""
    ref: JsonObj = {
        "apiVersion": occ.api_version,
        "kind": occ.kind,
        "namespace": occ.namespace,
        "name": occ.name,
    }
    if occ.uid:
        ref["uid"] = occ.uid
    if occ.resource_version:
        ref["resourceVersion"] = occ.resource_version
    note = _truncate(occ.message, MAX_NOTE_BYTES)
    controller = occ.controller[:MAX_FIELD]
    meta = {"name": name, "namespace": occ.namespace}
    if api == EVENTS_V1:
        return {
            "apiVersion": EVENTS_V1,
            "kind": "Event",
            "metadata": meta,
            "eventTime": microtime(occ.wall),
            "reportingController": controller,
            "reportingInstance": instance,
            "action": occ.action[:MAX_FIELD],
            "reason": occ.reason[:MAX_FIELD],
            "note": note,
            "type": occ.type_,
            "regarding": ref,
        }
    stamp = rfc3339(occ.wall)
    return {
        "apiVersion": CORE_V1,
        "kind": "Event",
        "metadata": meta,
        "involvedObject": ref,
        "reason": occ.reason[:MAX_FIELD],
        "message": note,
        "type": occ.type_,
        "action": occ.action[:MAX_FIELD],
        "source": {"component": controller},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": controller,
        "reportingInstance": instance,
    }


def _truncate(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", "ignore")
