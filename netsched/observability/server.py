"""The scheduler's own HTTP(S) endpoints: /metrics, /healthz, /livez, /readyz and /debug/*.

Prometheus scrapes /metrics (OpenMetrics or the text format, as its Accept
header asks; gzipped when it accepts gzip); the kubelet probes /livez
(restart a wedged process) and /readyz (route traffic, pace rolling updates).
A stdlib ThreadingHTTPServer, so a scrape never depends on the scheduling
thread.

As kube-scheduler on --secure-port: with `tls` (netsched.observability.tls)
it speaks HTTPS only (the handshake runs on the connection's own thread, so a
slow client cannot stall accept), and with `auth`
(netsched.observability.auth.DelegatingAuth) every request is authenticated
and authorized before it is served: 401 / 403 with the reason, or 200.
Without either (tests, --metrics-bind-address for local use) it is the plain,
open server it always was.

Readiness is deliberately not leadership. A standby replica whose caches are
synced answers 200 (body "role=standby"): a Deployment's rolling update waits
for the new pod to be Ready before stopping an old one, and if only the leader
were Ready the new pod (always a standby at first) would never become Ready and
the rollout would stall. Whether a replica leads is in the body and in the
netsched_leader gauge. Before the caches have synced, /readyz answers 503 with
the reason.

The server binds exactly the address it is given (default 127.0.0.1); listening
on all interfaces (0.0.0.0, as in a pod) must be asked for.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from netsched.observability.auth import DEFAULT_ALWAYS_ALLOW_PATHS, DEFAULT_TTL, AuthDecision
from netsched.observability.health import PING, Check, answer, evaluate

log = logging.getLogger(__name__)

DEFAULT_PORT = 10259
TEXT = "text/plain; charset=utf-8"

# ready() -> (ready, details such as {"role": "standby"}); health checks: netsched.observability.health.
ReadyCheck = Callable[[], tuple[bool, Mapping[str, Any]]]
# A debug endpoint gets the parsed query string and returns (status, content type, body).
DebugHandler = Callable[[dict[str, list[str]]], tuple[int, str, bytes]]
# auth(method, path, headers) -> AuthDecision (DelegatingAuth.check).
AuthCheck = Callable[[str, str, Mapping[str, str]], AuthDecision]

HANDSHAKE_TIMEOUT = 10.0  # seconds a client has to finish the TLS handshake
IDLE_TIMEOUT = 120.0  # a kept-alive TLS connection idle this long is closed


@dataclass(frozen=True, slots=True)
class EndpointReply:
    """What an endpoint answers: status, content type, body and any further headers."""

    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class SecureServing:
    """kube-scheduler's secure serving and delegating auth flags, as netsched.serve starts them."""

    bind_address: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    cert_file: str = ""
    key_file: str = ""
    cert_dir: str = ""
    min_tls_version: str = "VersionTLS12"
    authentication_kubeconfig: str = ""
    authorization_kubeconfig: str = ""
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    token_cache_ttl: float = DEFAULT_TTL
    authorized_cache_ttl: float = DEFAULT_TTL
    unauthorized_cache_ttl: float = DEFAULT_TTL


def parse_bind_address(value: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """ "host:port", "host", ":port" or "[v6]:port" -> (host, port); an empty host is 127.0.0.1."""
    host, port = value.strip(), default_port
    if host.startswith("["):
        inner, _, rest = host[1:].partition("]")
        host = inner
        if rest.startswith(":"):
            port = int(rest[1:])
    elif host.count(":") == 1:
        host, _, port_text = host.partition(":")
        port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"port out of range in bind address {value!r}")
    return host or "127.0.0.1", port


class ListenError(OSError):
    """The endpoints' address cannot be bound (in use, not ours, no permission): a start-up
    failure, as kube-scheduler's, never a replica running without them."""


