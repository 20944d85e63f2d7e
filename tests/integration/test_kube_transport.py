"""netsched.kube.transport: the keep-alive HTTP/1.1 path of KubeClient.request, on real sockets.

The fake API server (TLS, verified with the CA of its kubeconfig) covers the
normal path; a scripted socket server covers what a real server may do that
the fake does not: close an idle connection, answer chunked or close-delimited,
send a reply that is not HTTP, or nothing at all.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from netsched.framework.parse import parse_pod
from netsched.kube import KubeAPI, build_api_client
from netsched.kube.errors import Conflict, NotFound, Transient
from netsched.kube.kubeconfig import load_configuration
from netsched.kube.transport import Transport
from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[FakeAPIServer, str]]:
    with FakeAPIServer(tls=True) as srv:
        yield srv, str(srv.write_kubeconfig(tmp_path / "kubeconfig"))


def test_requests_share_a_verified_tls_connection_and_errors_keep_their_kind(
    tls_server: tuple[FakeAPIServer, str],
) -> None:
    srv, kubeconfig = tls_server
    srv.create("nodes", make_node("n1").obj())
    srv.create("pods", make_pod("p").obj())
    client = build_api_client(kubeconfig, qps=1000, burst=1000)
    assert client.transport is not None and client.transport.tls is not None
    api = KubeAPI(client)
    for _ in range(5):
        assert api.get_node("n1")["metadata"]["name"] == "n1"
    pod = parse_pod(srv.get("pods", "p"))
    api.bind(pod, "n1")
    assert srv.get("pods", "p")["spec"]["nodeName"] == "n1"
    with pytest.raises(NotFound):
        api.get_node("missing")
    with pytest.raises(Conflict):
        api.bind(pod, "n2")  # already bound
    assert client.transport.connections_opened == 1  # one keep-alive connection for all of it


def test_a_server_with_another_ca_is_refused(tls_server: tuple[FakeAPIServer, str], tmp_path: Path) -> None:
    srv, _ = tls_server
    with FakeAPIServer(tls=True) as other:  # a different self-signed CA
        kubeconfig = other.write_kubeconfig(tmp_path / "other")
    cfg = load_configuration(str(kubeconfig))
    cfg.host = srv.url
    transport = Transport.for_configuration(cfg, 2)
    assert transport is not None
    with pytest.raises(ssl.SSLError):
        transport.request("GET", "/api/v1/nodes", {}, None, (5, 5))


def test_configurations_the_transport_does_not_serve_stay_on_urllib3(tmp_path: Path) -> None:
    cfg = load_configuration(master="https://10.0.0.1:6443")
    assert Transport.for_configuration(cfg, 4) is not None
    cfg.proxy = "http://proxy:3128"
    assert Transport.for_configuration(cfg, 4) is None
    cfg.proxy = None
    cfg.assert_hostname = "api.example.com"
    assert Transport.for_configuration(cfg, 4) is None
    cfg.assert_hostname = None
    cfg.host = "https://10.0.0.1:6443/prefix"
    assert Transport.for_configuration(cfg, 4) is None


# ---------------------------------------------------------------- a scripted server

Handler = Callable[[socket.socket, int], None]


class Scripted:
    """Accepts connections and hands each (with its index) to `handler` on a thread."""

    def __init__(self, handler: Handler) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.accepted = 0
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            n = self.accepted
            self.accepted += 1
            threading.Thread(target=self.handler, args=(conn, n), daemon=True).start()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            return data
        data += got
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += conn.recv(65536)
    return head


OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


def keep_alive(conn: socket.socket, _n: int) -> None:
    """A scripted server's handler: OK to every request, on one connection, until the client closes."""
    while read_request(conn):
        conn.sendall(OK)
    conn.close()


@pytest.fixture
def scripted() -> Iterator[Callable[[Handler], Scripted]]:
    made: list[Scripted] = []

    def make(handler: Handler) -> Scripted:
        made.append(Scripted(handler))
        return made[-1]

    yield make
    for s in made:
        s.close()


def transport_to(server: Scripted) -> Transport:
    return Transport("127.0.0.1", server.port, tls=None, pool_size=2)


