"""Our own API error hierarchy, so nothing outside kube/ sees kubernetes or urllib3 exceptions.

The official client raises ApiException subclasses with the HTTP status and the
raw body; the transport raises urllib3 and socket errors. Callers care about a
few meanings instead: the object is gone (NotFound), someone else won
(Conflict), the request may succeed if repeated (is_transient), a
PodDisruptionBudget refused an eviction (DisruptionBudgetRefusal: a 429 that no
repeat cures now, unlike throttling). `from_exception`
turns any of those low-level errors into one of the classes below; use it as
`raise from_exception(e) from e` so the original stays attached.
"""

from __future__ import annotations

import http.client
import json
import sys
from collections.abc import Mapping
from typing import ClassVar

import urllib3.exceptions


class ApiError(Exception):
    """A failed API request. `status` is the HTTP code (0 when no response arrived)."""

    transient: ClassVar[bool] = False

    def __init__(
        self,
        status: int = 0,
        reason: str = "",
        message: str = "",
        *,
        retry_after: float = 0.0,
        details: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(status, reason, message)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after  # seconds the server asked us to wait (0 = no hint)
        self.details: Mapping[str, object] = details or {}

    def __str__(self) -> str:
        head = f"{self.status} {self.reason}".strip() if self.status else self.reason or "ApiError"
        return f"{head}: {self.message}" if self.message else head

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.reason!r}, {self.message!r})"


class Unauthorized(ApiError):
    """401: credentials missing or rejected."""


class Forbidden(ApiError):
    """403: authenticated, but RBAC does not allow the request."""


class NotFound(ApiError):
    """404: the object, its namespace, or the whole resource type does not exist."""


class Conflict(ApiError):
    """409: a precondition or resourceVersion check failed (for pods/binding: already bound)."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: a create found an object of that name."""


class Gone(ApiError):
    """410: the resourceVersion is too old (compacted); a watcher must list again."""


class Invalid(ApiError):
    """422: the server rejected the object as invalid."""


class TooManyRequests(ApiError):
    """429: the server is throttling us; `retry_after` says for how long."""

    transient = True


class DisruptionBudgetRefusal(TooManyRequests):
    """429 with a DisruptionBudget cause: an eviction a PodDisruptionBudget does not allow now.

    Not transient: repeating the request at once cannot change the budget; the caller tries
    again later (a later rebalancing round), as kubectl drain does. `causes` holds the
    budget's own words ("The disruption budget web needs 9 healthy pods and has 9 currently").
    """

    transient = False

    @property
    def causes(self) -> tuple[str, ...]:
        return tuple(str(c.get("message") or "") for c in _causes(self.details, DISRUPTION_BUDGET_CAUSE))


class ServerError(ApiError):
    """5xx: the server (or something in front of it) failed; usually worth repeating."""

    transient = True


class MultipleDisruptionBudgets(ServerError):
    """The 500 kube's eviction handler answers for a pod that more than one PodDisruptionBudget
    selects: a configuration fault no repeat cures (kube recognises it only by its message)."""

    transient = False


class Transient(ApiError):
    """No usable response: connection refused/reset, timeout, truncated body."""

    transient = True


# policy/v1 DisruptionBudgetCause: the StatusCause type of an eviction a budget refused.
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
# kube's pods/eviction handler, for a pod several budgets select (a 500 without a reason).
MULTIPLE_BUDGETS_MESSAGE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)

_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_for_status(
    status: int,
    reason: str = "",
    message: str = "",
    *,
    retry_after: float = 0.0,
    details: Mapping[str, object] | None = None,
) -> ApiError:
    """The ApiError subclass for an HTTP status (and reason, for AlreadyExists)."""
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif status == 429 and _causes(details, DISRUPTION_BUDGET_CAUSE):
        cls = DisruptionBudgetRefusal
    elif status == 500 and message == MULTIPLE_BUDGETS_MESSAGE:
        cls = MultipleDisruptionBudgets
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif 500 <= status <= 599 and status != 501:
        cls = ServerError
    else:
        cls = ApiError
    return cls(status, reason, message, retry_after=retry_after, details=details)


