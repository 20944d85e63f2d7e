"""A small HTTP/1.1 keep-alive transport for netsched's own request/response calls.

Every bound pod costs two requests (its binding and its `Scheduled` event).
Through urllib3 and http.client each costs about 0.55 ms of CPU on this
project's machine, mostly header objects and the email-package header parser;
written directly on a pooled TLS socket the same request costs under 0.1 ms.
So the calls netsched makes itself (KubeClient.request: bindings, events,
status patches, gets and list pages) go through this transport, while watches
(long-lived chunked streams) stay on urllib3.

What it keeps from the kubeconfig: the server address, TLS verification
(CA file or data, or the system store), client certificates, tls-server-name,
disabled hostname checks, socket options; the bearer token and other headers
are added by the caller per request (netsched.kube.credentials).  When the
kubeconfig asks for something it does not do (a proxy that applies to the
server, a hostname to assert that differs from the server's),
`for_configuration` returns None and everything stays on urllib3.  A proxy the
server bypasses (NO_PROXY / no_proxy covers it, decided by the kubernetes
package's own rule, as its urllib3 pool decides) does not count.

Failures raise OSError (socket and TLS errors, timeouts) or
http.client.HTTPException (a reply that is not HTTP), which
netsched.kube.errors maps to transient errors that KubeClient retries.  A
request that finds its pooled connection closed by the server before any byte
of the reply arrives is sent once more on a fresh connection, as Go's
net/http does for a server-closed idle connection.  Connections idle for
RECHECK_SECONDS or more are checked before reuse (readable means the server
closed it) and dropped after IDLE_SECONDS, so a connection a NAT or load
balancer forgot silently does not cost a request its whole read timeout; one
used less than RECHECK_SECONDS ago is reused unchecked, and a socket's timeout
is set only when it changes: each poll or settimeout is a system call that lets
go of the GIL, which costs a busy process a thread hand-over every time.

A request that fails on its connection (timed out, refused, reset) empties
the idle pool: those connections lead to the same server, and when it died
or hangs each one would cost the next requests another read timeout (a
server that vanished without closing them, behind a partition or a node
that died, leaves them looking idle and healthy).  A pipelined batch's
replies share one read deadline: its lanes are read one after another, so a
hung server would otherwise cost the batch one timeout per lane.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from kubernetes.client.rest import should_bypass_proxies

_MAX_LINE = 65536
_MAX_HEADERS = 200
IDLE_SECONDS = 60.0
RECHECK_SECONDS = 1.0  # a connection idle for longer is polled for a close before it is reused
SLACK_SECONDS = 0.05  # a read may overrun its deadline by this much before its timeout is cut


class Response:
    """A complete reply, shaped like the urllib3 response KubeClient reads."""

    __slots__ = ("data", "headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], data: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = _Headers(headers)
        self.data = data

    def release_conn(self) -> None:
        """Nothing to release: the body was read and the connection returned already."""


class _Headers(dict[str, str]):
    """Reply headers by lower-case name; `get` takes any case, as urllib3's HTTPHeaderDict does."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


class _Closed(OSError):
    """The server closed a pooled connection before replying (safe to send again once)."""


class _Conn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")
        self.used = False
        self.idle_since = 0.0
        self.timeout = sock.gettimeout()

    def set_timeout(self, seconds: float | None) -> None:
        """The socket's timeout, set only when it changes: settimeout is a system call that lets
        go of the GIL, and every such point is a wake-up when other threads want it."""
        if seconds != self.timeout:
            self.sock.settimeout(seconds)
            self.timeout = seconds

    def stale(self, now: float) -> bool:
        """Idle too long, or readable while idle (the server closed it, or sent what nobody
        asked). A connection idle for less than RECHECK_SECONDS is not polled (a system call that
        lets go of the GIL, on every request of a busy client): should the server have closed it
        that soon, the request finds it closed before any reply and is sent once more on a new
        one (`request`)."""
        idle = now - self.idle_since
        if idle > IDLE_SECONDS:
            return True
        if idle < RECHECK_SECONDS:
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        try:
            self.reader.close()
            self.sock.close()
        except OSError:
            pass


