"""One Kubernetes client per process, with the rate limit and retries every request goes through.

Building the official client is slow (~0.5 s of imports, plus a pool per
ApiClient), and it retries nothing sensibly on its own, so netsched builds one
`KubeClient` at start-up and shares it across threads. Every request goes
through `KubeClient.call`: it waits for a token from the client-side rate
limiter, reads the raw reply (parsed with json.loads on first read: typed
models are ~20x slower), maps failures to netsched.kube.errors and retries
transient ones with tenacity. Watches use `open_stream`, which makes one
attempt: the reflector owns their retry loop.

Every request netsched makes (bindings, events, status patches, leases,
token and access reviews, gets and lists, watches) goes through `request` /
`stream`: the URL, headers and JSON body are built here; the generated API
methods, whose per-call validation and serialisation cost more CPU than the
HTTPS request itself, are never used. `request` sends them on
netsched.kube.transport (pooled keep-alive sockets, a fifth of urllib3's CPU
per request) when the kubeconfig allows, else on the ApiClient's urllib3
pool; `stream` (watches) always uses urllib3. TLS verification, client
certificates and tls-server-name are the kubeconfig's either way: the
official package loads the configuration and holds the pool.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote

import tenacity
import urllib3

from netsched.gcpause import gc_paused
from netsched.kube.credentials import Credentials
from netsched.kube.errors import (
    ApiError,
    Unauthorized,
    from_exception,
    from_response,
    is_request_error,
    is_transient,
    retry_after_hint,
)
from netsched.kube.ratelimit import TokenBucket
from netsched.kube.transport import Pipelined, Response, Transport
from netsched.retry import policy, retry_after_first

log = logging.getLogger(__name__)


JsonObj = dict[str, Any]
Query = Sequence[tuple[str, Any]]
USER_AGENT = "netsched"
JSON = "application/json"
_THROTTLE_LOG_SECONDS = 1.0  # client-go also reports waits above a second


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """How transient failures (429, 5xx, timeouts, resets) are repeated.

    A request stops after `max_attempts` tries or once `max_delay` seconds have
    passed since the first one, whichever comes first. Waits grow from
    `backoff` by doubling, with up to `backoff` of jitter, capped at
    `max_backoff`; a server's Retry-After wins when it is longer (capped at
    `max_retry_after`).
    """

    max_attempts: int = 5
    max_delay: float = 30.0
    backoff: float = 0.2
    max_backoff: float = 5.0
    max_retry_after: float = 30.0


class Reply:
    """A completed request: HTTP status and the JSON body ({} when empty), parsed on first read
    (a binding's or an event's reply is never read: no CPU spent decoding it)."""

    __slots__ = ("_body", "_data", "status")

    def __init__(self, status: int, data: bytes | None) -> None:
        self.status = status
        self._data = data
        self._body: JsonObj | None = None

    @property
    def body(self) -> JsonObj:
        """The parsed body; ApiError "InvalidResponse" when the server sent something not JSON."""
        if self._body is None:
            self._body = _parse_body(self._data)
            self._data = None
        return self._body


class KubeClient:
    """The shared ApiClient's configuration and pool, behind a rate limit and retries.

    `request` and `stream` send every request netsched makes (see the module
    docstring); `call` runs a custom send (a binding that counts its attempts)
    with the same limits, retries and error mapping.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        limiter: TokenBucket | None = None,
        retry: RetrySettings | None = None,
        timeout: float = 30.0,
        sleep: Callable[[float], Any] | None = None,
        transport: Transport | None = None,
    ) -> None:
        """`sleep`: between retries (tests pass one that returns at once); by default a wait
        that cancel_retries() cuts short."""
        self.api_client = api_client
        self.credentials = Credentials(api_client.configuration)
        self.transport = transport
        self.limiter = limiter if limiter is not None else TokenBucket(0, 1)
        self.timeout = timeout
        self.retry_settings = retry or RetrySettings()
        r = self.retry_settings
        self._cancelled = threading.Event()
        self.retrying = policy(
            is_transient,
            backoff=r.backoff,
            max_backoff=r.max_backoff,
            stop=tenacity.stop_after_delay(r.max_delay) | tenacity.stop_after_attempt(r.max_attempts),
            sleep=sleep,
            before_sleep=self._before_sleep,
            retry_after=retry_after_hint,
            max_retry_after=r.max_retry_after,
            cancel=self._cancelled,
        )
        self._stats_lock = threading.Lock()
        self.requests_total = 0
        self.retries_total = 0

    @property
    def host(self) -> str:
        return str(self.api_client.configuration.host)

    def request(
        self,
        verb: str,
        resource: str,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON,
        retry: bool = True,
        timeout: Any = None,
    ) -> Reply:
        """One request on the lean path, with the rate limit, retries and error mapping of `call`.

        `path` is the REST path ("/api/v1/namespaces/ns/pods/p/binding"), `body`
        any JSON value (sent as `content_type`), `timeout` seconds or a
        (connect, read) pair (default: the client's).
        """
        send = partial(self.send, method, path, query, body, content_type)
        if timeout is None:
            return self.call(verb, resource, send, retry=retry)
        return self.call(verb, resource, send, retry=retry, _request_timeout=timeout)

    def request_many(
        self,
        verb: str,
        resource: str,
        method: str,
        items: Sequence[tuple[str, Any]],
        *,
        content_type: str = JSON,
        lanes: int = 1,
        timeout: Any = None,
    ) -> list[Reply | ApiError]:
        """One attempt at each (path, body) request, pipelined over up to `lanes` connections
        where the transport serves this cluster (Transport.request_many; one after another
        otherwise); each counts against the rate limit; `timeout` as for `request`.  One result
        per item, in order: its Reply, or its ApiError (a transient one when the connection
        failed before its reply: the server may still have acted on it, so use this only for
        requests a repeat cannot harm).  Nothing is retried here, except that the
        requests refused (401) with credentials that can change are sent once more, read afresh.
        This is `send_many` then `PendingReplies.finish`.
        """
        return self.send_many(
            verb, resource, method, items, content_type=content_type, lanes=lanes, timeout=timeout
        ).finish()

    def send_many(
        self,
        verb: str,
        resource: str,
        method: str,
        items: Sequence[tuple[str, Any]],
        *,
        content_type: str = JSON,
        lanes: int = 1,
        timeout: Any = None,
        throttle: bool = True,
    ) -> PendingReplies:
        """request_many's requests, sent now; their replies are read when the caller asks
        (PendingReplies), so it can send more meanwhile. Without the transport they are made
        one after another here, and the PendingReplies comes back complete. `throttle=False`:
        the caller took their rate-limit tokens already (`limiter.try_acquire`)."""
        limits = _connect_read(self.timeout if timeout is None else timeout)
        send = partial(
            self._pipeline, verb, resource, method, content_type=content_type, lanes=lanes, throttle=throttle
        )
        if self.transport is None:
            out: list[Reply | ApiError] = []
            for path, body in items:
                try:
                    out.append(
                        self.request(verb, resource, method, path, body=body, retry=False, timeout=timeout)
                    )
                except ApiError as e:
                    out.append(e)
            return PendingReplies(self, items, None, out, send, limits)
        return PendingReplies(self, items, send(self.transport, items, limits), [], send, limits)

    def _pipeline(
        self,
        verb: str,
        resource: str,
        method: str,
        transport: Transport,
        items: Sequence[tuple[str, Any]],
        timeout: tuple[float | None, float | None],
        *,
        content_type: str,
        lanes: int,
        throttle: bool = True,
    ) -> Pipelined:
        requests = []
        for path, body in items:
            if throttle:
                self._throttle(verb, resource)
            else:
                self._counted()
            target, headers, data = self._prepare(path, (), body, content_type)
            requests.append((method, target, headers, data))
        return transport.send_many(requests, timeout, lanes)

    def stream(self, verb: str, resource: str, path: str, *, query: Query = (), timeout: Any = None) -> Any:
        """One attempt at a streaming GET (a watch) on the lean path; returns the unread response."""
        send = partial(self.send, "GET", path, query, None, JSON, streaming=True)
        if timeout is None:
            return self.open_stream(verb, resource, send)
        return self.open_stream(verb, resource, send, _request_timeout=timeout)

    def send(
        self,
        method: str,
        path: str,
        query: Query,
        body: Any,
        content_type: str,
        _request_timeout: Any = None,
        _preload_content: bool = False,
        *,
        streaming: bool = False,
    ) -> Any:
        """Send one request; a reply outside 2xx is read and raised as its netsched.kube.errors class.

        On the transport (when it serves this cluster) the reply comes back read whole; a
        `streaming` request (a watch), or any request when it does not, goes through the
        ApiClient's urllib3 pool and comes back unread.
        """
        for fresh in (False, True):
            target, headers, data = self._prepare(path, query, body, content_type)
            if self.transport is not None and not streaming:
                reply = self.transport.request(method, target, headers, data, _connect_read(_request_timeout))
                if 200 <= reply.status <= 299:
                    return reply
                if reply.status == 401 and not fresh and self.credentials.invalidate():
                    continue  # a token rotated or expired since it was read: once more, read afresh
                raise from_response(reply.status, reply.reason, reply.data, reply.headers)
            resp = self.api_client.rest_client.pool_manager.request(
                method,
                f"{self.api_client.configuration.host}{target}",
                body=data,
                headers=headers,
                timeout=_timeout(_request_timeout),
                preload_content=False,
            )
            if 200 <= resp.status <= 299:
                return resp
            err_body = resp.data
            resp.release_conn()
            if resp.status == 401 and not fresh and self.credentials.invalidate():
                continue
            raise from_response(resp.status, str(resp.reason or ""), err_body, resp.headers)
        raise AssertionError("unreachable: the second pass returns or raises")

    def _prepare(
        self, path: str, query: Query, body: Any, content_type: str
    ) -> tuple[str, dict[str, str], bytes | None]:
        """The request target (path and query), headers (credentials included) and body bytes."""
        target = path
        if query:
            target += "?" + "&".join(f"{quote(k)}={quote(_query_value(v), safe='')}" for k, v in query)
        headers = {**self.api_client.default_headers, "Accept": JSON, **self.credentials.headers()}
        data: bytes | None = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = content_type
        return target, headers, data

    def call(
        self, verb: str, resource: str, fn: Callable[..., Any], *args: Any, retry: bool = True, **kwargs: Any
    ) -> Reply:
        """Run one API method to completion and return its status and parsed JSON body.

        `verb` and `resource` ("create", "pods/binding") only label logs. Raises
        netsched.kube.errors.ApiError subclasses; transient ones are retried
        first unless `retry` is False.
        """
        kwargs.setdefault("_request_timeout", self.timeout)
        kwargs["_preload_content"] = False
        # The first attempt runs outside tenacity (netsched.retry.retry_after_first: its loop
        # costs a sixth of a request on the keep-alive transport); only a transient failure enters it.
        try:
            return self._attempt(verb, resource, fn, args, kwargs)
        except Exception as e:
            if not retry or not is_transient(e):
                raise
            first = e
        reply: Reply = retry_after_first(
            self.retrying, first, self._attempt, verb, resource, fn, args, kwargs
        )
        return reply

    def open_stream(self, verb: str, resource: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One attempt at a streaming request (a watch); returns the unread urllib3 response."""
        kwargs.setdefault("_request_timeout", self.timeout)
        kwargs["_preload_content"] = False
        self._throttle(verb, resource)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if not is_request_error(e):
                raise
            raise from_exception(e) from e

    def cancel_retries(self) -> None:
        """Shutting down: from now on a transient failure is not tried again and a wait between
        attempts ends at once (the failure is raised), as kube's cancelled context ends the
        binding cycle's requests. A request's one attempt is still made."""
        self._cancelled.set()

    def close(self) -> None:
        self.api_client.close()

    # --- internals -----------------------------------------------------------

    def _attempt(
        self, verb: str, resource: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Reply:
        self._throttle(verb, resource)
        try:
            resp = fn(*args, **kwargs)
            # Reading the body is part of the attempt: a reset mid-body is as transient as one before it.
            data = resp.data
            resp.release_conn()
            status = int(resp.status)
        except Exception as e:
            if not is_request_error(e):
                raise  # a bug in the call (bad arguments), not a failed request
            raise from_exception(e) from e
        return Reply(status, data)

    def _throttle(self, verb: str, resource: str) -> None:
        waited = self.limiter.acquire()
        self._counted()
        if waited >= _THROTTLE_LOG_SECONDS:
            log.debug(
                "Waited for client-side throttling verb=%s resource=%s seconds=%.2f", verb, resource, waited
            )

    def _counted(self) -> None:
        with self._stats_lock:
            self.requests_total += 1

    def _before_sleep(self, retry_state: tenacity.RetryCallState) -> None:
        with self._stats_lock:
            self.retries_total += 1
        verb, resource = retry_state.args[0], retry_state.args[1]
        outcome = retry_state.outcome
        err = outcome.exception() if outcome is not None else None
        wait = retry_state.next_action.sleep if retry_state.next_action is not None else 0.0
        log.debug(
            "Retrying API request verb=%s resource=%s attempt=%d wait=%.2fs err=%s",
            verb,
            resource,
            retry_state.attempt_number,
            wait,
            err,
        )


class PendingReplies:
    """KubeClient.send_many's requests, sent, their replies still to read (Transport.Pipelined):
    `filenos()` for select, `read(fd)` one connection's replies, `finish()` every result, in
    order (a Reply or an ApiError; a 401 with credentials that can change is sent once more with
    them read afresh, as `send` does)."""

    def __init__(
        self,
        client: KubeClient,
        items: Sequence[tuple[str, Any]],
        pipelined: Pipelined | None,
        results: list[Reply | ApiError],
        send: Callable[[Transport, Sequence[tuple[str, Any]], tuple[float | None, float | None]], Pipelined],
        timeout: tuple[float | None, float | None],
    ) -> None:
        self._client = client
        self._items = items
        self._pipelined = pipelined
        self._results = results
        self._send = send
        self._timeout = timeout

    def filenos(self) -> list[int]:
        return [] if self._pipelined is None else self._pipelined.filenos()

    @property
    def deadline(self) -> float | None:
        """When the replies are due (monotonic), None: no limit or nothing left to read."""
        return None if self._pipelined is None else self._pipelined.deadline

    def read(self, fd: int) -> None:
        if self._pipelined is not None:
            self._pipelined.read(fd)

    def finish(self) -> list[Reply | ApiError]:
        if self._pipelined is None:
            return self._results
        pipelined, self._pipelined = self._pipelined, None
        results = _replies(pipelined.finish())
        client = self._client
        refused = [i for i, r in enumerate(results) if isinstance(r, Unauthorized)]
        if refused and client.transport is not None and client.credentials.invalidate():
            # A token rotated or expired since it was read: those requests once more, read afresh
            # (as `send` does for one).
            again = [self._items[i] for i in refused]
            for i, r in zip(
                refused, _replies(self._send(client.transport, again, self._timeout).finish()), strict=True
            ):
                results[i] = r
        self._results = results
        return results


def _replies(raw: list[Response | Exception]) -> list[Reply | ApiError]:
    results: list[Reply | ApiError] = []
    for r in raw:
        if isinstance(r, Exception):
            results.append(from_exception(r))
        elif 200 <= r.status <= 299:
            results.append(Reply(r.status, r.data))
        else:
            results.append(from_response(r.status, r.reason, r.data, r.headers))
    return results


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _timeout(value: Any) -> urllib3.Timeout | None:
    """The generated client's reading of _request_timeout: seconds in total, or (connect, read)."""
    if not value:
        return None
    if isinstance(value, tuple | list) and len(value) == 2:
        return urllib3.Timeout(connect=value[0], read=value[1])
    return urllib3.Timeout(total=value)


def _connect_read(value: Any) -> tuple[float | None, float | None]:
    """_request_timeout as (connect, read) seconds for the transport (None: no limit)."""
    if not value:
        return None, None
    if isinstance(value, tuple | list) and len(value) == 2:
        return value[0], value[1]
    return float(value), float(value)


# A body this large is decoded with the cyclic GC paused (netsched.gcpause).
_LARGE_BODY = 256 * 1024


def _parse_body(data: bytes | None) -> JsonObj:
    if not data:
        return {}
    try:
        if len(data) > _LARGE_BODY:
            with gc_paused():
                body = json.loads(data)
        else:
            body = json.loads(data)
    except ValueError as e:
        raise ApiError(0, "InvalidResponse", f"response is not JSON: {e}") from e
    return body if isinstance(body, dict) else {"items": body}


__all__ = [
    "JSON",
    "KubeClient",
    "PendingReplies",
    "Reply",
    "RetrySettings",
]
