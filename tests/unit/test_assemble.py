"""netsched.assemble: the one wiring of the scheduler's parts, and the public facade."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import netsched
from netsched.app import build_registry
from netsched.assemble import Edges, InlineBinder, Parts, assemble
from netsched.cli import main as cli_main
from netsched.clock import ManualClock
from netsched.config import load_config
from netsched.framework.registry import with_plugin
from netsched.inmemory import InMemoryCluster, MemoryAPI, MemoryEvents
from netsched.testing.builders import make_node, make_pod

TWO_PROFILES = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
- schedulerName: b
"""


def _parts(**edges: Any) -> Parts:
    reg = build_registry()
    events = MemoryEvents()
    return assemble(
        load_config(TWO_PROFILES, reg),
        reg,
        Edges(api=MemoryAPI(), recorder=lambda _name: events, clock=ManualClock(), **edges),
    )


def test_one_framework_per_profile_sharing_waiting_pods_and_nominations() -> None:
    parts = _parts()
    a, b = parts.frameworks["a"], parts.frameworks["b"]
    assert a.profile_name == "a" and b.profile_name == "b"
    assert a._services.waiting_pods is b._services.waiting_pods
    assert parts.queue.nominator is parts.nominator
    pod = make_pod("p").scheduler("b").info()
    parts.nominator.add_nominated(pod, "n1")
    assert [p.key for p in a.nominated_pods_for_node("n1")] == ["default/p"]
    assert set(parts.recorders) == {"a", "b"}
    assert not isinstance(parts.scheduler.binder, InlineBinder)
    parts.scheduler.shutdown(1)


def test_shutdown_reaches_the_frameworks_a_reload_replaced() -> None:
    """A binding still running on a framework from before a reload holds that framework: the
    shutdown that cancels the current ones must end its waits too."""
    reg = build_registry()
    parts = _parts()
    old = parts.frameworks["a"]
    assert parts.build_frameworks is not None
    parts.profiles.stage(parts.build_frameworks(load_config(TWO_PROFILES, reg)))
    parts.profiles.swap()
    assert parts.frameworks["a"] is not old
    for fwk in parts.frameworks.values():
        fwk.cancel_binding_waits()
    assert old.shutting_down()
    parts.scheduler.shutdown(1)


def test_dry_run_answers_for_the_shadowed_scheduler_with_the_first_profile() -> None:
    parts = _parts(shadow_of="default-scheduler")
    assert list(parts.frameworks) == ["default-scheduler"]
    assert parts.frameworks["default-scheduler"].profile_name == "a"
    assert parts.handlers.scheduler_names == {"default-scheduler"}
    parts.scheduler.shutdown(1)


def test_in_memory_cluster_binds_on_the_calling_thread() -> None:
    reg = build_registry()
    cluster = InMemoryCluster(load_config(TWO_PROFILES, reg), reg)
    assert isinstance(cluster.scheduler.binder, InlineBinder)
    assert isinstance(cluster.clock, ManualClock)
    cluster.add_nodes([make_node("n1").capacity(cpu="4", memory="8Gi").obj()])
    cluster.add_pods([make_pod(f"p{i}").scheduler("ab"[i % 2]).req(cpu="1").obj() for i in range(3)])
    assert cluster.schedule_pending() == 3
    # Bound and confirmed before schedule_pending returned: no thread, no wait.
    assert cluster.placements == {f"default/p{i}": "n1" for i in range(3)}
    assert len(cluster.nodes()[0].pods) == 3
    assert cluster.cache.assumed_count() == 0


def test_the_package_exports_main_and_with_plugin() -> None:
    assert netsched.main is cli_main
    assert netsched.with_plugin is with_plugin


def test_importing_the_package_stays_cheap() -> None:
    code = "import sys, netsched; print(sorted(m for m in sys.modules if m.startswith('netsched')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['netsched']"


def test_the_queueing_hints_gate_decides_what_a_node_relabel_moves() -> None:
    """--feature-gates SchedulerQueueingHints=false reaches the queue: a pod NodeResourcesFit
    rejected is then moved by a node relabel, which with hints on (the default) moves nothing."""
    from netsched.framework import NODE, ActionType, ClusterEvent
    from netsched.queue import UNSCHEDULABLE

    relabel = ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL, "NodeUpdate")
    node = make_node("n").label("team", "a").info()
    for hints_on, moved in ((True, 0), (False, 1)):
        parts = _parts(queueing_hints=hints_on)
        q = parts.queue
        pod = make_pod("big").scheduler("a").req(cpu="64").info()
        q.add(pod)
        qp = q.pop(timeout=0)
        assert qp is not None
        qp.unschedulable_plugins = frozenset({"NodeResourcesFit"})
        assert q.add_unschedulable_if_not_present(qp)
        q.done(pod.uid)
        assert q.move_all_to_active_or_backoff(relabel, old=node, new=node) == moved
        assert (q.where(pod.uid) == UNSCHEDULABLE) is (moved == 0)
        parts.scheduler.shutdown(1)


