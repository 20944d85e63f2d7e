"""The only code that sends HTTP to Prometheus.

`PrometheusHTTPClient` sends instant queries (GET /api/v1/query) on its own
requests Session: TLS settings on the session, a bearer token re-read from
its file whenever the file changes (projected service-account tokens rotate),
no hidden retries (urllib3's are off: retries belong in one place). The token
is only ever put in a request header: never logged, never in an error message.

It reads the reply itself rather than through prometheus-api-client's
custom_query, which reads any body whole with no limit and bounds only each
socket read: a 50 MB answer took the scheduler from 94 to 448 MiB, and a
Prometheus trickling bytes kept a poll waiting far past its interval. Here
every query has a total deadline (connect, wait and read together: `timeout`)
and a size cap (`maxResponseBytes` per connection), both enforced while
reading; a reply over the cap is refused as soon as its Content-Length or the
bytes read so far exceed it.

Failures become `QueryError` with a short `reason` (a metric label) and a
`transient` flag; `retrying()` retries only transient ones with tenacity,
within a deadline taken from the injected clock.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable
from typing import Any, Protocol

import requests
import urllib3
from requests.adapters import HTTPAdapter
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter
from tenacity.stop import stop_base
from tenacity.wait import wait_base
from urllib3.util.retry import Retry

from netsched.metrics.args import ConnectionKey, redact

ATTEMPTS = 3
_STATUS = re.compile(r"HTTP Status Code (\d{3})")
# Small reads: a compressed reply is inflated per read, so one read can never hold much.
_READ_BYTES = 8 * 1024


class QueryError(Exception):
    """A query that failed; `reason` is a low-cardinality label value."""

    def __init__(self, reason: str, detail: str, *, transient: bool) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.transient = transient


class QueryClient(Protocol):
    """What the poller needs of a Prometheus client (tests pass a fake)."""

    def query(self, promql: str, timeout: float) -> Any:
        """data.result of an instant query at "now"; raises QueryError."""
        ...

    def close(self) -> None: ...


ClientFactory = Callable[[ConnectionKey], QueryClient]


class BearerToken:
    """A token file, re-read when its mtime or size changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._token = ""

    def header(self) -> dict[str, str]:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                with open(self.path, encoding="utf-8") as fh:
                    self._token = fh.read().strip()
                self._stamp = stamp
        except OSError as e:
            raise QueryError(
                "auth", f"cannot read bearerTokenFile {self.path}: {e.strerror}", transient=False
            ) from None
        if not self._token:
            raise QueryError("auth", f"bearerTokenFile {self.path} is empty", transient=False)
        return {"Authorization": f"Bearer {self._token}"}


