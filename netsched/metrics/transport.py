"""The requests transport under prometheus-api-client: every reply read with a size cap and a deadline.

prometheus-api-client's custom_query reads a body whole (`response.json()`)
with no limit, and requests bounds only each socket read: a 50 MB answer took
the scheduler from 94 to 448 MiB, and a Prometheus trickling bytes kept a
poll waiting far past its interval.  `CappedAdapter` is mounted on the
client's Session after PrometheusConnect has mounted its own adapter (which
it replaces), so the library still builds, sends and decodes every query but
the bytes come through here: a reply whose Content-Length exceeds the cap is
refused at once, and any other gets a `CappedBody` as its `Response.raw` (the
file-like object requests reads content from), which refuses the body as soon
as the bytes read exceed the cap or the request's deadline (connect, wait and
read together) has passed.  A read already waiting on the socket when the
deadline passes is cut by the adapter's `Watchdog` (urllib3's
HTTPResponse.shutdown), so a stalled reply cannot outlast the deadline either.
Only public API: requests reads any file-like `raw`, and urllib3 2.3 can shut
a response's socket from another thread.  requests keeps no cookie from these
replies in the Session (it reads them off the urllib3 response, which `raw` no
longer is); Prometheus' HTTP API sets none.

The adapter also makes no retries (tenacity is the one retry layer) and
applies the configured TLS verification to each request itself, because
requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE replace a `verify` of True
(psf/requests#3829): a configured caFile or insecureSkipVerify must win.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Mapping

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

# Small reads: a compressed reply is inflated per read, so one read can never hold much.
READ_BYTES = 8 * 1024


class ResponseTooLarge(requests.RequestException):
    """A reply over the size cap; `seen` says how that was found out."""

    def __init__(self, limit: int, seen: str) -> None:
        super().__init__(f"reply exceeds {limit} bytes ({seen})")
        self.limit = limit
        self.seen = seen


class ResponseDeadline(requests.Timeout):
    """A reply that had not arrived whole when the request's deadline passed."""


class Watchdog:
    """Shuts the socket of a reply still being read at its deadline, so a waiting read returns.

    At most one thread per adapter: started when a reply is armed and none runs, it
    sleeps until the earliest deadline armed (arming a later one does not wake it) and
    ends when a wake finds nothing armed, or at close().  A poller's queries, one after
    another, keep one thread alive through a poll; a client left unclosed leaves none.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, urllib3.BaseHTTPResponse]] = {}
        self._tokens = itertools.count()
        self._wakes_at: float | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, raw: urllib3.BaseHTTPResponse, deadline: float) -> int:
        """Cut `raw` at `deadline` (time.monotonic) unless disarmed first; the token for disarm()."""
        with self._cond:
            token = next(self._tokens)
            self._armed[token] = (deadline, raw)
            if self._closed:
                return token  # the adapter is closed: nothing to cut, the read fails on its own
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="prometheus-reply-deadline", daemon=True
                )
                self._thread.start()
            elif self._wakes_at is None or deadline < self._wakes_at:
                self._cond.notify()
        return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._armed.pop(token, None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._armed.clear()
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                for token, (deadline, raw) in list(self._armed.items()):
                    if deadline <= now:
                        del self._armed[token]
                        _shutdown(raw)
                if not self._armed:
                    break
                self._wakes_at = min(d for d, _ in self._armed.values())
                self._cond.wait(self._wakes_at - now)
            self._thread, self._wakes_at = None, None


def _shutdown(raw: urllib3.BaseHTTPResponse) -> None:
    # Released to the pool or closed meanwhile: no read left to cut.
    with contextlib.suppress(RuntimeError, ValueError, OSError):
        raw.shutdown()


class CappedBody:
    """A reply's body as requests reads it (`Response.raw`): decoded, within the cap and the deadline.

    A refusal closes the reply (its connection cannot be reused with the rest
    unread); the end of the body returns the connection to the pool.
    """

    def __init__(
        self,
        raw: urllib3.BaseHTTPResponse,
        max_bytes: int,
        deadline: float,
        timeout: float,
        watchdog: Watchdog,
    ) -> None:
        self._raw = raw
        self._max_bytes = max_bytes
        self._deadline = deadline
        self._timeout = timeout
        self._watchdog = watchdog
        self._token = watchdog.arm(raw, deadline)
        self._size = 0

    def read(self, amt: int | None = None) -> bytes:
        try:
            chunk = self._read(READ_BYTES if amt is None else min(amt, READ_BYTES))
        except BaseException:
            self.close()  # closed before it goes back to the pool: the rest is unread
            self._raw.release_conn()
            raise
        if not chunk:
            self._end()
        return chunk

    def _read(self, amt: int) -> bytes:
        if time.monotonic() >= self._deadline:
            raise self._late()
        try:
            chunk = self._raw.read1(amt, decode_content=True)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            if time.monotonic() >= self._deadline:  # the watchdog cut it, or the socket timed out
                raise self._late() from None
            raise requests.exceptions.ChunkedEncodingError(f"{type(e).__name__}: {e}") from None
        if time.monotonic() >= self._deadline:  # a cut read may look like the end of the body
            raise self._late()
        self._size += len(chunk)
        if self._size > self._max_bytes:
            raise ResponseTooLarge(self._max_bytes, f"more than {self._max_bytes} bytes read")
        return chunk

    def _late(self) -> ResponseDeadline:
        return ResponseDeadline(f"answer not complete within {self._timeout:g}s ({self._size} bytes read)")

    def _end(self) -> None:
        self._watchdog.disarm(self._token)
        self._raw.release_conn()

    def close(self) -> None:
        self._watchdog.disarm(self._token)
        self._raw.close()

    def release_conn(self) -> None:
        self._end()


class CappedAdapter(HTTPAdapter):
    """A transport adapter whose replies are read within `max_bytes` and the request's timeout.

    `verify` is the configured verification: a CA bundle path, False
    (insecureSkipVerify) or True (nothing configured: requests' default,
    which the environment may override as it does for any requests user).
    """

    def __init__(self, max_bytes: int, verify: bool | str) -> None:
        # read=False: a read timeout is raised as itself, not as MaxRetryError.
        super().__init__(max_retries=Retry(total=0, read=False))
        self.max_bytes = max_bytes
        self.verify = verify
        self.watchdog = Watchdog()

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: None | float | tuple[float, float] | tuple[float, None] = None,
        verify: bool | str = True,
        cert: None | bytes | str | tuple[bytes | str, bytes | str] = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """Send `request`; the reply's body (raw) is read within the cap and the deadline."""
        if not isinstance(timeout, int | float):
            raise ValueError(
                f"CappedAdapter needs one timeout in seconds for the whole exchange, got {timeout!r}"
            )
        deadline = time.monotonic() + timeout
        if self.verify is not True:
            verify = self.verify
        resp = super().send(request, stream=True, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        length = resp.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            resp.close()  # the body is unread: the connection cannot be reused
            raise ResponseTooLarge(self.max_bytes, f"Content-Length {int(length)}")
        resp.raw = CappedBody(resp.raw, self.max_bytes, deadline, timeout, self.watchdog)
        return resp

    def close(self) -> None:
        self.watchdog.close()
        super().close()