def test_an_idle_connection_the_server_closed_is_replaced_without_an_error(
    scripted: Callable[[Handler], Scripted],
) -> None:
    def once_then_close(conn: socket.socket, _n: int) -> None:
        read_request(conn)
        conn.sendall(OK)
        conn.close()  # without "Connection: close": the client learns it on its next request

    server = scripted(once_then_close)
    t = transport_to(server)
    assert t.request("GET", "/a", {}, None, (5, 5)).data == b'{"ok":true}'
    assert t.request("POST", "/b", {}, b"{}", (5, 5)).status == 200
    assert server.accepted == 2


def test_chunked_and_close_delimited_replies_and_case_blind_headers(
    scripted: Callable[[Handler], Scripted],
) -> None:
    def reply(conn: socket.socket, n: int) -> None:
        read_request(conn)
        if n == 0:
            conn.sendall(
                b"HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\nRetry-After: 3\r\n\r\n"
                b'4\r\n{"a"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n'
            )
            read_request(conn)
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n[1,2]")
        conn.close()

    server = scripted(reply)
    t = transport_to(server)
    first = t.request("GET", "/", {}, None, (5, 5))
    assert (first.status, first.data, first.headers.get("Retry-After")) == (429, b'{"a":1}', "3")
    second = t.request("GET", "/", {}, None, (5, 5))  # same connection, read to its close
    assert (second.status, second.data) == (200, b"[1,2]")
    assert server.accepted == 1 and t._idle == []  # an HTTP/1.0 reply is not kept


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", http.client.BadStatusLine),
        (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", http.client.HTTPException),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", http.client.IncompleteRead),
        (b"", http.client.RemoteDisconnected),
    ],
)
def test_replies_that_are_not_http_raise_errors_the_client_retries(
    scripted: Callable[[Handler], Scripted], reply: bytes, error: type[Exception]
) -> None:
    def bad(conn: socket.socket, _n: int) -> None:
        read_request(conn)
        conn.sendall(reply)
        conn.close()

    t = transport_to(scripted(bad))
    with pytest.raises(error) as got:
        t.request("GET", "/", {}, None, (5, 5))
    from netsched.kube.errors import from_exception

    assert isinstance(from_exception(got.value), Transient)


def test_a_server_that_never_answers_times_out(scripted: Callable[[Handler], Scripted]) -> None:
    release = threading.Event()

    def silent(conn: socket.socket, _n: int) -> None:
        read_request(conn)
        release.wait(10)
        conn.close()

    t = transport_to(scripted(silent))
    with pytest.raises(TimeoutError):
        t.request("GET", "/", {}, None, (5, 0.2))
    release.set()


def test_header_values_with_line_breaks_are_refused_before_sending(
    scripted: Callable[[Handler], Scripted],
) -> None:
    server = scripted(lambda conn, _n: conn.close())
    t = transport_to(server)
    with pytest.raises(ValueError, match="line break"):
        t.request("GET", "/", {"Authorization": "Bearer x\r\nX-Evil: 1"}, None, (5, 5))
    assert server.accepted == 0


