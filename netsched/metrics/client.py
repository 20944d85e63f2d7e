"""The only code that sends HTTP to Prometheus.

`PrometheusHTTPClient` wraps prometheus-api-client's PrometheusConnect with
what its defaults lack: an explicit timeout, its built-in urllib3 retry off
(it takes ~6 s to give up on a dead server, and retries belong in one place),
TLS settings on our own requests Session, and a bearer token re-read from its
file whenever the file changes (projected service-account tokens rotate).
The token is only ever put in a request header: never logged, never in an
error message.

Failures become `QueryError` with a short `reason` (a metric label) and a
`transient` flag; `retrying()` retries only transient ones with tenacity,
within a deadline taken from the injected clock.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, Protocol

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter
from tenacity.stop import stop_base
from tenacity.wait import wait_base
from urllib3.util.retry import Retry

from netsched.metrics.args import ConnectionKey

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
        session = requests.Session()
        session.verify = conn.ca_file or not conn.insecure_skip_verify
        self._token = BearerToken(conn.bearer_token_file) if conn.bearer_token_file else None
        self._prom = PrometheusConnect(
            url=conn.address,
            session=session,
            # No retries down there; read=False re-raises a read timeout as itself
            # (requests' ReadTimeout) instead of a MaxRetryError "connection error".
            retry=Retry(total=0, read=False),
            timeout=conn.timeout_seconds,
        )

    def query(self, promql: str, timeout: float) -> Any:
        self._prom.headers = self._token.header() if self._token else None
        try:
            return self._prom.custom_query(promql, timeout=timeout)
        except requests.JSONDecodeError as e:
            raise QueryError("bad_response", f"not JSON: {e}", transient=False) from None
        except requests.Timeout:
            raise QueryError("timeout", f"no answer within {timeout:g}s", transient=True) from None
        except requests.ConnectionError as e:
            raise QueryError("unreachable", _short(e), transient=True) from None
        except requests.RequestException as e:
            raise QueryError("http", _short(e), transient=True) from None
        except PrometheusApiClientException as e:
            raise classify_status(str(e)) from None
        except (KeyError, TypeError) as e:
            raise QueryError("bad_response", f"unexpected JSON shape: {e}", transient=False) from None

    def close(self) -> None:
        self._prom.close()


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
    """Stop once the injected clock passes a deadline (tenacity's own uses time.monotonic)."""

    def __init__(self, now: Callable[[], float], deadline: float) -> None:
        self.now = now
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.now() >= self.deadline


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
