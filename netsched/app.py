"""The composition root: the only module that imports plugins/, and the running scheduler.

`build_registry` merges the in-tree plugins with out-of-tree ones.
`SchedulerApp` puts the parts netsched.assemble wires around one KubeAPI
(event broadcaster, metrics hub, reflectors, leader election) and runs them.
`run()` is what `netsched` does (netsched.cli parses the flags): load and
validate the config (every problem at once, exit 1), then schedule until
SIGTERM, which stops taking pods, drains bindings, releases the lease and
exits 0.

Out-of-tree plugins are added with one call:

    import netsched
    netsched.main(netsched.with_plugin(MyPlugin))
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from netsched import logutil
from netsched.assemble import Edges, assemble
from netsched.cache import ObjectStore
from netsched.clock import Clock, SystemClock
from netsched.config import ConfigError, SchedulerConfig, load_config, validate_config, write_config
from netsched.framework.interfaces import EventRecorder, FrameworkBuildError, Plugin
from netsched.framework.registry import Registry, RegistryError
from netsched.observability.metrics import SchedulerMetrics

if TYPE_CHECKING:
    from netsched.kube.events import EventBroadcaster

log = logging.getLogger(__name__)

NETSCHED_SCHEDULER_NAME = "netsched"
# Used when no --config is given: one profile named netsched with kube's default plugins.
DEFAULT_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
"""


def build_registry(out_of_tree: Sequence[type[Plugin]] = ()) -> Registry:
    """In-tree plugins merged with out-of-tree ones; a duplicate name raises RegistryError."""
    from plugins.registry import in_tree_plugins

    return Registry(in_tree_plugins()).merge(out_of_tree)


def load(path: str, registry: Registry) -> SchedulerConfig:
    """The validated config from a file (or the built-in default when path is empty)."""
    return load_config(
        path if path else DEFAULT_CONFIG, registry, default_scheduler_name=NETSCHED_SCHEDULER_NAME
    )


@dataclass
class AppOptions:
    metrics_bind_address: str = "127.0.0.1:10259"
    dry_run: bool = False
    shadow_scheduler_name: str = "default-scheduler"
    shadow_annotate: bool = False
    explain_annotations: bool = False
    housekeeping_interval: float = 1.0
    watch_timeout: int = 300