class Transport:
    """Pooled keep-alive connections to one API server (thread-safe)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: ssl.SSLContext | None,
        server_hostname: str | None = None,
        socket_options: Sequence[tuple[int, int, int]] = (),
        pool_size: int = 16,
    ) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.server_hostname = server_hostname or host
        self.socket_options = tuple(socket_options)
        self.pool_size = max(1, pool_size)
        self.host_header = host if port in (80, 443) else f"{host}:{port}"
        if ":" in host and not host.startswith("["):  # an IPv6 literal
            self.host_header = f"[{host}]" if port in (80, 443) else f"[{host}]:{port}"
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self.connections_opened = 0

    @classmethod
    def for_configuration(cls, cfg: Any, pool_size: int) -> Transport | None:
        """The transport for a kubernetes.client.Configuration, or None when it needs urllib3."""
        url = urlsplit(str(cfg.host))
        if url.scheme not in ("http", "https") or not url.hostname or url.path not in ("", "/"):
            return None
        if getattr(cfg, "proxy", None) and not should_bypass_proxies(
            str(cfg.host), getattr(cfg, "no_proxy", None) or ""
        ):
            return None
        assert_hostname = getattr(cfg, "assert_hostname", None)
        if assert_hostname not in (None, False, True):
            return None  # a hostname to assert other than the server's: urllib3 does that
        tls = None
        if url.scheme == "https":
            tls = _tls_context(cfg, check_hostname=assert_hostname is not False)
        port = url.port or (443 if url.scheme == "https" else 80)
        return cls(
            url.hostname,
            port,
            tls=tls,
            server_hostname=getattr(cfg, "tls_server_name", None) or None,
            socket_options=tuple(getattr(cfg, "socket_options", None) or ()),
            pool_size=pool_size,
        )

    # ------------------------------------------------------------ requests

    def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: tuple[float | None, float | None],
    ) -> Response:
        """Send one request and read the whole reply; `timeout` is (connect, read) seconds."""
        message = self._message(method, path, headers, body)
        conn = self._take()
        try:
            if conn is not None:
                try:
                    return self._exchange(conn, message, timeout[1], method)
                except _Closed:
                    pass  # closed while idle: once more on a new connection
            conn = self._connect(timeout[0])
            try:
                return self._exchange(conn, message, timeout[1], method)
            except _Closed as e:
                raise http.client.RemoteDisconnected(str(e)) from None
        except (OSError, http.client.HTTPException):
            self.close()  # the server failed this connection: do not trust its others
            raise

    def request_many(
        self,
        requests: Sequence[tuple[str, str, Mapping[str, str], bytes | None]],
        timeout: tuple[float | None, float | None],
        lanes: int = 1,
    ) -> list[Response | Exception]:
        """(method, path, headers, body) requests pipelined (HTTP/1.1 pipelining; Go's net/http
        server, which the API server runs, answers pipelined requests in order) over up to `lanes`
        connections, dealt round robin: every lane's requests are sent in one write each before
        any reply is read, so the server works on the lanes in parallel and one thread waits
        once.  One result per request, in order: its reply, or the error that ended its
        connection before its reply came; the server may have acted on such a request, so send
        only what a repeat cannot harm (creates with names of the caller's own: AlreadyExists).
        Keep batches small (tens of requests, tens of KB): replies wait in socket buffers until
        everything is sent.  This is `send_many` then `Pipelined.finish`.
        """
        return self.send_many(requests, timeout, lanes).finish()

    def send_many(
        self,
        requests: Sequence[tuple[str, str, Mapping[str, str], bytes | None]],
        timeout: tuple[float | None, float | None],
        lanes: int = 1,
    ) -> Pipelined:
        """request_many's writes, made now; the replies are read later, lane by lane, when the
        caller asks (Pipelined), so it can send more meanwhile. Their read deadline starts now."""
        n = len(requests)
        groups = [list(range(i, n, max(1, lanes))) for i in range(min(max(1, lanes), n))]
        results: list[Response | Exception | None] = [None] * n
        sent: list[tuple[_Conn, list[tuple[int, str]]]] = []
        for rows in groups:
            message = b"".join(self._message(*requests[i]) for i in rows)
            try:
                conn = self._take() or self._connect(timeout[0])
            except Exception as e:
                for i in rows:
                    results[i] = e
                continue
            conn.used = True
            try:
                conn.set_timeout(timeout[1])
                conn.sock.sendall(message)
            except Exception as e:
                conn.close()
                for i in rows:
                    results[i] = e
                continue
            sent.append((conn, [(i, requests[i][0]) for i in rows]))
        deadline = None if timeout[1] is None else time.monotonic() + timeout[1]
        return Pipelined(self, sent, results, deadline)

    @property
    def idle_connections(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _message(self, method: str, path: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host_header}"]
        for name, value in headers.items():
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise ValueError(f"header {name!r} contains a line break")
            lines.append(f"{name}: {value}")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head + body if body else head

    def _exchange(self, conn: _Conn, message: bytes, read_timeout: float | None, method: str) -> Response:
        reused = conn.used
        conn.used = True
        try:
            conn.set_timeout(read_timeout)
            try:
                conn.sock.sendall(message)
                status_line = conn.reader.readline(_MAX_LINE + 1)
            except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError) as e:
                if reused:
                    raise _Closed(str(e)) from None
                raise
            if not status_line:
                if reused:
                    raise _Closed("server closed the connection")
                raise http.client.RemoteDisconnected("server closed the connection without a reply")
            resp, keep = _read_reply(conn.reader, status_line, method)
        except BaseException:
            conn.close()
            raise
        if keep:
            self._give_back(conn)
        else:
            conn.close()
        return resp

    # ------------------------------------------------------------ the pool

    def _take(self) -> _Conn | None:
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if not conn.stale(now):
                return conn
            conn.close()

    def _give_back(self, conn: _Conn) -> None:
        conn.idle_since = time.monotonic()
        with self._lock:
            if len(self._idle) < self.pool_size:
                self._idle.append(conn)
                return
        conn.close()

    def _connect(self, connect_timeout: float | None) -> _Conn:
        sock = socket.create_connection((self.host, self.port), timeout=connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for level, option, value in self.socket_options:
                sock.setsockopt(level, option, value)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.server_hostname)
        except BaseException:
            sock.close()
            raise
        with self._lock:
            self.connections_opened += 1
        return _Conn(sock)


class Pipelined:
    """Requests a Transport has written (send_many) whose replies are still to be read.
    `filenos()` are the lanes still awaited (for select); `read(fd)` reads one lane's replies,
    blocking until they are all in or the shared deadline passes; `finish()` reads what is left
    and returns every result. One thread reads a Pipelined."""

    def __init__(
        self,
        transport: Transport,
        lanes: list[tuple[_Conn, list[tuple[int, str]]]],
        results: list[Response | Exception | None],
        deadline: float | None,
    ) -> None:
        self._transport = transport
        self._lanes = {conn.sock.fileno(): (conn, rows) for conn, rows in lanes}
        self._results = results
        self.deadline = deadline  # monotonic; None: none

    def filenos(self) -> list[int]:
        return list(self._lanes)

    def read(self, fd: int) -> None:
        """The replies on lane `fd`, in order, by the deadline; those never read get the error
        that ended the lane."""
        lane = self._lanes.pop(fd, None)
        if lane is None:
            return
        conn, rows = lane
        results, done, keep = self._results, 0, False
        try:
            for i, method in rows:
                if self.deadline is not None:
                    # The shared deadline, within SLACK_SECONDS: replies that come at once cost
                    # no settimeout (a system call and a GIL hand-over) per reply.
                    left = max(1e-3, self.deadline - time.monotonic())
                    if conn.timeout is None or left < conn.timeout - SLACK_SECONDS:
                        conn.set_timeout(left)
                line = conn.reader.readline(_MAX_LINE + 1)
                if not line:
                    raise http.client.RemoteDisconnected("server closed the connection")
                resp, keep = _read_reply(conn.reader, line, method)
                results[i] = resp
                done += 1
                if not keep and done < len(rows):
                    raise http.client.RemoteDisconnected("server closed the connection")
        except Exception as e:
            conn.close()
            for i, _ in rows[done:]:
                results[i] = e
            return
        if keep:
            self._transport._give_back(conn)
        else:
            conn.close()

    def finish(self) -> list[Response | Exception]:
        """Read every lane left; one result per request, in order (Transport.request_many)."""
        for fd in list(self._lanes):
            self.read(fd)
        results = self._results
        if any(isinstance(r, OSError | http.client.HTTPException) for r in results):
            self._transport.close()  # as `request` does: the server failed a connection, trust none
        return [r if r is not None else http.client.RemoteDisconnected("no reply") for r in results]


def _tls_context(cfg: Any, *, check_hostname: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ca_file = getattr(cfg, "ssl_ca_cert", None)
    ca_data = getattr(cfg, "ca_cert_data", None)
    if ca_file or ca_data:
        # Only the kubeconfig's CA, as urllib3 does when one is given (not the system store too).
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cafile=ca_file or None, cadata=ca_data or None)
    if getattr(cfg, "cert_file", None):
        ctx.load_cert_chain(cfg.cert_file, getattr(cfg, "key_file", None) or None)
    if not getattr(cfg, "verify_ssl", True):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif not check_hostname:
        ctx.check_hostname = False
    return ctx


def _read_reply(reader: Any, status_line: bytes, method: str) -> tuple[Response, bool]:
    """Status line, headers and body; True when the connection may be reused."""
    try:
        return _parse_reply(reader, status_line, method)
    except ValueError as e:  # a bad Content-Length or chunk size: not an HTTP reply we can read
        raise http.client.HTTPException(f"malformed reply: {e}") from e


def _parse_reply(reader: Any, status_line: bytes, method: str) -> tuple[Response, bool]:
    if len(status_line) > _MAX_LINE:
        raise http.client.LineTooLong("status line")
    parts = status_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise http.client.BadStatusLine(status_line.decode("latin-1", "replace").strip())
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else ""
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADERS + 1):
        line = reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise http.client.IncompleteRead(b"", None)
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise http.client.HTTPException(f"malformed header line {line[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    else:
        raise http.client.HTTPException(f"more than {_MAX_HEADERS} headers")
    keep = parts[0] == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return Response(status, reason, headers, b""), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Response(status, reason, headers, _read_chunked(reader)), keep
    length = headers.get("content-length")
    if length is not None:
        n = int(length)
        data = reader.read(n)
        if len(data) != n:
            raise http.client.IncompleteRead(data, n - len(data))
        return Response(status, reason, headers, data), keep
    return Response(status, reason, headers, reader.read()), False  # delimited by close


def _read_chunked(reader: Any) -> bytes:
    parts: list[bytes] = []
    while True:
        line = reader.readline(_MAX_LINE + 1)
        if not line:
            raise http.client.IncompleteRead(b"".join(parts))
        size = int(line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while reader.readline(_MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) != size:
            raise http.client.IncompleteRead(b"".join(parts) + chunk, size - len(chunk))
        parts.append(chunk)
        reader.readline(_MAX_LINE + 1)
