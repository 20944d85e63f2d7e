"""The HTTP face of the fake Kubernetes API server: URL routing, verbs, watch streaming.

The official client and our own raw-JSON code must talk to the fake exactly as
to a real API server (keep-alive, chunked watch streams, metav1.Status errors),
or integration tests would prove nothing about the wire. FakeAPIServer in
server.py owns the state and the test hooks; this module only speaks HTTP.
"""

from __future__ import annotations

import json
import queue
import re
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from netsched.fakeapi.patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from netsched.fakeapi.resources import NAMESPACES, PODS, ResourceType, discovery, find_resource
from netsched.fakeapi.selection import Matcher, SelectorError, selector_matcher
from netsched.fakeapi.store import JsonObj, StatusError, Store, Watcher, WatchEvent, encode_event

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
VERSION = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0-netsched-fake",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2024-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
# Create-only review APIs, answered from the backend's hooks (nothing is stored).
_REVIEWS = {
    ("authentication.k8s.io", "tokenreviews"): "token",
    ("authorization.k8s.io", "subjectaccessreviews"): "access",
}
HOLD_LIMIT = 60.0  # seconds a held request waits at most: a forgotten hold cannot hang the fake
_WATCH_BATCH = 512  # events coalesced into one chunk when a watcher has fallen behind


class RecordedRequest(NamedTuple):
    """One API request, described the way RBAC rules describe it ("" for core group / no namespace)."""

    verb: str
    api_group: str
    resource: str
    subresource: str
    namespace: str


@dataclass(slots=True)
class Fault:
    """An injected failure; `remaining` < 0 means it never runs out."""

    method: str
    pattern: re.Pattern[str]
    status: int | None
    remaining: int
    delay: float
    reset: bool
    retry_after: int = 1  # seconds, sent with 429 (0: no header)
    hits: int = 0
    # Held until set (a request that hangs, e.g. a lease renewal that never returns); then as above.
    hold: threading.Event | None = None

    def matches(self, method: str, path: str) -> bool:
        return self.remaining != 0 and self.method in ("*", method) and self.pattern.search(path) is not None