class SchedulerApp:
    """Everything a running scheduler is made of, around one KubeAPI."""

    def __init__(
        self,
        cfg: SchedulerConfig,
        registry: Mapping[str, type[Plugin]],
        kube: Any,
        *,
        events: Any = None,
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

        self.shadow: Any = None
        api: Any = kube
        if self.options.dry_run:
            from netsched.shadow import DryRunAPI

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
            ),
        )
        self.cache = parts.cache
        self.frameworks = parts.frameworks
        self._recorders = parts.recorders
        self.queue = parts.queue
        self.handlers = parts.handlers
        self.scheduler = parts.scheduler
        self.reflectors: list[Any] = []
        self._threads: list[threading.Thread] = []
        self._leading = threading.Event()
        self._loop_stop = threading.Event()
        self._loop_thread: threading.Thread | None = None

    # ------------------------------------------------------------ wiring helpers

    def _event_broadcaster(self, kube: Any) -> EventBroadcaster:
        from netsched.kube.client import derived_client
        from netsched.kube.events import DEFAULT_WORKERS, new_event_broadcaster

        # As kube-scheduler: events get a client, rate budget (the same qps/burst, their own bucket)
        # and pool of their own, so bindings never starve them; a large queue: a burst drops none.
        return new_event_broadcaster(
            derived_client(kube.client, pool_size=DEFAULT_WORKERS),
            queue_size=20000,
            on_drop=lambda why: self.metrics.events_dropped.labels(why).inc(),
            on_written=self.metrics.event_write_latency.observe,
        )

    def _recorder(self, scheduler_name: str) -> EventRecorder:
        if self.options.dry_run:
            from netsched.shadow import NullEvents

            return NullEvents()
        return self.broadcaster.new_recorder(scheduler_name)

    # ------------------------------------------------------------ lifecycle

    def start_informers(self, sync_timeout: float = 60.0) -> bool:
        """List+watch nodes, pods and the OBJECT_KINDS; True once all have synced within the timeout."""
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
        synced = all(r.wait_for_sync(sync_timeout) for r in self.reflectors)
        self.cache.notify_node_listeners(force=True)
        log.info(
            "Caches synced synced=%s nodes=%d pods=%d pending=%d",
            synced,
            len(self.cache.node_names()),
            self.cache.pod_count(),
            self.handlers.pending_count(),
        )
        return synced

    @property
    def synced(self) -> bool:
        return bool(self.reflectors) and all(r.has_synced.is_set() for r in self.reflectors)

    def start_background(self) -> None:
        """Queue flushing, assumed-pod expiry, node-listener delivery and the metrics poller."""
        flush = threading.Thread(
            target=self.queue.run_flush_loop, args=(self.stop_event,), name="queue-flush", daemon=True
        )
        house = threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True)
        for t in (flush, house):
            t.start()
            self._threads.append(t)
        self.hub.start()

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
                    self.queue.move_all_to_active_or_backoff("MetricsPolled")
                self.cache.cleanup_expired()
                self.cache.notify_node_listeners()
                self.metrics.cache_nodes.set(len(self.cache.node_names()))
                self.metrics.cache_assumed_pods.set(self.cache.assumed_count())
            except Exception:
                log.exception("Housekeeping failed")

    def start_scheduling(self) -> None:
        """Start (or resume, after regaining leadership) the scheduling loop."""
        if self._loop_thread is not None and self._loop_thread.is_alive():
            return
        self._loop_stop = threading.Event()
        self._leading.set()
        self.metrics.leader.set(1)
        self._loop_thread = threading.Thread(
            target=self.scheduler.run, args=(self._loop_stop,), name="scheduling-loop", daemon=True
        )
        self._loop_thread.start()

    def pause_scheduling(self) -> None:
        """Stop taking new pods now, without waiting (the elector's callback must be quick)."""
        self._leading.clear()
        self._loop_stop.set()
        log.info("Scheduling paused (not leading)")

    def stop_scheduling(self, timeout: float = 30.0) -> None:
        """Stop taking new pods (shutting down) and wait for in-flight bindings to finish."""
        self.pause_scheduling()
        self.metrics.leader.set(0)
        if self._loop_thread is not None:
            self._loop_thread.join(timeout)
        self.scheduler.binder.drain(timeout)

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    def shutdown(self, timeout: float = 30.0) -> None:
        self.stop_scheduling(timeout)
        self.stop_event.set()
        self.queue.close()
        self.scheduler.shutdown(timeout)
        for r in self.reflectors:
            r.stop()
        self.hub.stop()
        # Every queued event is written within the grace period (SIGTERM), retries included.
        self.broadcaster.stop(min(timeout, 10.0))


# ---------------------------------------------------------------- CLI entry


def _apply_flags(cfg: SchedulerConfig, opts: argparse.Namespace) -> None:
    if opts.leader_elect is not None:
        cfg.leader_election.leader_elect = opts.leader_elect
    if opts.kube_api_qps is not None:
        cfg.client_connection.qps = opts.kube_api_qps
    if opts.kube_api_burst is not None:
        cfg.client_connection.burst = opts.kube_api_burst
    if opts.kubeconfig:
        cfg.client_connection.kubeconfig = opts.kubeconfig


def _print_config_error(err: ConfigError, source: str) -> None:
    print(f"netsched: invalid configuration in {source or 'the built-in default'}:", file=sys.stderr)
    for e in err.errors:
        print(f"  {e}", file=sys.stderr)


def run(opts: argparse.Namespace, out_of_tree: Sequence[type[Plugin]] = ()) -> int:
    logutil.setup(opts.verbosity, opts.logging_format)
    try:
        registry = build_registry(out_of_tree)
    except RegistryError as e:
        print(f"netsched: {e}", file=sys.stderr)
        return 1
    try:
        cfg = load(opts.config, registry)
        _apply_flags(cfg, opts)
        errs = validate_config(cfg)
        if errs:
            raise ConfigError(errs)
    except ConfigError as e:
        _print_config_error(e, opts.config)
        return 1
    except OSError as e:
        print(f"netsched: cannot read --config {opts.config!r}: {e}", file=sys.stderr)
        return 1
    if opts.write_config_to:
        write_config(cfg, opts.write_config_to)
        log.info("Wrote configuration file=%s", opts.write_config_to)
        return 0

    from netsched.kube import KubeAPI, KubeConfigError, build_api_client

    try:
        client = build_api_client(
            cfg.client_connection.kubeconfig,
            opts.master,
            qps=cfg.client_connection.qps,
            burst=cfg.client_connection.burst,
            pool_size=cfg.parallelism + 8,
        )
    except KubeConfigError as e:
        print(f"netsched: {e}", file=sys.stderr)
        return 1
    try:
        app = SchedulerApp(
            cfg,
            registry,
            KubeAPI(client),
            options=AppOptions(
                metrics_bind_address=opts.metrics_bind_address,
                dry_run=opts.dry_run,
                shadow_scheduler_name=opts.shadow_scheduler_name,
                shadow_annotate=opts.shadow_annotate,
                explain_annotations=opts.explain_annotations,
            ),
        )
    except (FrameworkBuildError, ConfigError) as e:
        print(f"netsched: {e}", file=sys.stderr)
        return 1
    return serve(app)


