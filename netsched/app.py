"""The composition root: the only module that imports plugins/, and the running scheduler.

`build_registry` merges the in-tree plugins with out-of-tree ones.
`SchedulerApp` puts the parts netsched.assemble wires around one KubeAPI
(event broadcaster, metrics hub, reflectors) and runs them: informers,
background loops, the scheduling loop (started and paused by leadership),
hot reload (`apply_config`) and shutdown. What the `netsched` command does
around it is netsched.serve (start-up, endpoints, leader election, signals);
the flags and the config they change are netsched.options.

Out-of-tree plugins are added with one call:

    import netsched
    netsched.main(netsched.with_plugin(MyPlugin))
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from netsched.assemble import Edges, assemble
from netsched.cache import ObjectStore
from netsched.clock import Clock, SystemClock
from netsched.config import ConfigError, SchedulerConfig
from netsched.framework.cluster_events import METRICS_POLLED_EVENT
from netsched.framework.errors import FrameworkBuildError
from netsched.framework.extension_points import PluginFactory
from netsched.framework.fields import FieldError
from netsched.framework.registry import Registry
from netsched.framework.runtime import Framework
from netsched.framework.seams import ClusterAPI, EventRecorder
from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.server import SecureServing
from netsched.observability.tls import ServingCert
from netsched.shadow import DryRunAPI

if TYPE_CHECKING:
    from netsched.kube.api import KubeAPI
    from netsched.kube.events import EventBroadcaster
    from netsched.kube.reflector import Reflector

log = logging.getLogger(__name__)


def build_registry(out_of_tree: Sequence[PluginFactory] = ()) -> Registry:
    """In-tree plugins merged with out-of-tree ones; a duplicate name raises RegistryError."""
    if TYPE_CHECKING:  # mypy checks plugins/ as the package `plugins` (python/mypy#10564)
        from plugins.registry import in_tree_plugins
    else:
        from netsched.plugins.registry import in_tree_plugins
    return Registry(in_tree_plugins()).merge(out_of_tree)


@dataclass
class AppOptions:
    # Plain HTTP, no auth (tests, local use): only when asked for; "" or port 0: off.
    metrics_bind_address: str = ""
    # HTTPS with delegated authn/authz, as kube-scheduler's --secure-port (None: off).
    secure: SecureServing | None = None
    dry_run: bool = False
    shadow_scheduler_name: str = "default-scheduler"
    shadow_annotate: bool = False
    explain_annotations: bool = False
    housekeeping_interval: float = 1.0
    watch_timeout: int = 300
    # kube's SchedulerQueueingHints gate (--feature-gates): off, every event moves every parked pod.
    queueing_hints: bool = True


class SchedulerApp:
    """Everything a running scheduler is made of, around one KubeAPI."""

    def __init__(
        self,
        cfg: SchedulerConfig,
        registry: Mapping[str, PluginFactory],
        kube: KubeAPI,
        *,
        events: EventBroadcaster | None = None,
        clock: Clock | None = None,
        metrics_registry: CollectorRegistry | None = None,
        options: AppOptions | None = None,
    ) -> None:
        from netsched.metrics import MetricsHub

        self.cfg = cfg
        self.kube = kube
        self.clock: Clock = clock or SystemClock()
        self.options = options or AppOptions()
        self.metrics_registry = metrics_registry if metrics_registry is not None else CollectorRegistry()
        self.metrics = SchedulerMetrics(self.metrics_registry)
        self.broadcaster = events if events is not None else self._event_broadcaster(kube)
        self.hub = MetricsHub(registry=self.metrics_registry, clock=self.clock)
        self.stop_event = threading.Event()
        self.objects = ObjectStore()

        self.shadow: DryRunAPI | None = None
        api: ClusterAPI = kube
        if self.options.dry_run:
            # Every write the plugins or the scheduler would make is recorded instead.
            self.shadow = DryRunAPI(
                cfg.profiles[0].scheduler_name, self.metrics, kube if self.options.shadow_annotate else None
            )
            api = self.shadow
        parts = assemble(
            cfg,
            registry,
            Edges(
                api=api,
                recorder=self._recorder,
                clock=self.clock,
                hub=self.hub,
                metrics=self.metrics,
                objects=self.objects,
                # Shadow the other scheduler's pods with our first profile; ours are left alone.
                shadow_of=self.options.shadow_scheduler_name if self.options.dry_run else None,
                on_assigned=self.shadow.observed_binding if self.shadow is not None else None,
                explain_annotations=self.options.explain_annotations,
                queueing_hints=self.options.queueing_hints,
                bind_thread_init=None if self.options.dry_run else self.broadcaster.write_from_this_thread,
                leading=lambda: self.leading,
            ),
        )
        self.cache = parts.cache
        self.profiles = parts.profiles
        self._recorders = parts.recorders
        self.queue = parts.queue
        self.handlers = parts.handlers
        self.scheduler = parts.scheduler
        self.shared = parts.shared
        self.periodic = parts.periodic
        self.debug_pages = parts.debug_pages
        self._build_frameworks = parts.build_frameworks
        self._swap_lock = threading.Lock()
        self.reflectors: list[Reflector] = []
        self.serving_cert: ServingCert | None = None
        self._threads: list[threading.Thread] = []
        self._periodic_thread: threading.Thread | None = None
        self._leading = threading.Event()
        self._loop_stop = threading.Event()
        self._scheduling_stopped = False  # stop_scheduling is final: it runs once
        self._loop_thread: threading.Thread | None = None

    # ------------------------------------------------------------ wiring helpers

    def _event_broadcaster(self, kube: KubeAPI) -> EventBroadcaster:
        from netsched.kube.events import POOL_SIZE, new_event_broadcaster
        from netsched.kube.kubeconfig import derived_client

        # As kube-scheduler: events get a client, rate budget (the same qps/burst, their own bucket)
        # and pool of their own, so bindings never starve them; a large queue: a burst drops none.
        return new_event_broadcaster(
            derived_client(kube.client, pool_size=POOL_SIZE),
            queue_size=20000,
            on_drop=lambda why: self.metrics.events_dropped.labels(why).inc(),
            on_written=self.metrics.event_write_latency.observe,
        )

    def _recorder(self, scheduler_name: str) -> EventRecorder:
        if self.options.dry_run:
            from netsched.shadow import NullEvents

            return NullEvents()
        return self.broadcaster.new_recorder(scheduler_name)

    # ------------------------------------------------------------ hot reload

    def apply_config(self, cfg: SchedulerConfig) -> None:
        """Run `cfg`'s profiles from the next scheduling cycle on (hot reload).

        New Frameworks are built (plugins get their new args; metrics plugins ask
        the shared MetricsHub for their new sources) and swapped into the
        scheduler between two cycles; the queue, cache, nominations, waiting
        pods and leadership are kept. The caller (ConfigReloader) has already
        refused changes that need a restart. Raises ConfigError when a profile
        cannot be built, leaving everything as it was.
        """
        assert self._build_frameworks is not None
        generation = self.hub.new_generation()
        try:
            frameworks = self._build_frameworks(cfg)
        except FrameworkBuildError as e:
            raise ConfigError([FieldError("profiles", "Invalid value", str(e))]) from e
        with self._swap_lock:
            self.cfg = cfg
            self.profiles.stage(frameworks)  # PreEnqueue, hints and the cycle switch together
            if not self._loop_running():
                self.scheduler.swap_frameworks()  # no cycle can be running: swap now
        # Prometheus settings that changed: the old pollers stop (a last cycle of the old
        # plugins may still read their final values, never a closed client's).
        self.hub.prune_before(generation)

    @property
    def frameworks(self) -> Mapping[str, Framework]:
        """The profiles in use (netsched.profiles.Profiles.current)."""
        return self.profiles.current

    def _loop_running(self) -> bool:
        return self._loop_thread is not None and self._loop_thread.is_alive()

    # ------------------------------------------------------------ lifecycle

    def start_informers(
        self,
        sync_timeout: float | None = None,
        *,
        stop: threading.Event | None = None,
        freeze_heap: bool = False,
    ) -> bool:
        """List+watch nodes, pods and the OBJECT_KINDS, and wait until every cache has synced (True)
        or `stop` (default: the app's own stop event) is set first, or `sync_timeout` seconds pass
        when given (False). The wait is netsched.kube.cachesync's, as kube's: no limit of its own.

        `freeze_heap` (the process's one scheduler: the CLI, benchmarks): the initial lists build
        the whole cache, with no reference cycles, so the cyclic GC stays off meanwhile (it would
        traverse the growing heap again and again), and what start-up built, which lives as long
        as the process, is frozen out of the GC's generations so later collections skip it.
        """
        stop = self.stop_event if stop is None else stop
        if not freeze_heap:
            return self._list_and_watch(stop, sync_timeout)
        from netsched.gcpause import gc_paused

        with gc_paused():
            synced = self._list_and_watch(stop, sync_timeout)
        gc.freeze()
        return synced

    def _list_and_watch(self, stop: threading.Event, sync_timeout: float | None) -> bool:
        from netsched.kube.cachesync import wait_for_cache_sync
        from netsched.kube.resources import NODES, OBJECT_KINDS, PODS, Resource

        handlers: dict[Resource, Callable[[str, dict[str, Any]], None]] = {
            NODES: self.handlers.on_node_event,
            PODS: self.handlers.on_pod_event,
        }
        enabled = {name for fwk in self.frameworks.values() for name in fwk.plugins}
        for kind in OBJECT_KINDS:
            if kind.needed_by and not enabled.intersection(kind.needed_by):
                continue  # only its plugins read it (and only they ship its RBAC)
            handlers[kind] = self.objects.handler(kind.key)
        wt = self.options.watch_timeout
        self.reflectors = [self.kube.reflector(kind, on, watch_timeout=wt) for kind, on in handlers.items()]
        for r in self.reflectors:
            r.start()
        server = self.kube.client.host
        # In real time, as the reflectors' own backoff (their lists are real requests), whatever
        # clock the app's queues and leases run on.
        clock = SystemClock()
        if not wait_for_cache_sync(self.reflectors, stop, server=server, clock=clock, timeout=sync_timeout):
            unsynced = [r.name for r in self.reflectors if not r.has_synced.is_set()]
            log.info(
                "Stopped waiting for the caches to sync server=%s waitingFor=%s", server, ",".join(unsynced)
            )
            return False
        self.cache.notify_node_listeners(force=True)
        log.info(
            "Caches synced nodes=%d pods=%d pending=%d",
            len(self.cache.node_names()),
            self.cache.pod_count(),
            self.handlers.pending_count(),
        )
        return True

    @property
    def synced(self) -> bool:
        return bool(self.reflectors) and all(r.has_synced.is_set() for r in self.reflectors)

    def start_background(self) -> None:
        """Queue flushing, assumed-pod expiry, node-listener delivery and the metrics poller."""
        flush = threading.Thread(
            target=self.queue.run_flush_loop, args=(self.stop_event,), name="queue-flush", daemon=True
        )
        house = threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True)
        # The plugins' periodic work (Handle.every): one loop, ended by the stop event.
        self._periodic_thread = threading.Thread(
            target=self.periodic.run, args=(self.stop_event,), name="periodic-tasks", daemon=True
        )
        for t in (flush, house, self._periodic_thread):
            t.start()
            self._threads.append(t)
        # The first poll runs beside the first scheduling cycles, never before them: a slow or
        # unreachable Prometheus must not delay the first bind (kube-scheduler has no such
        # wait).  Until it lands the sources are in fallback, so pods placed meanwhile follow
        # the stale policy (requests-based scores; LoadThreshold passes all nodes under
        # failOpen, rejects them under failClosed and they are retried on METRICS_POLLED).
        self.hub.start(first_poll_timeout=None)

    def _housekeeping(self) -> None:
        interval = self.options.housekeeping_interval
        polls_seen = 0
        while not self.stop_event.wait(interval):
            try:
                # New measurements are a cluster event for pods a load filter rejected:
                # without this they would wait up to 5 minutes in the unschedulable pool.
                polls = sum(p.polls for p in self.hub.pollers)
                if polls != polls_seen:
                    polls_seen = polls
                    self.queue.move_all_to_active_or_backoff(METRICS_POLLED_EVENT)
                self.cache.cleanup_expired()
                self.cache.notify_node_listeners()
                self.metrics.cache_nodes.set(len(self.cache.node_names()))
                self.metrics.cache_assumed_pods.set(self.cache.assumed_count())
            except Exception:
                log.exception("Housekeeping failed")

    def start_scheduling(self) -> None:
        """Start (or resume, after regaining leadership) the scheduling loop."""
        with self._swap_lock:
            if self._loop_running() and not self._loop_stop.is_set():
                return
            if self._loop_thread is not None:
                # Leadership regained before the paused loop ended (it does after its current
                # cycle): wait for it, or scheduling would never resume, nor two loops run.
                self._loop_thread.join()
            self._start_loop()

    def _start_loop(self) -> None:
        self._loop_stop = threading.Event()
        self._leading.set()
        self.metrics.leader.set(1)
        self._loop_thread = threading.Thread(
            target=self.scheduler.run, args=(self._loop_stop,), name="scheduling-loop", daemon=True
        )
        self._loop_thread.start()

    def pause_scheduling(self) -> None:
        """Stop taking new pods now, without waiting (the elector's callback must be quick)."""
        self._pause_loop()
        if not self._scheduling_stopped:  # a lease released on shutdown is no pause
            log.info("Scheduling paused (not leading)")

    def _pause_loop(self) -> None:
        self._leading.clear()
        self._loop_stop.set()

    def stop_scheduling(self, timeout: float = 30.0) -> None:
        """Stop taking new pods (shutting down), end the binding cycle's waits (Permit, PreBind,
        API retries) and wait for the bindings in flight to finish.  Final; a second call (shutdown
        after serve's own call) does nothing."""
        if self._scheduling_stopped:
            return
        self._scheduling_stopped = True
        self._pause_loop()  # shutting down, not losing the lease: serve() said so
        self.metrics.leader.set(0)
        if self._loop_thread is not None:
            self._loop_thread.join(timeout)
        for fwk in self.frameworks.values():
            fwk.cancel_binding_waits()
        self.kube.client.cancel_retries()
        self.scheduler.binder.drain(timeout)

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    def shutdown(self, timeout: float = 30.0) -> None:
        self.stop_scheduling(timeout)
        self.stop_event.set()
        self.queue.close()
        self.scheduler.shutdown(timeout)
        # The plugins' periodic loop runs each task a last time (statuses the last bindings
        # changed) and ends; when it never started, that last run happens here.
        self.periodic.stop()
        if self._periodic_thread is not None:
            self._periodic_thread.join(min(timeout, 5.0))
        else:
            self.periodic.run_all()
        from netsched.kube.reflector import stop_reflectors

        stop_reflectors(self.reflectors, min(timeout, 5.0))
        self.hub.stop()
        # Every queued event is written within the grace period (SIGTERM), retries included.
        self.broadcaster.stop(min(timeout, 10.0))
