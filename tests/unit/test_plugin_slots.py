"""The generic slots a plugin family plugs into: shared services, periodic tasks, pod indexes
(served through the Handle), and object references for events about non-pod objects."""

from __future__ import annotations

import threading

import pytest

from netsched.app import build_registry
from netsched.clock import ManualClock, SystemClock
from netsched.config import load_config
from netsched.framework import (
    CycleState,
    Handle,
    ObjectRef,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    ServiceKey,
    Snapshot,
    Status,
)
from netsched.framework.periodic import PeriodicTasks
from netsched.framework.shared import SharedServices
from netsched.inmemory import InMemoryCluster
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.handle import RecordingEvents


class Counter:
    def __init__(self) -> None:
        self.n = 0


class Other:
    pass


def test_a_shared_service_is_built_once_and_typed_by_its_key() -> None:
    shared = SharedServices()
    key = ServiceKey("counter", Counter)
    built: list[Counter] = []

    def build() -> Counter:
        built.append(Counter())
        return built[-1]

    first = shared.get(key, build)
    assert shared.get(key, build) is first and len(built) == 1
    assert shared.find(key) is first and shared.find(ServiceKey("nothing", Counter)) is None
    with pytest.raises(TypeError, match="two plugin families use one name"):
        shared.get(ServiceKey("counter", Other), Other)


def test_periodic_tasks_run_when_due_on_the_clock_and_soon_when_asked() -> None:
    clock = FakeClock()
    tasks = PeriodicTasks(clock)
    runs: list[str] = []
    tasks.every("a", 5.0, lambda: runs.append("first"))
    tasks.every("a", 1.0, lambda: runs.append("a"))  # registered again: the new callback and interval
    assert tasks.run_due() == 0
    clock.step(5.0)  # the first registration's due time is kept
    assert tasks.run_due() == 1 and runs == ["a"]
    clock.step(1.0)  # then the new interval
    assert tasks.run_due() == 1 and runs == ["a", "a"]
    tasks.soon("a")
    assert tasks.run_due() == 1 and runs == ["a", "a", "a"]
    assert tasks.run_due() == 0
    with pytest.raises(ValueError, match="every must be positive"):
        tasks.every("b", 0, lambda: None)


def test_a_failing_task_does_not_stop_the_others() -> None:
    clock = FakeClock()
    tasks = PeriodicTasks(clock)
    runs: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    tasks.every("bad", 1.0, boom)
    tasks.every("good", 1.0, lambda: runs.append("good"))
    clock.step(1.0)
    assert tasks.run_due() == 2 and runs == ["good"]


def test_the_loop_ends_with_the_stop_event_after_a_last_run() -> None:

    tasks = PeriodicTasks(SystemClock())
    ran = threading.Event()
    runs: list[int] = []

    def work() -> None:
        runs.append(1)
        ran.set()

    tasks.every("w", 3600.0, work)
    stop = threading.Event()
    loop = threading.Thread(target=tasks.run, args=(stop,), daemon=True)
    loop.start()
    tasks.soon("w")
    assert ran.wait(10)
    stop.set()
    tasks.stop()
    loop.join(10)
    assert not loop.is_alive() and len(runs) >= 2  # the nudged run, then the last one


def test_an_event_about_an_object_reference_names_it() -> None:
    events = RecordingEvents()
    ref = ObjectRef("Widget", "example.com/v1", "default", "w1", uid="u1")
    events.event(ref, "Warning", "Broken", "Scheduling", "it broke")
    assert events.events == [("default/w1", "Warning", "Broken", "Scheduling", "it broke")]


def test_a_what_if_snapshot_takes_trial_rows_without_touching_the_cycle_s() -> None:

    live = Snapshot.of(node_infos([make_node(f"n{i}").capacity(cpu="4", pods="10") for i in range(3)], []))
    trial = live.what_if()
    clone = trial.nodes[1].clone()
    clone.add_pod(make_pod("member").req(cpu="2").node("n1").info())
    assert trial.set_node(1, clone)
    cpu = live.col["cpu"]
    assert trial.requested[1, cpu] == 2000 and live.requested[1, cpu] == 0
    assert live.nodes[1] is not clone and not live.nodes[1].pods
    # Refreshed from the live snapshot: the trial row comes back, the other rows stay shared.
    again = live.what_if(trial)
    assert again is trial and again.nodes[1] is live.nodes[1] and again.requested[1, cpu] == 0
    assert all(a is b for a, b in zip(again.nodes, live.nodes, strict=True))
    # A row the cycle's snapshot changed since is copied over; a new layout starts afresh.
    moved = live.nodes[2].clone()
    moved.add_pod(make_pod("other").req(cpu="1").node("n2").info())
    live.set_node(2, moved)
    assert live.what_if(again).requested[2, cpu] == 1000
    live.rebuild(list(live.nodes))
    fresh = live.what_if(again)
    assert fresh.layout_version == live.layout_version and fresh.index is live.index


class _ByApp:
    """A plugin family's shared state: pods seen by its periodic task."""

    def __init__(self) -> None:
        self.ticks = 0


