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
import gc
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
from netsched.framework.fields import FieldError
from netsched.framework.interfaces import (
    METRICS_POLLED_EVENT,
    EventRecorder,
    FrameworkBuildError,
    PluginFactory,
)
from netsched.framework.registry import Registry, RegistryError
from netsched.observability.auth import AuthSettings, DelegatingAuth
from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.server import ObservabilityServer, SecureServing, parse_bind_address
from netsched.observability.tls import CertificateError, ServingCert, serving_cert

if TYPE_CHECKING:
    from netsched.config.reload import ConfigReloader
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


def build_registry(out_of_tree: Sequence[PluginFactory] = ()) -> Registry:
    """In-tree plugins merged with out-of-tree ones; a duplicate name raises RegistryError."""
    from netsched.plugins.registry import in_tree_plugins

    return Registry(in_tree_plugins()).merge(out_of_tree)


def load(path: str, registry: Registry) -> SchedulerConfig:
    """The validated config from a file (or the built-in default when path is empty)."""
    return load_config(
        path if path else DEFAULT_CONFIG, registry, default_scheduler_name=NETSCHED_SCHEDULER_NAME
    )


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
                queueing_hints=self.options.queueing_hints,
            ),
        )
        self.cache = parts.cache
        self.frameworks = parts.frameworks
        self._recorders = parts.recorders
        self.queue = parts.queue
        self.handlers = parts.handlers
        self.scheduler = parts.scheduler
        self._build_frameworks = parts.build_frameworks
        self._swap_lock = threading.Lock()
        self.reflectors: list[Any] = []
        self.serving_cert: ServingCert | None = None
        self._threads: list[threading.Thread] = []
        self._leading = threading.Event()
        self._loop_stop = threading.Event()
        self._loop_thread: threading.Thread | None = None

    # ------------------------------------------------------------ wiring helpers

    def _event_broadcaster(self, kube: Any) -> EventBroadcaster:
        from netsched.kube.client import derived_client
        from netsched.kube.events import POOL_SIZE, new_event_broadcaster

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
            self.frameworks.clear()  # the queue's PreEnqueue reads this dict
            self.frameworks.update(frameworks)
            self.scheduler.replace_frameworks(frameworks)
            if not self._loop_running():
                self.scheduler.swap_frameworks()  # no cycle can be running: swap now
        # Prometheus settings that changed: the old pollers stop (a last cycle of the old
        # plugins may still read their final values, never a closed client's).
        self.hub.prune_before(generation)

    def _loop_running(self) -> bool:
        return self._loop_thread is not None and self._loop_thread.is_alive()

    # ------------------------------------------------------------ lifecycle

    def start_informers(self, sync_timeout: float = 60.0, *, freeze_heap: bool = False) -> bool:
        """List+watch nodes, pods and the OBJECT_KINDS; True once all have synced within the timeout.

        `freeze_heap` (the process's one scheduler: the CLI, benchmarks): the initial lists build
        the whole cache, with no reference cycles, so the cyclic GC stays off meanwhile (it would
        traverse the growing heap again and again), and what start-up built, which lives as long
        as the process, is frozen out of the GC's generations so later collections skip it.
        """
        if not freeze_heap:
            return self._list_and_watch(sync_timeout)
        from netsched.kube.client import gc_paused

        with gc_paused():
            synced = self._list_and_watch(sync_timeout)
        gc.freeze()
        return synced

    def _list_and_watch(self, sync_timeout: float) -> bool:
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
            if self._loop_running():
                return
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

# Flags that kube-scheduler marks DEPRECATED and ignores when --config is given
# (cmd/kube-scheduler/app/options/deprecated.go, ApplyTo); dest -> flag.
DEPRECATED_FLAGS = {
    "kubeconfig": "--kubeconfig",
    "kube_api_qps": "--kube-api-qps",
    "kube_api_burst": "--kube-api-burst",
    "kube_api_content_type": "--kube-api-content-type",
    "profiling": "--profiling",
    "contention_profiling": "--contention-profiling",
}
# kube v1.31 gates about scheduling that netsched knows: accepted, so kube command lines keep
# working; APPLIED_FEATURE_GATES change behaviour, the others keep their v1.31 default whatever
# value is given.
APPLIED_FEATURE_GATES = frozenset({"SchedulerQueueingHints"})
KNOWN_FEATURE_GATES = frozenset(
    {
        "SchedulerQueueingHints",
        "PodSchedulingReadiness",
        "MatchLabelKeysInPodAffinity",
        "MatchLabelKeysInPodTopologySpread",
        "NodeInclusionPolicyInPodTopologySpread",
        "MinDomainsInPodTopologySpread",
        "PodDisruptionConditions",
        "DynamicResourceAllocation",
        "VolumeCapacityPriority",
        "InPlacePodVerticalScaling",
        "PodLevelResources",
        "AllAlpha",
        "AllBeta",
    }
)