class ObservabilityServer:
    """Serves the endpoints on a daemon thread; listen() binds, start() serves (binding
    first if needed), stop() closes.

    server = ObservabilityServer("127.0.0.1", 0, registry=metrics.registry).start()
    server.port  # the port chosen when 0 was given
    """

    def __init__(
        self,
        address: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        registry: CollectorRegistry,
        checks: Sequence[Check] = (PING,),
        ready: ReadyCheck | None = None,
        debug_handlers: Mapping[str, DebugHandler] | None = None,
        tls: ssl.SSLContext | None = None,
        auth: AuthCheck | None = None,
    ) -> None:
        self.address = address
        self.tls = tls
        self.auth = auth
        self.registry = registry
        self.checks = tuple(checks)
        # Without a readiness check, ready means alive (a process with nothing to sync).
        self.ready: ReadyCheck = ready or (lambda: (all(r is None for _, r, _ in evaluate(self.checks)), {}))
        # Looked up at each request: a live mapping (the plugins' pages, which a hot reload
        # changes) is kept as given, not copied.
        self.debug_handlers: Mapping[str, DebugHandler] = debug_handlers if debug_handlers is not None else {}
        for path in self.debug_handlers:
            if not path.startswith("/debug/"):
                raise ValueError(f"debug endpoints live under /debug/, got {path!r}")
        self._requested_port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            return self._requested_port
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{host}:{self.port}"

    def listen(self) -> ObservabilityServer:
        """Bind the listening socket now, without serving yet: a port in use fails here, at
        start-up, as ListenError naming the address. Connections wait in the backlog until
        start(); `tls` and `auth` may still be set in between."""
        if self._httpd is None:
            server_class = _Server6 if ":" in self.address else _Server
            try:
                self._httpd = server_class((self.address, self._requested_port), self)
            except OSError as e:
                host = f"[{self.address}]" if ":" in self.address else self.address
                raise ListenError(
                    e.errno, f"cannot listen on {host}:{self._requested_port}: {e.strerror or e}"
                ) from e
        return self

    def start(self) -> ObservabilityServer:
        if self._thread is not None:
            raise RuntimeError("ObservabilityServer already started")
        self.listen()
        assert self._httpd is not None
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="observability", daemon=True
        )
        self._thread.start()
        log.info("Serving metrics and health endpoints address=%s", self.url)
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        thread, self._thread = self._thread, None
        if httpd is None:
            return
        if thread is not None:  # shutdown() waits for serve_forever(): only when it runs
            httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ObservabilityServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the endpoints ----------------------------------------------------------

    def respond(
        self,
        path: str,
        query: dict[str, list[str]],
        *,
        accept: str | None = None,
        accept_encoding: str | None = None,
    ) -> EndpointReply:
        """The answer to a GET; the handler only does the HTTP."""
        if path == "/metrics":
            return self.metrics(accept, accept_encoding)
        if path in ("/healthz", "/livez"):
            verbose = "verbose" in query
            status, body = answer(path[1:], self.checks, verbose=verbose, exclude=query.get("exclude", ()))
            return EndpointReply(status, TEXT, body.encode(), (("X-Content-Type-Options", "nosniff"),))
        if path == "/readyz":
            ok, details = self.ready()
            reason = details.get("reason")
            lines = ["ok" if ok else f"not ready: {reason}" if reason else "not ready"]
            lines += [f"{key}={value}" for key, value in details.items() if key != "reason"]
            return EndpointReply(200 if ok else 503, TEXT, ("\n".join(lines) + "\n").encode())
        handler = self.debug_handlers.get(path)
        if handler is not None:
            return EndpointReply(*handler(query))
        return EndpointReply(404, TEXT, b"404 page not found\n")

    def metrics(self, accept: str | None, accept_encoding: str | None) -> EndpointReply:
        """/metrics as prometheus_client's own handler negotiates it: OpenMetrics when the Accept
        header asks for it (Prometheus' scrapes do), else the text format; gzip when accepted."""
        encoder, content_type = choose_encoder(accept or "")
        body = encoder(self.registry)
        headers: tuple[tuple[str, str], ...] = (("Vary", "Accept, Accept-Encoding"),)
        if gzip_accepted(accept_encoding or ""):
            body = gzip.compress(body)
            headers += (("Content-Encoding", "gzip"),)
        return EndpointReply(200, content_type, body, headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a kept-alive scrape connection must not hold up stop()

    def __init__(self, address: tuple[str, int], endpoints: ObservabilityServer) -> None:
        self.endpoints = endpoints
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        ctx = self.endpoints.tls
        if ctx is None:
            super().finish_request(request, client_address)
            return
        try:
            request.settimeout(HANDSHAKE_TIMEOUT)
            conn = ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            # A plain-HTTP client or a port scanner: not worth more than a debug line.
            log.debug("TLS handshake failed client=%s err=%s", client_address[0], e)
            return
        try:
            conn.settimeout(IDLE_TIMEOUT)
            self.RequestHandlerClass(conn, client_address, self)  # type: ignore[arg-type]
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: tuple[str, int]
    ) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that went away mid-reply
        super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for Prometheus' scrapes
    disable_nagle_algorithm = True  # else each keep-alive reply waits ~40 ms for the ACK
    server_version = "netsched"

    def do_GET(self) -> None:
        assert isinstance(self.server, _Server)
        endpoints = self.server.endpoints
        split = urlsplit(self.path)
        try:
            if endpoints.auth is not None:
                decision = endpoints.auth("GET", split.path, dict(self.headers.items()))
                if not decision.allowed:
                    self._reply(EndpointReply(decision.status, TEXT, (decision.reason + "\n").encode()))
                    return
            reply = endpoints.respond(
                split.path,
                parse_qs(split.query, keep_blank_values=True),  # "?verbose" has no value
                accept=self.headers.get("Accept"),
                accept_encoding=self.headers.get("Accept-Encoding"),
            )
        except Exception as e:
            log.exception("Endpoint failed path=%s", split.path)
            reply = EndpointReply(500, TEXT, f"internal error: {type(e).__name__}\n".encode())
        self._reply(reply)

    def _reply(self, reply: EndpointReply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body)

    def do_POST(self) -> None:
        self._not_allowed()

    do_PUT = do_PATCH = do_DELETE = do_POST

    def _not_allowed(self) -> None:
        self.close_connection = True  # the request body, if any, is left unread
        body = b"method not allowed\n"
        self.send_response(405)
        self.send_header("Allow", "GET")
        self.send_header("Content-Type", TEXT)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        # Probes and scrapes arrive every few seconds: only at debug level.
        log.debug("HTTP request client=%s request=%s", self.address_string(), format % args)