def failure_status(
    code: int, reason: str, message: str, details: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The metav1.Status body of a failed request, as the API server writes it (`from_status`
    reads it back)."""
    body: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = dict(details)
    return body


def _causes(details: Mapping[str, object] | None, cause_type: str) -> list[Mapping[str, object]]:
    """The metav1.StatusCause entries of `details` of one type."""
    causes = (details or {}).get("causes")
    if not isinstance(causes, list):
        return []
    return [c for c in causes if isinstance(c, Mapping) and c.get("type") == cause_type]


def from_status(status_obj: Mapping[str, object], default_code: int = 0) -> ApiError:
    """Map a metav1.Status object (an error body, or the object of a watch ERROR event)."""
    code = status_obj.get("code")
    raw_details = status_obj.get("details")
    details: dict[str, object] = raw_details if isinstance(raw_details, dict) else {}
    retry_after = _float(details.get("retryAfterSeconds"))
    return error_for_status(
        code if isinstance(code, int) and code else default_code,
        str(status_obj.get("reason") or ""),
        str(status_obj.get("message") or ""),
        retry_after=retry_after,
        details=details,
    )


def from_exception(e: BaseException) -> ApiError:
    """Translate a client, transport or socket error; returns (does not raise) the ApiError."""
    if isinstance(e, ApiError):
        return e
    out = _translate(e)
    out.__cause__ = e
    return out


def is_request_error(e: BaseException) -> bool:
    """True for failures of the request itself (API status, transport, socket), as opposed to
    bugs in the caller (bad arguments rejected by the client before sending), which should
    propagate unchanged."""
    return _is_api_exception(e) or isinstance(
        e, ApiError | urllib3.exceptions.HTTPError | http.client.HTTPException | OSError
    )


def is_transient(e: BaseException) -> bool:
    """True for errors a repeat may cure: 429, 5xx, timeouts, refused/reset connections."""
    return from_exception(e).transient


def retry_after_hint(e: BaseException) -> float:
    """Seconds the server asked us to wait before trying again (Retry-After); 0 when it did not."""
    return e.retry_after if isinstance(e, ApiError) else 0.0


def _translate(e: BaseException) -> ApiError:
    if _is_api_exception(e):
        return _from_api_exception(e)
    if isinstance(e, urllib3.exceptions.MaxRetryError) and e.reason is not None:
        return _translate(e.reason)
    if isinstance(e, urllib3.exceptions.LocationValueError):
        return ApiError(0, "BadURL", str(e))
    if isinstance(e, urllib3.exceptions.HTTPError | http.client.HTTPException | OSError):
        # Timeouts, resets, refused connections, truncated chunked bodies: nothing
        # useful arrived, so the request may or may not have been applied.
        return Transient(0, type(e).__name__, str(e) or type(e).__name__)
    return ApiError(0, type(e).__name__, str(e))


def _is_api_exception(e: BaseException) -> bool:
    # Looked up lazily: importing kubernetes.client costs ~0.5 s, and if the
    # module is not loaded yet no exception can be one of its ApiExceptions.
    mod = sys.modules.get("kubernetes.client.exceptions")
    cls = getattr(mod, "ApiException", None)
    return cls is not None and isinstance(e, cls)


def from_response(
    status: int, reason: str, body: bytes | str | None, headers: Mapping[str, str] | None = None
) -> ApiError:
    """Map a non-2xx HTTP reply (its metav1.Status body and Retry-After header) without the client's exception."""
    return _from_parts(status, reason, body, headers)


def _from_api_exception(e: BaseException) -> ApiError:
    return _from_parts(
        int(getattr(e, "status", 0) or 0),
        str(getattr(e, "reason", "") or ""),
        getattr(e, "body", None),
        getattr(e, "headers", None),
    )


def _from_parts(status: int, reason: str, body: object, headers: Mapping[str, str] | None) -> ApiError:
    message = ""
    details: Mapping[str, object] = {}
    retry_after = 0.0
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        parsed = _loads(body)
        if isinstance(parsed, dict) and parsed.get("kind") == "Status":
            mapped = from_status(parsed, status)
            reason, message, details, retry_after = (
                mapped.reason,
                mapped.message,
                mapped.details,
                mapped.retry_after,
            )
        else:
            message = body[:512]
    if headers is not None:
        retry_after = max(retry_after, _float(headers.get("Retry-After")))
    if status == 0:
        # The client reports transport problems it caught itself (e.g. TLS) as status 0.
        return ApiError(0, "ClientError", reason or message)
    return error_for_status(status, reason, message or reason, retry_after=retry_after, details=details)


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _float(value: object) -> float:
    """A non-negative number of seconds from a JSON number or a header's text; 0 otherwise."""
    if not isinstance(value, int | float | str):
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        return 0.0


__all__ = [
    "AlreadyExists",
    "ApiError",
    "DISRUPTION_BUDGET_CAUSE",
    "MULTIPLE_BUDGETS_MESSAGE",
    "Conflict",
    "DisruptionBudgetRefusal",
    "Forbidden",
    "Gone",
    "Invalid",
    "MultipleDisruptionBudgets",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    "Transient",
    "Unauthorized",
    "error_for_status",
    "failure_status",
    "from_exception",
    "from_response",
    "from_status",
    "is_request_error",
    "is_transient",
]