def test_a_connection_idle_too_long_is_not_reused(
    scripted: Callable[[Handler], Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    import netsched.kube.transport as transport_mod

    server = scripted(keep_alive)
    t = transport_to(server)
    t.request("GET", "/", {}, None, (5, 5))
    t.request("GET", "/", {}, None, (5, 5))
    assert server.accepted == 1  # reused while fresh
    monkeypatch.setattr(transport_mod, "IDLE_SECONDS", -1.0)  # every idle connection is too old
    t.request("GET", "/", {}, None, (5, 5))
    assert server.accepted == 2 and t.connections_opened == 2


def test_a_connection_used_a_moment_ago_is_reused_without_a_poll_or_a_timeout_change(
    scripted: Callable[[Handler], Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each poll (select) and each settimeout is a system call that lets go of the GIL: a busy
    client makes neither on a connection it used less than RECHECK_SECONDS ago."""
    import select

    import netsched.kube.transport as transport_mod

    server = scripted(keep_alive)
    t = transport_to(server)
    t.request("GET", "/", {}, None, (5, 5))
    calls: list[str] = []
    real_select, real_settimeout = select.select, socket.socket.settimeout

    def counted_select(*args: Any) -> Any:
        calls.append("select")
        return real_select(*args)

    def counted_settimeout(sock: socket.socket, value: float | None) -> None:
        calls.append(f"settimeout {value}")
        real_settimeout(sock, value)

    monkeypatch.setattr(select, "select", counted_select)
    monkeypatch.setattr(socket.socket, "settimeout", counted_settimeout)
    t.request("GET", "/", {}, None, (5, 5))
    assert calls == []
    t.request("GET", "/", {}, None, (5, 7))
    assert calls == ["settimeout 7"]  # a new read timeout is set, once
    monkeypatch.setattr(transport_mod, "RECHECK_SECONDS", -1.0)  # every idle connection is polled
    t.request("GET", "/", {}, None, (5, 7))
    assert calls == ["settimeout 7", "select"] and server.accepted == 1


# ---------------------------------------------------------------- pipelining (request_many)


def _numbered_replies(limit: int | None = None) -> Handler:
    """Answer each request on a connection with its own path as the body; after `limit` replies
    close the connection (the requests sent after those get no reply)."""

    def handle(conn: socket.socket, _n: int) -> None:
        buf = b""
        answered = 0
        while limit is None or answered < limit:
            while b"\r\n\r\n" not in buf:
                got = conn.recv(65536)
                if not got:
                    conn.close()
                    return
                buf += got
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = next(
                (
                    int(v)
                    for n, _, v in (h.partition(b":") for h in head.split(b"\r\n")[1:])
                    if n.lower() == b"content-length"
                ),
                0,
            )
            while len(buf) < length:
                buf += conn.recv(65536)
            buf = buf[length:]
            path = head.split(b" ")[1]
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(path), path))
            answered += 1
        conn.close()

    return handle


def test_request_many_pipelines_over_lanes_and_keeps_the_order(
    scripted: Callable[[Handler], Scripted],
) -> None:
    server = scripted(_numbered_replies())
    t = Transport("127.0.0.1", server.port, tls=None, pool_size=4)
    requests = [("POST", f"/r{i}", {}, b"{}") for i in range(7)]
    results = t.request_many(requests, (5, 5), lanes=3)
    assert [getattr(r, "data", r) for r in results] == [f"/r{i}".encode() for i in range(7)]
    assert server.accepted == 3 and len(t._idle) == 3  # one connection a lane, all kept
    again = t.request_many(requests[:2], (5, 5), lanes=3)  # two requests: two lanes, reused
    assert [r.data for r in again if not isinstance(r, Exception)] == [b"/r0", b"/r1"]
    assert server.accepted == 3


def test_request_many_gives_the_unanswered_requests_a_transient_error(
    scripted: Callable[[Handler], Scripted],
) -> None:
    from netsched.kube.errors import from_exception

    server = scripted(_numbered_replies(limit=2))  # answers two, then closes
    t = Transport("127.0.0.1", server.port, tls=None, pool_size=2)
    results = t.request_many([("POST", f"/r{i}", {}, b"{}") for i in range(4)], (5, 5))
    assert [r.data for r in results[:2] if not isinstance(r, Exception)] == [b"/r0", b"/r1"]
    assert all(isinstance(r, http.client.RemoteDisconnected) for r in results[2:])
    assert all(isinstance(from_exception(r), Transient) for r in results[2:] if isinstance(r, Exception))
    assert t._idle == []  # a connection that failed is not kept


def test_client_request_many_creates_over_tls_with_one_result_each(
    tls_server: tuple[FakeAPIServer, str],
) -> None:
    from netsched.kube.client import Reply
    from netsched.kube.errors import AlreadyExists

    srv, kubeconfig = tls_server
    client = build_api_client(kubeconfig, qps=1000, burst=1000)
    path = "/apis/events.k8s.io/v1/namespaces/default/events"

    def event(name: str) -> dict[str, object]:
        return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name}, "note": name}

    # The last repeats e0. Dealt round robin over two lanes, it goes on e0's connection after it
    # (items 0, 2, 4, 6), which the server answers in order: on the other lane it could be
    # created first on a loaded machine, and e0 would be the one refused.
    items = [(path, event(f"e{i}")) for i in range(6)] + [(path, event("e0"))]
    results = client.request_many("create", "events", "POST", items, lanes=2)
    assert [type(r) for r in results] == [Reply] * 6 + [AlreadyExists]
    stored = {e["metadata"]["name"] for e in srv.list("events.k8s.io/events", "default")}
    assert stored == {f"e{i}" for i in range(6)}
    assert client.transport is not None and client.transport.connections_opened == 2