def test_a_plugin_family_plugs_into_a_running_scheduler_through_the_handle() -> None:
    """An out-of-tree plugin registers a pod index (by an `app` label), a shared service and a
    periodic task; the in-memory scheduler keeps the index over pending and assigned pods,
    shares the service across profiles, and runs the task between its steps."""

    key = ServiceKey("by-app", _ByApp)
    seen: list[list[tuple[str, str]]] = []

    class ByApp(PreFilterPlugin[None]):
        name = "ByApp"

        def __init__(self, args: None, handle: Handle) -> None:
            super().__init__(args, handle)
            handle.add_pod_index(
                "by-app", lambda p: f"{p.namespace}/{p.labels.get('app', '')}" if p.labels.get("app") else ""
            )
            self.state = handle.shared(key, _ByApp)
            handle.every("by-app/tick", 1.0, self._tick)

        def _tick(self) -> None:
            self.state.ticks += 1

        def pre_filter(
            self, state: CycleState, pod: PodInfo, snapshot: Snapshot
        ) -> tuple[PreFilterResult | None, Status]:
            seen.append(
                sorted((p.name, p.node_name) for p in self.handle.pods_by_index("by-app", "default/web"))
            )
            return None, Status.success()

    registry = build_registry([ByApp])
    cfg = load_config(
        """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
  plugins: {multiPoint: {enabled: [{name: ByApp}]}}
- schedulerName: b
  plugins: {multiPoint: {enabled: [{name: ByApp}]}}
""",
        registry,
    )
    clock = ManualClock()
    c = InMemoryCluster(cfg, registry, clock=clock)
    c.add_nodes([make_node("n0").capacity(cpu="4", pods="10").obj()])
    c.add_pod(make_pod("w0").scheduler("a").label("app", "web").obj())
    c.add_pod(make_pod("w1").scheduler("b").label("app", "web").obj())
    c.add_pod(make_pod("db").scheduler("a").label("app", "db").obj())
    c.schedule_pending()
    # The first cycle sees both web pods pending; the last (db's) both bound, each once.
    assert len(seen) == 3 and seen[0] == [("w0", ""), ("w1", "")]
    assert seen[1] == [("w0", "n0"), ("w1", "")] and seen[2] == [("w0", "n0"), ("w1", "n0")]
    assert c.placements.keys() == {"default/w0", "default/w1", "default/db"}
    found = c.shared.find(key)
    assert found is not None
    assert all(
        p.state is found
        for fwk in c.frameworks.values()
        for p in fwk.plugins.values()
        if isinstance(p, ByApp)
    )
    clock.step(1.0)
    c.schedule_pending()
    assert found.ticks == 1  # one task for the process, though two profiles registered it


def test_a_build_replaces_the_task_set_and_a_failed_one_keeps_it() -> None:
    clock = FakeClock()
    tasks = PeriodicTasks(clock)
    runs: list[str] = []
    with tasks.registering():
        tasks.every("kept", 1.0, lambda: runs.append("old kept"))
        tasks.every("dropped", 1.0, lambda: runs.append("dropped"))
    assert tasks.names() == ["dropped", "kept"]
    with pytest.raises(RuntimeError), tasks.registering():
        tasks.every("kept", 1.0, lambda: runs.append("never"))
        raise RuntimeError("a profile failed to build")
    clock.step(1.0)
    assert tasks.run_due() == 2 and sorted(runs) == ["dropped", "old kept"]
    runs.clear()
    with tasks.registering():
        tasks.every("kept", 1.0, lambda: runs.append("new kept"))
    assert tasks.names() == ["kept"]
    clock.step(1.0)
    assert tasks.run_due() == 1 and runs == ["new kept"]


def test_after_a_hot_reload_the_new_plugins_tasks_run_and_dropped_ones_stop() -> None:
    """A reloaded plugin's task runs the new instance; a reload that drops the plugin stops it."""

    ran: list[object] = []

    class Tick(PreFilterPlugin[None]):
        name = "Tick"

        def __init__(self, args: None, handle: Handle) -> None:
            super().__init__(args, handle)
            handle.every(f"tick/{handle.profile_name}", 1.0, lambda: ran.append(self))

        def pre_filter(
            self, state: CycleState, pod: PodInfo, snapshot: Snapshot
        ) -> tuple[PreFilterResult | None, Status]:
            return None, Status.success()

    registry = build_registry([Tick])
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
  plugins: {multiPoint: {enabled: [{name: Tick}]}}
"""
    clock = ManualClock()
    c = InMemoryCluster(load_config(config, registry), registry, clock=clock)

    def reload(text: str) -> None:
        c.profiles.stage(c.build_frameworks(load_config(text, registry)))
        c.scheduler.swap_frameworks()

    old = c.frameworks["a"].plugins["Tick"]
    reload(config)
    new = c.frameworks["a"].plugins["Tick"]
    assert new is not old and "tick/a" in c.periodic.names()
    clock.step(1.0)
    c.periodic.run_due()
    assert ran == [new]
    reload(config.replace("  plugins: {multiPoint: {enabled: [{name: Tick}]}}\n", ""))
    assert "Tick" not in c.frameworks["a"].plugins and "tick/a" not in c.periodic.names()
    ran.clear()
    clock.step(1.0)
    c.periodic.run_due()
    assert ran == []


def test_a_reload_empties_what_the_replaced_plugins_kept_in_the_snapshot_cache() -> None:
    """Plugins key what they keep in the snapshot's cache by themselves (a LoadView's per-row
    results are recomputed on every reservation): after a reload nothing of the old ones is
    left there to be kept up to date until the next poll or node change."""

    registry = build_registry([])
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
"""
    c = InMemoryCluster(load_config(config, registry), registry, clock=ManualClock())
    c.scheduler.snapshot.cache["kept by an old plugin"] = object()
    c.profiles.stage(c.build_frameworks(load_config(config, registry)))
    c.scheduler.swap_frameworks()
    assert "kept by an old plugin" not in c.scheduler.snapshot.cache
