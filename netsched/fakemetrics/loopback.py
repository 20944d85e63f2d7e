"""An HTTP server on 127.0.0.1 served from a daemon thread, for the in-process stand-ins.

The synthetic exporter, the fake Prometheus server and the test kit's misbehaving Prometheus
differ only in their request handler; binding a free port, the serving thread and an orderly
stop are the same for all three, so they live here once.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """`handler` behind a ThreadingHTTPServer on a free 127.0.0.1 port (bound at once, so the
    port is known before `start()`); `stop()` ends serving and frees the port."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True  # a client holding a connection never blocks stop()
        self._name = name
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        # A short poll interval keeps stop() fast; idle cost is negligible.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=self._name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:  # shutdown() waits for serve_forever(): only when it runs
            self._server.shutdown()
        self._server.server_close()
        if thread is not None:
            thread.join(timeout=5)
