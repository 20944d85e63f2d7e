"""Shadow mode (--dry-run): decide for another scheduler's pods, bind nothing.

Operators compare netsched with the scheduler they run today before switching:
netsched watches pods of `--shadow-scheduler-name` (default-scheduler),
computes where it would place each one with its real profile, and records the
decision (log line, metric, optional pod annotation).  When the real
scheduler binds the pod, the two choices are compared and counted
(netsched_shadow_placements_total{agrees="true"|"false"}).

Every write the framework would make goes through DryRunAPI, which sends
nothing: no binding, no preemption deletes, no evictions, no status or events.  The
predicted pod stays assumed on its node until the real binding is seen, so
the next decisions account for it, as they would in production.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from netsched.framework.disruption import EvictionOutcome, EvictionResult
from netsched.framework.seams import ClusterAPI
from netsched.framework.types import ObjectRef, PodInfo
from netsched.kube.resources import Resource
from netsched.observability.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

SHADOW_ANNOTATION = "netsched.io/shadow-node"


class NullEvents:
    """Events are not recorded in shadow mode: the pods belong to another scheduler."""

    def event(self, obj: PodInfo | ObjectRef, type_: str, reason: str, action: str, message: str) -> None:
        if reason == "FailedScheduling":
            log.info("Shadow: would not place pod pod=%s reason=%r", obj.key, message)


class DryRunAPI:
    """ClusterAPI that records instead of writing."""

    synchronous = False  # recorded writes are cheap, but the real ones they stand for are not

    def __init__(
        self, profile: str, metrics: SchedulerMetrics, annotate_with: ClusterAPI | None = None
    ) -> None:
        self.profile = profile
        self.metrics = metrics
        # A real KubeAPI when --shadow-annotate is on: only its shadow annotation is ever written.
        self._annotator = annotate_with
        self._lock = threading.Lock()
        self.predictions: dict[str, str] = {}
        self.agreed = 0
        self.disagreed = 0
        self.would_delete: list[str] = []
        self.would_evict: list[str] = []
        self.would_patch: list[tuple[str, str, dict[str, Any]]] = []

    def get_object(self, resource: Resource, namespace: str, name: str) -> Mapping[str, Any] | None:
        """Read from the cluster when a real API is at hand (--shadow-annotate), else nothing."""
        return self._annotator.get_object(resource, namespace, name) if self._annotator is not None else None

    def bind(self, pod: PodInfo, node_name: str) -> None:
        with self._lock:
            self.predictions[pod.uid] = node_name
        self.metrics.shadow_decisions.labels(self.profile).inc()
        log.info("Shadow placement pod=%s node=%s", pod.key, node_name)
        if self._annotator is not None:
            try:
                self._annotator.patch_pod_annotations(pod, {SHADOW_ANNOTATION: node_name})
            except Exception as e:  # best effort; the decision is recorded anyway
                log.warning("Could not annotate shadow placement pod=%s err=%s", pod.key, e)

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        with self._lock:
            self.would_delete.append(pod.key)
        log.info("Shadow: would preempt (delete) pod pod=%s", pod.key)

    def evict(self, pod: PodInfo, *, dry_run: bool = False) -> EvictionOutcome:
        """Recorded, never sent: a shadow scheduler moves none of the other scheduler's pods. The
        outcome is WOULD_EVICT (no budget is asked: that would be a request)."""
        with self._lock:
            self.would_evict.append(pod.key)
        log.info("Shadow: would evict pod pod=%s", pod.key)
        return EvictionOutcome(EvictionResult.WOULD_EVICT)

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        return None

    def update_pod_condition(
        self, pod: PodInfo, condition: Mapping[str, Any], *, nominated_node_name: str | None = None
    ) -> None:
        return None

    def patch_pod_annotations(self, pod: PodInfo, annotations: Mapping[str, str | None]) -> None:
        """Not sent: the pod belongs to the other scheduler (--explain-annotations writes nothing
        in shadow mode; only --shadow-annotate's annotation is, on bind)."""
        return None

    def patch_object(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str = "",
    ) -> Mapping[str, Any]:
        """Recorded, never sent: a shadow scheduler writes no object status and binds no volume."""
        with self._lock:
            self.would_patch.append((resource.key, f"{namespace}/{name}", dict(patch)))
        log.info("Shadow: would patch object resource=%s object=%s/%s", resource.key, namespace, name)
        return dict(patch)

    def observed_binding(self, pod: PodInfo) -> None:
        """The real scheduler bound pod: compare with our prediction, once."""
        with self._lock:
            predicted = self.predictions.pop(pod.uid, None)
        if predicted is None:
            return
        agrees = predicted == pod.node_name
        with self._lock:
            if agrees:
                self.agreed += 1
            else:
                self.disagreed += 1
        self.metrics.shadow_placements.labels(self.profile, "true" if agrees else "false").inc()
        log.info(
            "Shadow comparison pod=%s predicted=%s actual=%s agrees=%s",
            pod.key,
            predicted,
            pod.node_name,
            agrees,
        )