def apply_flags(cfg: SchedulerConfig, opts: argparse.Namespace) -> list[str]:
    """Command-line flags over the config, with kube-scheduler's precedence; returns the flags ignored.

    As kube's Options.ApplyTo: leader-election flags that were given override the
    file's leaderElection either way; the deprecated flags that map to config
    fields (--kubeconfig, --kube-api-qps/-burst/-content-type, --profiling,
    --contention-profiling) apply only without --config and are ignored (the
    caller warns) when a config file is given.
    """
    le = cfg.leader_election
    for dest, attr in (
        ("leader_elect", "leader_elect"),
        ("leader_elect_lease_duration", "lease_duration"),
        ("leader_elect_renew_deadline", "renew_deadline"),
        ("leader_elect_retry_period", "retry_period"),
        ("leader_elect_resource_lock", "resource_lock"),
        ("leader_elect_resource_name", "resource_name"),
        ("leader_elect_resource_namespace", "resource_namespace"),
    ):
        value = getattr(opts, dest, None)
        if value is not None:
            setattr(le, attr, value)
    given = [flag for dest, flag in DEPRECATED_FLAGS.items() if getattr(opts, dest, None) is not None]
    if getattr(opts, "config", ""):
        return given
    cc = cfg.client_connection
    if opts.kubeconfig is not None:
        cc.kubeconfig = opts.kubeconfig
    if opts.kube_api_qps is not None:
        cc.qps = opts.kube_api_qps
    if opts.kube_api_burst is not None:
        cc.burst = opts.kube_api_burst
    if opts.kube_api_content_type is not None:
        cc.content_type = opts.kube_api_content_type
    if opts.profiling is not None:
        cfg.enable_profiling = opts.profiling
        cfg.enable_contention_profiling = opts.profiling
    if opts.contention_profiling is not None:
        cfg.enable_contention_profiling = opts.contention_profiling
    return []


def _print_config_error(err: ConfigError, source: str) -> None:
    print(f"netsched: invalid configuration in {source or 'the built-in default'}:", file=sys.stderr)
    for e in err.errors:
        print(f"  {e}", file=sys.stderr)


def _load_with_flags(source: str, registry: Registry, opts: argparse.Namespace) -> SchedulerConfig:
    """The config from a file (or YAML text, on reload) with the flags applied, validated again."""
    cfg = load(source, registry)
    apply_flags(cfg, opts)
    errs = validate_config(cfg)
    if errs:
        raise ConfigError(errs)
    return cfg


def _warn_about_flags(opts: argparse.Namespace, cfg: SchedulerConfig, ignored: Sequence[str]) -> None:
    for flag in ignored:
        log.warning("Flag ignored because --config is given (as kube-scheduler) flag=%s", flag)
    if opts.port == 0:
        log.warning("--port is deprecated and has no effect (insecure serving was removed)")
    for gate, value in sorted(opts.feature_gates.items()):
        if gate in APPLIED_FEATURE_GATES:
            log.info("Feature gate applied gate=%s value=%s", gate, value)
        elif gate in KNOWN_FEATURE_GATES:
            log.info("Feature gate accepted; netsched follows kube v1.31 gate=%s value=%s", gate, value)
        else:
            log.warning("Unknown feature gate; ignored gate=%s value=%s", gate, value)
    if opts.tls_cipher_suites:
        log.warning("--tls-cipher-suites is not applied: OpenSSL's defaults for the TLS version are used")
    if cfg.client_connection.content_type != "application/json":
        log.info(
            "Content type accepted; netsched sends and reads JSON contentType=%s",
            cfg.client_connection.content_type,
        )


def run(opts: argparse.Namespace, out_of_tree: Sequence[PluginFactory] = ()) -> int:
    logutil.setup(opts.verbosity, opts.logging_format)
    try:
        registry = build_registry(out_of_tree)
    except RegistryError as e:
        print(f"netsched: {e}", file=sys.stderr)
        return 1
    try:
        cfg = load(opts.config, registry)
        ignored = apply_flags(cfg, opts)
        errs = validate_config(cfg)
        if errs:
            raise ConfigError(errs)
    except ConfigError as e:
        _print_config_error(e, opts.config)
        return 1
    except OSError as e:
        print(f"netsched: cannot read --config {opts.config!r}: {e}", file=sys.stderr)
        return 1
    _warn_about_flags(opts, cfg, ignored)
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
                secure=_secure_serving(opts),
                dry_run=opts.dry_run,
                shadow_scheduler_name=opts.shadow_scheduler_name,
                shadow_annotate=opts.shadow_annotate,
                explain_annotations=opts.explain_annotations,
                queueing_hints=opts.feature_gates.get("SchedulerQueueingHints", True),
            ),
        )
    except (FrameworkBuildError, ConfigError) as e:
        print(f"netsched: {e}", file=sys.stderr)
        return 1
    reloader = None
    if opts.config:
        from netsched.config.reload import ConfigReloader

        reloader = ConfigReloader(
            opts.config,
            cfg,
            lambda text: _load_with_flags(text, registry, opts),
            app.apply_config,
            metrics=app.metrics,
        )
    return serve(app, reloader, reload_interval=opts.config_reload_interval)