def test_a_bound_or_status_only_update_reuses_the_cached_record(monkeypatch: Any) -> None:
    """The binding's MODIFIED event and kubelet status updates change neither the pod's spec (but
    nodeName) nor the metadata it is parsed from: no second parse. Anything else: a full parse."""
    import netsched.eventhandlers as eh

    parsed: list[str] = []
    real = eh.parse_pod

    def counting(raw: Any) -> Any:
        parsed.append(raw["metadata"].get("labels", {}).get("v", "-"))
        return real(raw)

    monkeypatch.setattr(eh, "parse_pod", counting)
    parts = _parts()
    h, cache = parts.handlers, parts.cache
    pending = make_pod("p").scheduler("a").req(cpu="1").obj()
    h.on_pod_event("ADDED", pending)
    record = cache.assume(real(pending), "n1")
    bound = make_pod("p").scheduler("a").req(cpu="1").node("n1").obj()
    bound["metadata"]["uid"] = pending["metadata"]["uid"]
    bound["metadata"]["resourceVersion"] = "7"
    bound["status"] = {"phase": "Running"}
    h.on_pod_event("MODIFIED", bound)
    got = cache.get_pod(record.uid)
    assert got is not None and got.raw is bound and got.node_name == "n1"
    assert (got.phase, got.resource_version, got.requests) == ("Running", "7", record.requests)
    assert parsed == ["-"]  # only the ADDED event was parsed
    relabelled = {**bound, "metadata": {**bound["metadata"], "labels": {"v": "2"}}}
    h.on_pod_event("MODIFIED", relabelled)
    got = cache.get_pod(record.uid)
    assert parsed == ["-", "2"] and got is not None and got.labels == {"v": "2"}
    parts.scheduler.shutdown(1)


def test_a_reload_reaches_pre_enqueue_the_hints_and_the_cycle_together() -> None:
    """One owner of the current profiles: staged frameworks are used by nobody until the swap
    (between two cycles), then by PreEnqueue, the queueing hints and the cycle at once."""
    from netsched.queue import GATED

    reg = build_registry()
    parts = _parts()
    old = parts.frameworks["a"]
    ungated = TWO_PROFILES.replace(
        "- schedulerName: a\n",
        "- schedulerName: a\n  plugins:\n    preEnqueue:\n      disabled:\n      - name: SchedulingGates\n",
    )
    assert parts.build_frameworks is not None
    new = parts.build_frameworks(load_config(ungated, reg))
    assert "SchedulingGates" in old.plugins and "SchedulingGates" not in new["a"].plugins
    q, h = parts.queue, parts.handlers
    assert q._hints is not None

    def hinted_plugins() -> set[str]:
        hints = q._hints("a") if q._hints is not None else None
        return set(hints._regs) if hints is not None else set()

    parts.profiles.stage(new)
    # Staged, not swapped: PreEnqueue, the hints and the cycle all still have the old profiles.
    before = make_pod("before").scheduler("a").gate("g").obj()
    h.on_pod_event("ADDED", before)
    assert q.where(before["metadata"]["uid"]) == GATED
    assert parts.scheduler.frameworks["a"] is old and hinted_plugins() == set(old.plugins)
    # The cycle swaps before it takes a pod; from then on all three read the new ones.
    parts.scheduler.schedule_one(timeout=0)
    assert parts.scheduler.frameworks["a"] is new["a"] and parts.frameworks["a"] is new["a"]
    assert hinted_plugins() == set(new["a"].plugins)
    after = make_pod("after").scheduler("a").gate("g").obj()
    h.on_pod_event("ADDED", after)
    assert q.where(after["metadata"]["uid"]) != GATED
    parts.scheduler.shutdown(1)


GANGS = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
"""


def test_a_new_pending_pod_is_an_event_only_where_a_plugin_registers_it() -> None:
    """UnscheduledPodAdd costs a pass over the unschedulable pool per new pod: it is sent only
    while a profile's plugin names it (Coscheduling: a member completing its gang's count), as
    kube sends it only with gang scheduling on. A pod whose rejector is unknown to the profile
    moves on any event sent (the safe default), so it shows whether one was."""
    from netsched.queue import UNSCHEDULABLE

    reg = build_registry()
    events = MemoryEvents()
    for config, sent in ((TWO_PROFILES, False), (GANGS, True)):
        edges = Edges(api=MemoryAPI(), recorder=lambda _name: events, clock=ManualClock())
        parts = assemble(load_config(config, reg), reg, edges)
        q, h = parts.queue, parts.handlers
        parked = make_pod("parked").scheduler("a").obj()
        h.on_pod_event("ADDED", parked)
        qp = q.pop(timeout=0)
        assert qp is not None
        qp.unschedulable_plugins = frozenset({"NotInProfile"})
        assert q.add_unschedulable_if_not_present(qp)
        q.done(qp.pod.uid)
        h.on_pod_event("ADDED", make_pod("new").scheduler("a").obj())
        assert (q.where(qp.pod.uid) != UNSCHEDULABLE) is sent, config
        parts.scheduler.shutdown(1)