class Backend(Protocol):
    """What the handler needs from FakeAPIServer."""

    store: Store
    watch_timeout: float
    bookmark_interval: float
    log_requests: bool

    def record(self, request: RecordedRequest) -> None: ...
    def forbidden(self, request: RecordedRequest, name: str, authorization: str) -> StatusError | None: ...
    def evict(self, namespace: str, name: str, body: JsonObj, dry_run: str) -> None: ...
    def review_token(self, body: JsonObj) -> JsonObj: ...
    def review_access(self, body: JsonObj) -> JsonObj: ...
    def request_token(self, namespace: str, name: str, body: JsonObj) -> JsonObj: ...
    def take_fault(self, method: str, path: str) -> Fault | None: ...
    def serves(self, rt: ResourceType) -> bool: ...
    def held(self) -> bool: ...
    def authenticated(self, authorization: str) -> bool: ...
    def track(self, conn: socket.socket, add: bool) -> None: ...
    def streams(self, delta: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Route:
    group: str
    version: str
    resource: str
    namespace: str | None
    name: str | None
    subresource: str


def parse_route(path: str) -> Route | None:
    """Split /api/v1/... and /apis/GROUP/VERSION/... paths; None if not a resource path."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    # /namespaces/NS/RESOURCE... is namespaced; /namespaces/NS/status is the namespace's own subresource.
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
    if not 1 <= len(rest) <= 3 or not all(rest):
        return None
    name = rest[1] if len(rest) > 1 else None
    return Route(group, version, rest[0], namespace, name, rest[2] if len(rest) > 2 else "")


def rbac_verb(method: str, route: Route, query: dict[str, str]) -> str:
    if method == "GET":
        if _flag(query, "watch"):
            return "watch"
        return "get" if route.name else "list"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _success(code: int, rt: ResourceType | None = None, obj: JsonObj | None = None) -> JsonObj:
    status: JsonObj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": code,
    }
    if rt is not None and obj is not None:
        meta = obj["metadata"]
        status["details"] = {"name": meta["name"], "group": rt.group, "kind": rt.plural, "uid": meta["uid"]}
    return status


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The default backlog of 5 drops SYNs when a binder pool connects at once (1 s retransmits).
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], backend: Backend, tls: ssl.SSLContext | None = None) -> None:
        self.backend = backend
        self.tls = tls
        super().__init__(address, Handler)

    def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
        conn, addr = super().get_request()
        if self.tls is not None:
            # The handshake runs in the connection's own thread (Handler.setup), not in the
            # accept loop, so one slow client cannot stall every other connection.
            conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr

    def server_bind(self) -> None:
        # Skip HTTPServer.server_bind's getfqdn(), which can stall on a reverse DNS lookup.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: tuple[str, int]
    ) -> None:
        # Clients drop kept-alive connections all the time (and stop() shuts them): not worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """One connection; serves requests until the client closes it (HTTP/1.1 keep-alive)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # otherwise every keep-alive request waits ~43 ms for a delayed ACK
    server: HTTPServer

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()
        self.server.backend.track(self.connection, True)

    def finish(self) -> None:
        self.server.backend.track(self.connection, False)
        super().finish()

    def log_message(self, format: str, *args: object) -> None:
        if self.server.backend.log_requests:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # --- plumbing ------------------------------------------------------------

    def _handle(self, method: str) -> None:
        backend = self.server.backend
        raw = self._read_body()
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        route = parse_route(split.path)
        verb = rbac_verb(method, route, query) if route else ""
        recorded = None
        if route is not None:
            recorded = RecordedRequest(
                verb, route.group, route.resource, route.subresource, route.namespace or ""
            )
            backend.record(recorded)
        if backend.held():  # an outage: this request is never answered
            self.close_connection = True
            return
        fault = backend.take_fault(method, self.path)
        if fault is not None and self._inject(fault):
            return
        authorization = self.headers.get("Authorization", "")
        if route is not None and not backend.authenticated(authorization):
            self._send_error(StatusError(401, "Unauthorized", "Unauthorized"))
            return
        refused = backend.forbidden(recorded, route.name or "", authorization) if route and recorded else None
        if refused is not None:
            self._send_error(refused)
            return
        try:
            if route is None:
                self._serve_non_resource(split.path)
            else:
                self._serve(route, verb, query, raw)
        except StatusError as e:
            self._send_error(e)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # a bug in the fake: report it like the real server's 500
            self.log_error("internal error: %r", e)
            self._send_error(StatusError(500, "InternalError", f"fake API server error: {e!r}"))

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _inject(self, fault: Fault) -> bool:
        """Apply a fault; True if it answered (or dropped) the request."""
        if fault.delay > 0:
            time.sleep(fault.delay)
        if fault.hold is not None:
            fault.hold.wait(HOLD_LIMIT)
        if fault.reset:
            # Linger 0 turns the close into a TCP RST: the client sees no response at all.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return True
        if fault.status:
            retry = fault.status == 429 and fault.retry_after > 0
            headers = [("Retry-After", str(fault.retry_after))] if retry else []
            reason = REASONS.get(fault.status, "InternalError")
            self._send_error(StatusError(fault.status, reason, f"injected fault: {reason}"), headers)
            return True
        return False

    def _send(self, code: int, payload: bytes, headers: list[tuple[str, str]] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in headers or []:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_error(self, error: StatusError, headers: list[tuple[str, str]] | None = None) -> None:
        retry = (error.details or {}).get("retryAfterSeconds")
        if isinstance(retry, int) and retry > 0 and headers is None:
            headers = [("Retry-After", str(retry))]  # as kube's response writer adds it
        self._send(error.code, _dumps(error.status()), headers)

    def _serve_non_resource(self, path: str) -> None:
        path = path.rstrip("/")
        if path in ("/healthz", "/readyz", "/livez"):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        elif path == "/version":
            self._send(200, _dumps(VERSION))
        elif (gv := _group_version(path)) is not None:
            doc = discovery(*gv, self.server.backend.serves)
            if doc is None:
                raise StatusError(404, "NotFound", "the server could not find the requested resource")
            self._send(200, _dumps(doc))
        else:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")

    # --- resources -----------------------------------------------------------

    def _serve(self, route: Route, verb: str, query: dict[str, str], raw: bytes) -> None:
        if route.group == "" and route.resource == "bindings" and verb == "create":
            body = _parse_json(raw)
            self._bind(route.namespace or "default", str((body.get("metadata") or {}).get("name", "")), body)
            return
        review = _REVIEWS.get((route.group, route.resource))
        if review is not None and route.name is None and route.namespace is None:
            if verb != "create":
                raise StatusError(405, "MethodNotAllowed", f"{route.resource} only supports create")
            body = _parse_json(raw)
            backend = self.server.backend
            answer = backend.review_token(body) if review == "token" else backend.review_access(body)
            self._send(201, _dumps(answer))
            return
        rt = find_resource(route.group, route.version, route.resource)
        if (
            rt is None
            or not self.server.backend.serves(rt)
            or (route.namespace is not None and not rt.namespaced)
        ):
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        if route.subresource:
            self._serve_subresource(rt, route, verb, query, raw)
        elif route.name is None:
            self._serve_collection(rt, route, verb, query, raw)
        else:
            self._serve_object(rt, route, route.name, verb, raw)

    def _serve_collection(
        self, rt: ResourceType, route: Route, verb: str, query: dict[str, str], raw: bytes
    ) -> None:
        store = self.server.backend.store
        if verb == "create":
            if rt.namespaced and route.namespace is None:
                raise StatusError(
                    405, "MethodNotAllowed", f"create {rt.qualified} needs a namespace in the URL"
                )
            self._send(201, _dumps(store.create(rt, route.namespace, _parse_json(raw))))
            return
        matcher = _matcher(query)
        if verb == "watch":
            self._watch(rt, route.namespace, matcher, query)
            return
        items, rv = store.list(rt, route.namespace, matcher)
        if verb == "deletecollection":
            items = [store.delete(rt, o["metadata"].get("namespace"), o["metadata"]["name"]) for o in items]
            rv = store.resource_version
        elif verb != "list":
            raise StatusError(405, "MethodNotAllowed", f"{verb} is not supported on a collection")
        meta = {"resourceVersion": str(rv)}
        body = {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta, "items": items}
        self._send(200, _dumps(body))

    def _serve_object(self, rt: ResourceType, route: Route, name: str, verb: str, raw: bytes) -> None:
        if rt.namespaced and route.namespace is None:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        store = self.server.backend.store
        ns = route.namespace
        if verb == "get":
            obj = store.get(rt, ns, name)
        elif verb == "update":
            body = _parse_json(raw)
            obj = store.mutate(rt, ns, name, lambda cur: _keep_status(rt, cur, body))
        elif verb == "patch":
            patch = self._parse_patch(raw)
            obj = store.mutate(rt, ns, name, lambda cur: _keep_status(rt, cur, patch(cur)))
        elif verb == "delete":
            obj = store.delete(rt, ns, name)
            if rt not in (PODS, NAMESPACES):  # upstream returns the object only for these
                self._send(200, _dumps(_success(200, rt, obj)))
                return
        else:
            raise StatusError(405, "MethodNotAllowed", f"{verb} is not supported on {rt.qualified}")
        self._send(200, _dumps(obj))

    def _serve_subresource(
        self, rt: ResourceType, route: Route, verb: str, query: dict[str, str], raw: bytes
    ) -> None:
        name = route.name or ""
        if rt is PODS and route.subresource == "binding" and verb == "create":
            self._bind(route.namespace or "default", name, _parse_json(raw))
            return
        if rt.plural == "serviceaccounts" and route.subresource == "token" and verb == "create":
            answer = self.server.backend.request_token(route.namespace or "default", name, _parse_json(raw))
            self._send(201, _dumps(answer))
            return
        if rt is PODS and route.subresource == "eviction":
            if verb != "create":
                raise StatusError(405, "MethodNotAllowed", f"{verb} is not supported on pods/eviction")
            self.server.backend.evict(
                route.namespace or "default", name, _parse_json(raw), query.get("dryRun", "")
            )
            self._send(201, _dumps(_success(201)))
            return
        if route.subresource != "status" or not rt.has_status:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        store = self.server.backend.store
        if verb == "get":
            obj = store.get(rt, route.namespace, name)
        elif verb == "update":
            body = _parse_json(raw)
            obj = store.mutate(rt, route.namespace, name, lambda cur: _only_status(cur, body))
        elif verb == "patch":
            patch = self._parse_patch(raw)
            obj = store.mutate(rt, route.namespace, name, lambda cur: _only_status(cur, patch(cur)))
        else:
            raise StatusError(405, "MethodNotAllowed", f"{verb} is not supported on {rt.qualified}/status")
        self._send(200, _dumps(obj))

    def _bind(self, namespace: str, name: str, body: JsonObj) -> None:
        node = (body.get("target") or {}).get("name")
        if not node:
            raise StatusError(422, "Invalid", "Binding is invalid: target.name: Required value")
        meta = body.get("metadata") or {}
        self.server.backend.store.bind(
            namespace, name, str(node), uid=meta.get("uid"), annotations=meta.get("annotations")
        )
        self._send(201, _dumps(_success(201)))

    def _parse_patch(self, raw: bytes) -> Callable[[JsonObj], JsonObj]:
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        try:
            body = json.loads(raw) if raw else None
        except ValueError as e:
            raise StatusError(400, "BadRequest", f"invalid JSON patch body: {e}") from e
        if content_type == "application/json-patch+json":
            return lambda cur: _checked(lambda: json_patch(cur, body))
        if content_type == "application/merge-patch+json":
            return lambda cur: _checked(lambda: merge_patch(cur, body))
        if content_type == "application/strategic-merge-patch+json":
            return lambda cur: _checked(lambda: strategic_merge_patch(cur, body))
        raise StatusError(
            415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {content_type}"
        )

    # --- watch ---------------------------------------------------------------

    def _watch(
        self, rt: ResourceType, namespace: str | None, matcher: Matcher, query: dict[str, str]
    ) -> None:
        backend = self.server.backend
        since = _int_param(query, "resourceVersion")
        timeout = float(query.get("timeoutSeconds") or backend.watch_timeout)
        bookmarks = _flag(query, "allowWatchBookmarks")
        try:
            watcher = backend.store.watch(rt, namespace, matcher, since)
        except StatusError as e:
            # Upstream answers 200 and streams a single ERROR event, then ends the watch.
            self._start_chunked()
            self._write_chunk(encode_event("ERROR", e.status()))
            self._write_chunk(b"")
            return
        # Counted before the client can see the response: once it has the headers it may stop
        # the server, whose stop() then waits for this stream's final chunk.  Counted after
        # them, a stop() landing in between found no open stream and cut the connection
        # under the final chunk ("Response ended prematurely" on a loaded machine).
        backend.streams(+1)
        try:
            try:
                self._start_chunked()
                self._stream(watcher, time.monotonic() + timeout, bookmarks)
            finally:
                backend.store.unwatch(watcher)
            self._write_chunk(b"")
        finally:
            backend.streams(-1)

    def _stream(self, watcher: Watcher, deadline: float, bookmarks: bool) -> None:
        store = self.server.backend.store
        interval = self.server.backend.bookmark_interval
        pending = watcher.replay
        last_sent = time.monotonic()
        while True:
            data = b"".join(line for event in pending if (line := _event_line(watcher, event)))
            if data:
                self._write_chunk(data)
                last_sent = time.monotonic()
            now = time.monotonic()
            if now >= deadline:
                return
            wake = min(deadline, last_sent + interval) if bookmarks else deadline
            try:
                first = watcher.queue.get(timeout=max(0.0, wake - now))
            except queue.Empty:
                pending = []
                if bookmarks and time.monotonic() - last_sent >= interval:
                    last_sent = self._bookmark(watcher, store.bookmark_rv(watcher), last_sent)
                continue
            if first is None:
                return
            pending = [first]
            while len(pending) < _WATCH_BATCH:
                try:
                    more = watcher.queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    return
                pending.append(more)

    def _bookmark(self, watcher: Watcher, rv: int | None, last_sent: float) -> float:
        if rv is None:
            return last_sent
        obj = {
            "kind": watcher.rt.kind,
            "apiVersion": watcher.rt.api_version,
            "metadata": {"resourceVersion": str(rv)},
        }
        self._write_chunk(encode_event("BOOKMARK", obj))
        return time.monotonic()

    def _start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        """One HTTP chunk; an empty one ends the stream (and the connection stays usable)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def _group_version(path: str) -> tuple[str, str] | None:
    """(group, version) of a discovery path: /api/v1 or /apis/GROUP/VERSION; None otherwise."""
    parts = path.strip("/").split("/")
    if parts == ["api", "v1"]:
        return "", "v1"
    if len(parts) == 3 and parts[0] == "apis" and all(parts):
        return parts[1], parts[2]
    return None


def _event_line(watcher: Watcher, event: WatchEvent) -> bytes:
    event_type = watcher.translate(event)
    return event.line(event_type) if event_type else b""


def _matcher(query: dict[str, str]) -> Matcher:
    try:
        return selector_matcher(query.get("labelSelector", ""), query.get("fieldSelector", ""))
    except SelectorError as e:
        raise StatusError(400, "BadRequest", str(e)) from e


def _flag(query: dict[str, str], key: str) -> bool:
    return query.get(key, "").lower() in ("true", "1")


def _int_param(query: dict[str, str], key: str) -> int | None:
    value = query.get(key, "")
    if value == "":
        return None
    try:
        return int(value)
    except ValueError as e:
        raise StatusError(400, "BadRequest", f"invalid {key}: {value!r}") from e


def _parse_json(raw: bytes) -> JsonObj:
    try:
        body = json.loads(raw) if raw else {}
    except ValueError as e:
        raise StatusError(400, "BadRequest", f"invalid JSON body: {e}") from e
    if not isinstance(body, dict):
        raise StatusError(400, "BadRequest", "the request body must be a JSON object")
    return body


def _checked(apply: Callable[[], object]) -> JsonObj:
    try:
        result = apply()
    except PatchError as e:
        raise StatusError(422, "Invalid", str(e)) from e
    if not isinstance(result, dict):
        raise StatusError(422, "Invalid", "the patch did not produce an object")
    return result


def _keep_status(rt: ResourceType, current: JsonObj, new: JsonObj) -> JsonObj:
    """Writes to the main resource cannot change status where a status subresource exists (as upstream)."""
    if not rt.has_status:
        return new
    out = dict(new)
    if "status" in current:
        out["status"] = current["status"]
    else:
        out.pop("status", None)
    return out


def _only_status(current: JsonObj, new: JsonObj) -> JsonObj:
    """A status write changes status only; its resourceVersion still acts as a precondition."""
    out = dict(current)
    out["status"] = new.get("status") or {}
    sent_rv = (new.get("metadata") or {}).get("resourceVersion")
    if sent_rv:
        out["metadata"] = {**current["metadata"], "resourceVersion": sent_rv}
    return out