def _secure_serving(opts: argparse.Namespace) -> SecureServing | None:
    if opts.secure_port == 0:
        return None
    return SecureServing(
        bind_address=opts.bind_address,
        port=opts.secure_port,
        cert_file=opts.tls_cert_file,
        key_file=opts.tls_private_key_file,
        cert_dir=opts.cert_dir,
        min_tls_version=opts.tls_min_version,
        authentication_kubeconfig=opts.authentication_kubeconfig,
        authorization_kubeconfig=opts.authorization_kubeconfig,
        always_allow_paths=tuple(opts.authorization_always_allow_paths),
        token_cache_ttl=opts.authentication_token_webhook_cache_ttl,
        authorized_cache_ttl=opts.authorization_webhook_cache_authorized_ttl,
        unauthorized_cache_ttl=opts.authorization_webhook_cache_unauthorized_ttl,
    )


def serve(app: SchedulerApp, reloader: ConfigReloader | None = None, *, reload_interval: float = 2.0) -> int:
    """Run until SIGTERM/SIGINT: informers, endpoints, leader election, scheduling; SIGHUP reloads."""
    stop = threading.Event()

    def _signal(signum: int, _frame: Any) -> None:
        log.info("Received signal, shutting down signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    if reloader is not None:
        _watch_config(reloader, stop, reload_interval)
    # The endpoints (a certificate to generate, sockets to bind) come up while the informers
    # list the cluster: neither waits for the other, and a start-up failure still stops us.
    started: list[Any] = []
    failed: list[BaseException] = []

    def _endpoints() -> None:
        try:
            started.extend(s for s in (_start_secure_server(app), _start_server(app)) if s is not None)
        except (CertificateError, OSError) as e:
            failed.append(e)

    endpoints = threading.Thread(target=_endpoints, name="endpoints-start", daemon=True)
    endpoints.start()
    app.start_informers(freeze_heap=True)
    endpoints.join()
    servers = started
    if failed:
        log.error("Cannot serve the endpoints err=%s", failed[0])
        for server in servers:
            server.stop()
        app.shutdown(timeout=1)
        return 1
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
    for server in servers:
        server.stop()
    if app.serving_cert is not None:
        app.serving_cert.close()
    log.info("Stopped")
    return 0


def _watch_config(reloader: ConfigReloader, stop: threading.Event, interval: float) -> None:
    """Poll the file on a daemon thread; SIGHUP reloads at once (on its own thread: a signal
    handler must not block on the reload lock)."""

    def _hup(_signum: int, _frame: Any) -> None:
        threading.Thread(target=reloader.reload, args=("SIGHUP",), name="config-reload", daemon=True).start()

    signal.signal(signal.SIGHUP, _hup)
    if interval > 0:
        threading.Thread(target=reloader.run, args=(stop, interval), name="config-watch", daemon=True).start()


def _endpoint_checks(app: SchedulerApp) -> dict[str, Any]:
    def ready() -> tuple[bool, dict[str, Any]]:
        role = "leader" if app.leading else "standby"
        return app.synced, {"synced": app.synced, "role": role}

    return {
        "registry": app.metrics_registry,
        "health": lambda: (True, "ok"),
        "ready": ready,
        "debug_handlers": debug_handlers(app),
    }


def _start_server(app: SchedulerApp) -> ObservabilityServer | None:
    """The plain-HTTP, unauthenticated endpoints, only when --metrics-bind-address asks for them."""
    if not app.options.metrics_bind_address:
        return None
    host, port = parse_bind_address(app.options.metrics_bind_address)
    if port == 0:
        return None
    server = ObservabilityServer(address=host, port=port, **_endpoint_checks(app))
    server.start()
    log.warning("Serving plain HTTP WITHOUT authentication (local use only) address=%s", server.url)
    return server


def _start_secure_server(app: SchedulerApp) -> ObservabilityServer | None:
    """HTTPS on --secure-port with delegated authentication and authorization, as kube-scheduler."""
    s = app.options.secure
    if s is None or s.port == 0:
        return None
    from netsched.kube.reviews import review_client

    cert = serving_cert(s.cert_file, s.key_file, cert_dir=s.cert_dir, bind_address=s.bind_address)
    app.serving_cert = cert
    auth = DelegatingAuth(
        review_client(s.authentication_kubeconfig, "--authentication-kubeconfig"),
        review_client(s.authorization_kubeconfig, "--authorization-kubeconfig"),
        AuthSettings(
            always_allow_paths=s.always_allow_paths,
            token_ttl=s.token_cache_ttl,
            allowed_ttl=s.authorized_cache_ttl,
            denied_ttl=s.unauthorized_cache_ttl,
        ),
    )
    server = ObservabilityServer(
        address=s.bind_address or "0.0.0.0",
        port=s.port,
        tls=cert.context(s.min_tls_version),
        auth=auth.check,
        **_endpoint_checks(app),
    )
    server.start()
    log.info("Serving securely address=%s alwaysAllowPaths=%s", server.url, ",".join(s.always_allow_paths))
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

    handlers: dict[str, Any] = {"/debug/explain": explain_endpoint}
    if app.cfg.enable_profiling:
        from netsched.observability.profile import Profiler

        handlers["/debug/pprof/profile"] = Profiler().endpoint
    return handlers


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
