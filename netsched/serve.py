"""Running `netsched`: start-up from the flags, the endpoints, leader election, and shutdown.

As kube's cmd/kube-scheduler/app/server.go: `run()` is what the command does
(netsched.cli parses the flags): load and validate the config with the flags
over it (netsched.options; every problem at once, exit 1), build the client
and the SchedulerApp, then `serve()` until SIGTERM, which stops taking pods,
drains bindings, releases the lease and exits 0. The endpoints (HTTPS with
delegated auth, and plain HTTP only when asked) come up while the informers
list the cluster; scheduling starts once this replica leads.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING

from netsched import logutil
from netsched.app import SchedulerApp, build_registry
from netsched.config import ConfigError, write_config
from netsched.framework.errors import FrameworkBuildError
from netsched.framework.extension_points import PluginFactory
from netsched.framework.registry import RegistryError
from netsched.health import ProcessHealth
from netsched.observability.auth import AuthSettings, DelegatingAuth
from netsched.observability.server import (
    DebugHandler,
    ListenError,
    ObservabilityServer,
    SecureServing,
    parse_bind_address,
)
from netsched.observability.tls import CertificateError, serving_cert
from netsched.options import (
    app_options,
    ignored_flags,
    load_with_flags,
    print_config_error,
    warn_about_flags,
)

if TYPE_CHECKING:
    from netsched.config.reload import ConfigReloader
    from netsched.leaderelection import LeaderElector

log = logging.getLogger(__name__)

# kube-scheduler ignores --kubeconfig when --config is given, and so does netsched.
KUBECONFIG_IGNORED = (
    "netsched: --kubeconfig was ignored because --config is given (as in kube-scheduler): put the "
    "path in the config file instead,\n  clientConnection:\n    kubeconfig: /path/to/kubeconfig"
)


def run(opts: argparse.Namespace, out_of_tree: Sequence[PluginFactory] = ()) -> int:
    # First of all: a SIGTERM while starting (a rollout that changes its mind) is a clean stop,
    # never the default action's exit by signal.
    stop = _stop_on_signals()
    logutil.setup(opts.verbosity, opts.logging_format, vmodule=opts.vmodule)
    try:
        registry = build_registry(out_of_tree)
    except RegistryError as e:
        print(f"netsched: {e}", file=sys.stderr)
        return 1
    try:
        cfg = load_with_flags(opts.config, registry, opts)
    except ConfigError as e:
        print_config_error(e, opts.config)
        return 1
    except OSError as e:
        print(f"netsched: cannot read --config {opts.config!r}: {e}", file=sys.stderr)
        return 1
    warn_about_flags(opts, cfg, ignored_flags(opts))
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
        if "--kubeconfig" in ignored_flags(opts):
            print(KUBECONFIG_IGNORED, file=sys.stderr)
        return 1
    try:
        app = SchedulerApp(cfg, registry, KubeAPI(client), options=app_options(opts))
    except (FrameworkBuildError, ConfigError) as e:
        print(f"netsched: {e}", file=sys.stderr)
        return 1
    reloader = None
    if opts.config:
        from netsched.config.reload import ConfigReloader

        reloader = ConfigReloader(
            opts.config,
            cfg,
            lambda text: load_with_flags(text, registry, opts),
            app.apply_config,
            metrics=app.metrics,
        )
    return serve(app, reloader, reload_interval=opts.config_reload_interval, stop=stop)


def _stop_on_signals() -> threading.Event:
    """SIGTERM and SIGINT set the returned event (the main thread's shutdown signal)."""
    stop = threading.Event()

    def _signal(signum: int, _frame: FrameType | None) -> None:
        log.info("Received signal, shutting down signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    return stop


def serve(
    app: SchedulerApp,
    reloader: ConfigReloader | None = None,
    *,
    reload_interval: float = 2.0,
    stop: threading.Event | None = None,
) -> int:
    """Run until SIGTERM/SIGINT: informers, endpoints, leader election, scheduling; SIGHUP reloads.
    `stop`: the event the signals set (run() installs them first thing), else installed here."""
    if stop is None:
        stop = _stop_on_signals()
    if stop.is_set():  # signalled while starting: nothing to run, nothing to drain
        app.shutdown(timeout=1)
        log.info("Stopped")
        return 0
    if reloader is not None:
        _watch_config(reloader, stop, reload_interval)
    # As kube-scheduler, the endpoints' addresses are bound before anything else starts: a
    # port in use is a start-up failure (exit 1, the address named), never a replica that runs
    # without its endpoints. The rest of their start (a certificate to generate, delegated
    # auth) overlaps with the informers' lists; a failure there still stops us.
    health = ProcessHealth(app)
    secure, plain = secure_server(app, health), plain_server(app, health)
    servers = [s for s in (secure, plain) if s is not None]

    def abort() -> int:
        for server in servers:
            server.stop()
        app.shutdown(timeout=1)
        return 1

    for server, flags in ((secure, "--secure-port/--bind-address"), (plain, "--metrics-bind-address")):
        try:
            if server is not None:
                server.listen()
        except ListenError as e:
            log.error("Cannot listen for the endpoints; exiting flags=%s err=%s", flags, e.strerror)
            return abort()
    failed: list[BaseException] = []

    def start_endpoints() -> None:
        try:
            if secure is not None:
                secure_endpoints(app, secure)
            for server in servers:
                server.start()
        except (CertificateError, OSError) as e:
            failed.append(e)
            stop.set()  # ends the cache wait too: a replica without its endpoints must not run
            return
        _log_serving(app, secure, plain)

    endpoints = threading.Thread(target=start_endpoints, name="endpoints-start", daemon=True)
    endpoints.start()
    # As kube-scheduler: no scheduling and no lease campaign before every cache has synced, and
    # no limit on that wait but SIGTERM (scheduling from a cache that never synced would place
    # pods on nodes it has not seen).
    synced = app.start_informers(stop=stop, freeze_heap=True)
    endpoints.join()
    if failed:
        log.error("Cannot serve the endpoints err=%s", failed[0])
        return abort()
    elector = None
    if synced:
        app.start_background()
        elector = start_election(app, stop, health)
        if elector is None:
            app.start_scheduling()
        stop.wait()
        log.info("Shutting down: taking no new pods, finishing the bindings in flight")
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

    def _hup(_signum: int, _frame: FrameType | None) -> None:
        threading.Thread(target=reloader.reload, args=("SIGHUP",), name="config-reload", daemon=True).start()

    signal.signal(signal.SIGHUP, _hup)
    if interval > 0:
        threading.Thread(target=reloader.run, args=(stop, interval), name="config-watch", daemon=True).start()


def endpoints_server(
    app: SchedulerApp, address: str, port: int, health: ProcessHealth | None
) -> ObservabilityServer:
    """An endpoints server (not yet listening) whose checks and handlers answer for `app`;
    `health` is the process's (None: one of its own, without the leader elector's check).
    plain_server() and secure_server() build theirs with it; tests take any port (0)."""

    def ready() -> tuple[bool, dict[str, object]]:
        role = "leader" if app.leading else "standby"
        return app.synced, {"synced": app.synced, "role": role}

    return ObservabilityServer(
        address=address,
        port=port,
        registry=app.metrics_registry,
        checks=(health or ProcessHealth(app)).checks(),
        ready=ready,
        debug_handlers=debug_handlers(app),
    )


def plain_server(app: SchedulerApp, health: ProcessHealth | None = None) -> ObservabilityServer | None:
    """The plain-HTTP, unauthenticated endpoints, only when --metrics-bind-address asks for
    them (not yet listening)."""
    if not app.options.metrics_bind_address:
        return None
    host, port = parse_bind_address(app.options.metrics_bind_address)
    if port == 0:
        return None
    return endpoints_server(app, host, port, health)


def _secure_options(app: SchedulerApp) -> SecureServing:
    assert app.options.secure is not None
    return app.options.secure


def _log_serving(
    app: SchedulerApp, secure: ObservabilityServer | None, plain: ObservabilityServer | None
) -> None:
    if plain is not None:
        log.warning("Serving plain HTTP WITHOUT authentication (local use only) address=%s", plain.url)
    if secure is not None:
        paths = ",".join(_secure_options(app).always_allow_paths)
        log.info("Serving securely address=%s alwaysAllowPaths=%s", secure.url, paths)


def secure_server(app: SchedulerApp, health: ProcessHealth | None = None) -> ObservabilityServer | None:
    """HTTPS on --secure-port (not yet listening, nor with its certificate and auth: see
    secure_endpoints), or None when it is off."""
    s = app.options.secure
    if s is None or s.port == 0:
        return None
    return endpoints_server(app, s.bind_address or "0.0.0.0", s.port, health)


def secure_endpoints(app: SchedulerApp, server: ObservabilityServer) -> None:
    """The serving certificate and delegated authentication and authorization, as
    kube-scheduler's; set on `server` before it starts serving."""
    from netsched.kube.reviews import review_client

    s = _secure_options(app)
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
    server.tls = cert.context(s.min_tls_version)
    server.auth = auth.check


def start_server(app: SchedulerApp) -> ObservabilityServer | None:
    """plain_server(), listening and serving."""
    server = plain_server(app)
    if server is not None:
        server.start()
        _log_serving(app, None, server)
    return server


def start_secure_server(app: SchedulerApp) -> ObservabilityServer | None:
    """secure_server() with its certificate and auth, listening and serving."""
    server = secure_server(app)
    if server is not None:
        secure_endpoints(app, server)
        server.start()
        _log_serving(app, server, None)
    return server


def debug_handlers(app: SchedulerApp) -> Mapping[str, DebugHandler]:
    """/debug/explain?pod=NAMESPACE/NAME[&format=text]: per-node filter verdicts and scores;
    /debug/pprof/profile with --profiling; and the pages the plugins publish
    (Handle.debug_page: the rebalancer's /debug/rebalancer), looked up at each request so that
    a hot reload adds or drops them."""

    def explain_endpoint(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
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

    handlers: dict[str, DebugHandler] = {"/debug/explain": explain_endpoint}
    if app.cfg.enable_profiling:
        from netsched.observability.profile import Profiler

        handlers["/debug/pprof/profile"] = Profiler().endpoint
    return _DebugHandlers(handlers, app.debug_pages)


class _DebugHandlers(Mapping[str, DebugHandler]):
    """The process's own debug endpoints, then the plugins' pages (DebugPages refuses the
    paths of the former), read at each lookup."""

    def __init__(self, own: Mapping[str, DebugHandler], pages: Mapping[str, DebugHandler]) -> None:
        self._own = own
        self._pages = pages

    def __getitem__(self, path: str) -> DebugHandler:
        return self._own[path] if path in self._own else self._pages[path]

    def __iter__(self) -> Iterator[str]:
        yield from self._own
        yield from (p for p in self._pages if p not in self._own)

    def __len__(self) -> int:
        return len(set(self._own) | set(self._pages))


def _one(v: list[str] | None) -> str:
    return v[0] if v else ""


def start_election(
    app: SchedulerApp, stop: threading.Event, health: ProcessHealth | None = None
) -> LeaderElector | None:
    """Campaign for the lease; schedule only while leading. None when election is off. The
    elector runs on the app's clock; `health`'s leaderElection check watches it."""
    le = app.cfg.leader_election
    if not le.leader_elect:
        return None
    from netsched.kube.kubeconfig import derived_client
    from netsched.kube.lease import KubeLeaseClient
    from netsched.leaderelection import ElectorConfig, LeaderElector

    # Lease calls get a client of their own (own connection, no rate limit), so a burst of
    # bindings can never delay a renewal past the renew deadline.
    leases = KubeLeaseClient(derived_client(app.kube.client, pool_size=1, qps=0))
    elector = LeaderElector(
        ElectorConfig.from_config(le),
        leases,
        on_started_leading=app.start_scheduling,
        on_stopped_leading=app.pause_scheduling,
        on_new_leader=lambda who: log.info("New leader elected leader=%s", who),
        gauge=app.metrics.leader,
        clock=app.clock,
    )
    if health is not None:
        health.elector = elector
    log.info(
        "Campaigning for leadership lease=%s/%s identity=%s",
        le.resource_namespace,
        le.resource_name,
        elector.identity,
    )
    elector.start()
    return elector