def serve(app: SchedulerApp) -> int:
    """Run until SIGTERM/SIGINT: informers, endpoints, leader election, scheduling."""
    stop = threading.Event()

    def _signal(signum: int, _frame: Any) -> None:
        log.info("Received signal, shutting down signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    server = _start_server(app)
    app.start_informers()
    app.start_background()
    elector = _start_election(app, stop)
    if elector is None:
        app.start_scheduling()
    stop.wait()
    log.info("Stopping: no new pods; draining bindings")
    app.stop_scheduling()
    if elector is not None:
        elector.stop(release=True)
    app.shutdown()
    if server is not None:
        server.stop()
    log.info("Stopped")
    return 0


def _start_server(app: SchedulerApp) -> Any:
    from netsched.observability.server import ObservabilityServer, parse_bind_address

    host, port = parse_bind_address(app.options.metrics_bind_address)
    if port == 0:
        return None

    def ready() -> tuple[bool, dict[str, Any]]:
        role = "leader" if app.leading else "standby"
        return app.synced, {"synced": app.synced, "role": role}

    server = ObservabilityServer(
        address=host,
        port=port,
        registry=app.metrics_registry,
        health=lambda: (True, "ok"),
        ready=ready,
        debug_handlers=debug_handlers(app),
    )
    server.start()
    log.info("Serving metrics and health address=%s port=%s", host, server.port)
    return server


def debug_handlers(app: SchedulerApp) -> dict[str, Any]:
    """/debug/explain?pod=NAMESPACE/NAME[&format=text]: per-node filter verdicts and scores."""

    def explain_endpoint(query: Mapping[str, Any]) -> tuple[int, str, bytes]:
        key = _one(query.get("pod"))
        if not key or "/" not in key:
            return 400, "text/plain", b"usage: /debug/explain?pod=NAMESPACE/NAME[&format=text]\n"
        pod = app.handlers.pending_pod_by_key(key) or app.cache.find_pod(key)
        if pod is None:
            return 404, "text/plain", f"pod {key} is not pending for netsched nor known on a node\n".encode()
        # On the Explainer's own snapshot copy and framework replica: never the scheduling thread's.
        result = app.scheduler.explainer.explain(pod)
        if _one(query.get("format")) == "text":
            return 200, "text/plain; charset=utf-8", (result.table() + "\n").encode()
        return 200, "application/json", result.to_json().encode()

    return {"/debug/explain": explain_endpoint}


def _one(v: Any) -> str:
    if isinstance(v, list):
        return str(v[0]) if v else ""
    return "" if v is None else str(v)


def _start_election(app: SchedulerApp, stop: threading.Event) -> Any:
    """Campaign for the lease; schedule only while leading. None when election is off."""
    le = app.cfg.leader_election
    if not le.leader_elect:
        return None
    from netsched.kube.client import KubeClient
    from netsched.kube.lease import KubeLeaseClient
    from netsched.leaderelection import ElectorConfig, LeaderElector

    # Lease calls get their own client (same connection pool, no shared rate limiter), so a
    # burst of bindings can never delay a renewal past the renew deadline.
    leases = KubeLeaseClient(KubeClient(app.kube.client.api_client))
    elector = LeaderElector(
        ElectorConfig.from_config(le),
        leases,
        on_started_leading=app.start_scheduling,
        on_stopped_leading=app.pause_scheduling,
        on_new_leader=lambda who: log.info("New leader elected leader=%s", who),
        gauge=app.metrics.leader,
    )
    log.info(
        "Campaigning for leadership lease=%s/%s identity=%s",
        le.resource_namespace,
        le.resource_name,
        elector.identity,
    )
    elector.start()
    return elector
