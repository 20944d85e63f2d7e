"""The requests transport under prometheus-api-client: every reply read with a size cap and a deadline.

prometheus-api-client's custom_query reads a body whole (`response.json()`)
with no limit, and requests bounds only each socket read: a 50 MB answer took
the scheduler from 94 to 448 MiB, and a Prometheus trickling bytes kept a
poll waiting far past its interval.  `CappedAdapter` is mounted on the
client's Session after PrometheusConnect has mounted its own adapter (which
it replaces), so the library still builds, sends and decodes every query but
the bytes come through here: the body is streamed, refused as soon as its
Content-Length or the bytes read exceed the cap, and every socket read waits
at most what is left of the request's deadline (connect, wait and read
together).  The library then gets a response whose body is already read.

The adapter also makes no retries (tenacity is the one retry layer) and
applies the configured TLS verification to each request itself, because
requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE replace a `verify` of True
(psf/requests#3829): a configured caFile or insecureSkipVerify must win.
"""

from __future__ import annotations

import socket
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


class CappedAdapter(HTTPAdapter):
    """A transport adapter that reads each reply itself, within `max_bytes` and the request's timeout.

    `verify` is the configured verification: a CA bundle path, False
    (insecureSkipVerify) or True (nothing configured: requests' default,
    which the environment may override as it does for any requests user).
    """

    def __init__(self, max_bytes: int, verify: bool | str) -> None:
        # read=False: a read timeout is raised as itself, not as MaxRetryError.
        super().__init__(max_retries=Retry(total=0, read=False))
        self.max_bytes = max_bytes
        self.verify = verify

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: None | float | tuple[float, float] | tuple[float, None] = None,
        verify: bool | str = True,
        cert: None | bytes | str | tuple[bytes | str, bytes | str] = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """Send `request` and read its reply whole (whatever `stream` asks): the caller gets it read."""
        if not isinstance(timeout, int | float):
            raise ValueError(
                f"CappedAdapter needs one timeout in seconds for the whole exchange, got {timeout!r}"
            )
        deadline = time.monotonic() + timeout
        if self.verify is not True:
            verify = self.verify
        resp = super().send(request, stream=True, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        try:
            body = self._read(resp, deadline, timeout)
        except BaseException:
            resp.close()  # the rest of the body is unread: the connection cannot be reused
            raise
        # The body is read: hand it to the library as requests would after reading it.
        resp._content = body
        resp._content_consumed = True  # type: ignore[attr-defined]  # set in Response.__init__
        resp.close()  # returns the connection to the pool
        return resp

    def _read(self, resp: requests.Response, deadline: float, timeout: float) -> bytes:
        """The body, refused past the size cap or the deadline (a trickle must not outlast it)."""
        length = resp.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            raise ResponseTooLarge(self.max_bytes, f"Content-Length {int(length)}")
        raw = resp.raw
        # A list of reads, joined once complete: growing one buffer would copy it (twice the memory).
        parts: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ResponseDeadline(f"answer not complete within {timeout:g}s ({size} bytes read)")
            _bound_next_read(raw, left)
            try:
                chunk = raw.read1(READ_BYTES, decode_content=True)
            except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
                raise ResponseDeadline(
                    f"answer not complete within {timeout:g}s ({size} bytes read)"
                ) from None
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise requests.exceptions.ChunkedEncodingError(f"{type(e).__name__}: {e}") from None
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                raise ResponseTooLarge(self.max_bytes, f"more than {self.max_bytes} bytes read")


def _bound_next_read(raw: urllib3.BaseHTTPResponse, seconds: float) -> None:
    """Let the next socket read wait at most `seconds` (the time left before the deadline)."""
    conn = getattr(raw, "connection", None)
    sock = getattr(conn, "sock", None)
    if isinstance(sock, socket.socket):
        sock.settimeout(max(0.001, seconds))