class PrometheusHTTPClient:
    def __init__(self, conn: ConnectionKey) -> None:
        self.session = requests.Session()
        self.session.verify = conn.ca_file or not conn.insecure_skip_verify
        # No retries down there; read=False re-raises a read timeout as itself.
        adapter = HTTPAdapter(max_retries=Retry(total=0, read=False))
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self._url = conn.address.rstrip("/") + "/api/v1/query"
        self._where = redact(conn.address)
        self.max_bytes = conn.max_response_bytes
        self._token = BearerToken(conn.bearer_token_file) if conn.bearer_token_file else None

    def query(self, promql: str, timeout: float) -> Any:
        """data.result of an instant query, the whole exchange within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        headers = self._token.header() if self._token else {}
        try:
            resp = self.session.get(
                self._url, params={"query": promql}, headers=headers, timeout=(timeout, timeout), stream=True
            )
            try:
                body = self._read(resp, promql, deadline, timeout)
            finally:
                resp.close()
        except requests.Timeout:
            raise QueryError("timeout", f"no answer within {timeout:g}s", transient=True) from None
        except requests.ConnectionError as e:
            raise QueryError("unreachable", _short(e), transient=True) from None
        except requests.RequestException as e:
            raise QueryError("http", _short(e), transient=True) from None
        if resp.status_code != 200:
            raise classify_status(f"HTTP Status Code {resp.status_code} ({body[:300]!r})")
        try:
            return json.loads(body)["data"]["result"]
        except ValueError as e:
            raise QueryError("bad_response", f"not JSON: {e}", transient=False) from None
        except (KeyError, TypeError) as e:
            raise QueryError("bad_response", f"unexpected JSON shape: {e}", transient=False) from None

    def _read(self, resp: requests.Response, promql: str, deadline: float, timeout: float) -> bytes:
        """The body, refused past the size cap or the deadline (a trickle must not outlast it)."""
        length = resp.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            raise self._too_large(promql, f"Content-Length {int(length)}")
        raw = resp.raw
        # A list of reads, joined once complete: growing one buffer would copy it (twice the memory).
        parts: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QueryError(
                    "timeout",
                    f"answer not complete within {timeout:g}s ({size} bytes read)",
                    transient=True,
                )
            _bound_next_read(raw, left)
            try:
                chunk = raw.read1(_READ_BYTES, decode_content=True)
            except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
                raise QueryError(
                    "timeout",
                    f"answer not complete within {timeout:g}s ({size} bytes read)",
                    transient=True,
                ) from None
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise QueryError("http", _short(e), transient=True) from None
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_large(promql, f"more than {self.max_bytes} bytes read")

    def _too_large(self, promql: str, seen: str) -> QueryError:
        return QueryError(
            "too_large",
            f"the answer to query {promql[:200]!r} from {self._where} exceeds maxResponseBytes "
            f"({self.max_bytes} bytes; {seen}): refused. Narrow the query or raise maxResponseBytes",
            transient=False,
        )

    def close(self) -> None:
        self.session.close()


def _bound_next_read(raw: Any, seconds: float) -> None:
    """Let the next socket read wait at most `seconds` (the time left before the deadline)."""
    conn = getattr(raw, "connection", None)
    sock = getattr(conn, "sock", None)
    if isinstance(sock, socket.socket):
        sock.settimeout(max(0.001, seconds))


def classify_status(message: str) -> QueryError:
    """PrometheusApiClientException("HTTP Status Code 503 (b'...')") -> QueryError."""
    m = _STATUS.search(message)
    code = int(m.group(1)) if m else 0
    detail = message[:300]
    if code in (401, 403):
        return QueryError("auth", f"HTTP {code}: check bearerTokenFile", transient=False)
    if code == 429 or code >= 500:
        return QueryError("http_5xx" if code >= 500 else "http_429", detail, transient=True)
    return QueryError("bad_query", detail, transient=False)


def _short(e: BaseException) -> str:
    # requests' messages carry the URL (never the headers); keep them short.
    return f"{type(e).__name__}: {str(e)[:200]}"


def is_transient(e: BaseException) -> bool:
    return isinstance(e, QueryError) and e.transient


class stop_at_deadline(stop_base):
    """Stop when the wait before the next attempt would reach a deadline on the injected clock.

    Like tenacity's stop_before_delay (which uses time.monotonic): an attempt
    that could only start at the deadline is not made, so a query that keeps
    failing ends with its own error (timeout, 503), not with "no time left".
    """

    def __init__(self, now: Callable[[], float], deadline: float) -> None:
        self.now = now
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.now() + retry_state.upcoming_sleep >= self.deadline


class wait_capped(wait_base):
    """An inner wait, never sleeping past the deadline."""

    def __init__(self, inner: wait_base, now: Callable[[], float], deadline: float) -> None:
        self.inner = inner
        self.now = now
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> float:
        return max(0.0, min(self.inner(retry_state), self.deadline - self.now()))


def retrying(
    now: Callable[[], float], sleep: Callable[[float], None], deadline: float, attempts: int = ATTEMPTS
) -> Retrying:
    """Up to `attempts` tries of a transient failure, backing off 0.25 s, 0.5 s... (+ jitter), until deadline."""
    return Retrying(
        retry=retry_if_exception(is_transient),
        wait=wait_capped(wait_exponential_jitter(multiplier=0.25, max=4, jitter=0.25), now, deadline),
        stop=stop_after_attempt(attempts) | stop_at_deadline(now, deadline),
        sleep=sleep,
        reraise=True,
    )
