"""Kubernetes Events about pods ("Scheduled", "FailedScheduling"), written off the scheduling thread.

Users read `kubectl describe pod` to learn why a pod is pending, so the events
must look like kube-scheduler's: events.k8s.io/v1 with reportingController set
to the scheduler name, regarding the pod, the reason and a note; core/v1
Events (source.component) when the cluster does not serve events.k8s.io.

Writing them must never slow or break scheduling, and must keep up with
bindings: like kube-scheduler, the event path has its own API client and rate
budget (app.py builds it with `netsched.kube.kubeconfig.derived_client`), so a
burst of bindings never starves events and events never take a binding's
token. The parts, as client-go's tools/events:

- `sink`: where events go (EventSink; KubeEventSink over the API server);
- `recorder`: what a profile records (KubeEventRecorder) and the Event it becomes;
- `broadcaster`: the bounded queue and writer threads all recorders share,
  flush and shutdown (EventBroadcaster);
- `writer`: a writer thread: batches, pipelined creates, retries;
- `series`: repeats of an event counted on the event already written.
"""

from __future__ import annotations

from netsched.kube.events.broadcaster import (
    DEFAULT_WORKERS,
    POOL_SIZE,
    EventBroadcaster,
    new_event_broadcaster,
)
from netsched.kube.events.recorder import MAX_NOTE_BYTES, KubeEventRecorder
from netsched.kube.events.sink import CORE_V1, EVENTS_V1, EventSink, KubeEventSink
from netsched.kube.events.writer import EventRetry

__all__ = [
    "CORE_V1",
    "DEFAULT_WORKERS",
    "EVENTS_V1",
    "MAX_NOTE_BYTES",
    "POOL_SIZE",
    "EventBroadcaster",
    "KubeEventRecorder",
    "EventRetry",
    "EventSink",
    "KubeEventSink",
    "new_event_broadcaster",
]
