"""The only code that sends queries to Prometheus: prometheus-api-client on a Session of our own.

`PrometheusHTTPClient` sends every instant query through
`PrometheusConnect.custom_query` on its own requests Session, whose transport
is `transport.CappedAdapter`: a total deadline per query (connect, wait and
read together: `timeout`), a size cap while reading (`maxResponseBytes`), TLS
verification as configured whatever the environment says, and no hidden
retries (the library's urllib3 retries are off: retries belong in one place).
A bearer token is re-read from its file whenever the file changes (projected
service-account tokens rotate) and only ever put in a request header: never
logged, never in an error message.

Failures arrive as requests.RequestException or PrometheusApiClientException
and `classify` turns them into `QueryError` with a short `reason` (a metric
label) and a `transient` flag; `retrying()` retries only transient ones with
tenacity, within a deadline taken from the injected clock.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, Protocol

import requests
import urllib3
from prometheus_api_client.exceptions import PrometheusApiClientException
from prometheus_api_client.prometheus_connect import PrometheusConnect
from requests.auth import AuthBase
from tenacity import Retrying, stop_after_attempt

from netsched.metrics.args import ConnectionKey, redact
from netsched.metrics.transport import CappedAdapter, ResponseDeadline, ResponseTooLarge
from netsched.retry import policy

ATTEMPTS = 3
_STATUS = re.compile(r"HTTP Status Code (\d{3})")


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


class BearerToken(AuthBase):
    """requests auth from a token file, re-read when its mtime or size changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._token = ""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._current()}"
        return request

    def _current(self) -> str:
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
        return self._token


class PrometheusHTTPClient:
    def __init__(self, conn: ConnectionKey) -> None:
        verify: bool | str = conn.ca_file or not conn.insecure_skip_verify
        self.session = requests.Session()
        self.session.verify = verify  # the library passes it with each request; the adapter pins it too
        self.prom = PrometheusConnect(
            conn.address.rstrip("/"),
            session=self.session,
            # Annotated as a tuple; the library hands it to requests, which takes any auth object.
            auth=BearerToken(conn.bearer_token_file) if conn.bearer_token_file else None,  # type: ignore[arg-type]
        )
        # After the library mounted its own adapter (and retries) on the address: ours replaces
        # it there, and serves any other URL this session is sent to (a redirect), so no reply
        # escapes the cap.  Every query passes its own timeout (query()).
        adapter = CappedAdapter(conn.max_response_bytes, verify)
        for prefix in ("http://", "https://", self.prom.url):
            self.session.mount(prefix, adapter)
        self._where = redact(conn.address)

    def query(self, promql: str, timeout: float) -> Any:
        """data.result of an instant query, the whole exchange within `timeout` seconds."""
        try:
            return self.prom.custom_query(promql, timeout=timeout)  # type: ignore[arg-type]
        # QueryError (the bearer token file) passes through as it is.  KeyError, TypeError: custom_query indexes the reply's ["data"]["result"] itself.
        except (requests.RequestException, PrometheusApiClientException, KeyError, TypeError) as e:
            raise classify(e, promql, self._where, timeout) from None

    def close(self) -> None:
        self.session.close()


def classify(e: Exception, promql: str, where: str, timeout: float) -> QueryError:
    """What prometheus-api-client or requests raised for a query -> QueryError (reason, transient).

    Order matters: the transport's own refusals first, then the most specific
    requests classes (a ConnectTimeout is also a ConnectionError; a reply that
    is not JSON is also a RequestException).
    """
    if isinstance(e, PrometheusApiClientException):
        return classify_status(str(e))
    if isinstance(e, ResponseTooLarge):
        return QueryError(
            "too_large",
            f"the answer to query {promql[:200]!r} from {where} exceeds maxResponseBytes "
            f"({e.limit} bytes; {e.seen}): refused. Narrow the query or raise maxResponseBytes",
            transient=False,
        )
    if isinstance(e, requests.JSONDecodeError):
        return QueryError("bad_response", f"not JSON: {e}", transient=False)
    if isinstance(e, KeyError | TypeError):
        return QueryError("bad_response", f"unexpected JSON shape: {e}", transient=False)
    if isinstance(e, ResponseDeadline):
        return QueryError("timeout", str(e), transient=True)
    if isinstance(e, requests.Timeout):
        return QueryError("timeout", f"no answer within {timeout:g}s", transient=True)
    if isinstance(e, requests.ConnectionError):
        return QueryError("unreachable", _short(e), transient=True)
    return QueryError("http", _short(e), transient=True)


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
    """Short text for a requests error: what failed, not the URL (messages never carry headers)."""
    # requests wraps urllib3's MaxRetryError, whose text is mostly the URL with the query; its
    # reason is what an operator needs ("[SSL: CERTIFICATE_VERIFY_FAILED] ...", "Connection refused").
    inner = e.args[0] if e.args else None
    cause = inner.reason if isinstance(inner, urllib3.exceptions.MaxRetryError) and inner.reason else e
    return f"{type(e).__name__}: {str(cause)[:200]}"


def transient_query_error(e: BaseException) -> bool:
    """A QueryError a repeat may cure (the one retry policy asks this)."""
    return isinstance(e, QueryError) and e.transient


def retrying(
    now: Callable[[], float], sleep: Callable[[float], None], deadline: float, attempts: int = ATTEMPTS
) -> Retrying:
    """Up to `attempts` tries of a transient failure, backing off 0.25 s, 0.5 s... (+ jitter), until deadline."""
    return policy(
        transient_query_error,
        backoff=0.25,
        max_backoff=4,
        stop=stop_after_attempt(attempts),
        sleep=sleep,
        deadline=(now, deadline),
    )
