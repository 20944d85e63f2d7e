"""A Handle for unit-testing plugins without a scheduler.

It records API calls and events instead of sending them and serves a fixed
snapshot.  Filter-running methods use the filter plugins passed in, so
preemption can be tested against real filters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netsched.framework.cycle_state import CycleState
from netsched.framework.interfaces import FilterPlugin, PreFilterPlugin, WaitingPod
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Status
from netsched.framework.types import NodeInfo, PodInfo
from netsched.testing.clock import FakeClock


@dataclass
class RecordingAPI:
    """ClusterAPI that records calls; set `fail_bind` to an exception to make bind raise."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)
    fail_bind: BaseException | None = None

    def bind(self, pod: PodInfo, node_name: str) -> None:
        if self.fail_bind is not None:
            raise self.fail_bind
        self.calls.append(("bind", pod.key, node_name))

    def delete_pod(self, pod: PodInfo, grace_period_seconds: int | None = None) -> None:
        self.calls.append(("delete", pod.key, ""))

    def set_nominated_node_name(self, pod: PodInfo, node_name: str) -> None:
        self.calls.append(("nominate", pod.key, node_name))


@dataclass
class RecordingEvents:
    events: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, message: str) -> None:
        self.events.append((pod.key, type_, reason, action, message))


class FakeHandle:
    def __init__(
        self,
        snapshot: Snapshot | None = None,
        *,
        filters: Sequence[FilterPlugin] = (),
        pre_filters: Sequence[PreFilterPlugin] = (),
        nominated: Mapping[str, list[PodInfo]] | None = None,
        pdbs: list[Mapping[str, Any]] | None = None,
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
        metrics: Any = None,
        clock: FakeClock | None = None,
    ) -> None:
        self._snapshot = snapshot or Snapshot()
        self.filters = list(filters)
        self.pre_filters = list(pre_filters)
        self._nominated = dict(nominated or {})
        self._pdbs = list(pdbs or [])
        self._namespaces = dict(namespaces or {})
        self._metrics = metrics
        self._clock = clock or FakeClock()
        self.recording_api = RecordingAPI()
        self.recording_events = RecordingEvents()
        self.waiting: dict[str, WaitingPod] = {}

    profile_name = "test-scheduler"
    parallelism = 4

    @property
    def clock(self) -> FakeClock:
        return self._clock

    @property
    def api(self) -> RecordingAPI:
        return self.recording_api

    @property
    def events(self) -> RecordingEvents:
        return self.recording_events

    @property
    def metrics(self) -> Any:
        return self._metrics

    def set_snapshot(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def iterate_waiting_pods(self) -> Iterator[WaitingPod]:
        return iter(list(self.waiting.values()))

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting.get(uid)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._nominated.get(node_name, []))

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status:
        for f in self.filters:
            st = f.filter(state, pod, node)
            if not st.ok:
                return st.with_plugin(f.name)
        return Status.success()

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status:
        for p in self.pre_filters:
            st = p.add_pod(state, pod, to_add, node)
            if not st.ok:
                return st
        return Status.success()

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        for p in self.pre_filters:
            st = p.remove_pod(state, pod, to_remove, node)
            if not st.ok:
                return st
        return Status.success()

    def list_pdbs(self) -> list[Mapping[str, Any]]:
        return list(self._pdbs)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._namespaces.get(namespace)
