"""Client, transport and socket errors map onto netsched.kube.errors."""

from __future__ import annotations

import http.client
import json

import pytest
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from netsched.kube import errors
from netsched.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    Transient,
    Unauthorized,
    from_exception,
    from_status,
    is_transient,
)


def api_exception(
    code: int, reason: str = "", message: str = "", headers: dict[str, str] | None = None
) -> ApiException:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    e = ApiException(status=code, reason="HTTP reason", body=json.dumps(body))
    e.headers = headers or {}
    return e


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (410, "Expired", Gone),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", ServerError),
        (503, "ServiceUnavailable", ServerError),
        (400, "BadRequest", ApiError),
    ],
)
def test_api_exception_maps_by_status(code: int, reason: str, cls: type[ApiError]) -> None:
    original = api_exception(code, reason, "it broke")
    err = from_exception(original)
    assert type(err) is cls
    assert (err.status, err.reason, err.message) == (code, reason, "it broke")
    assert err.__cause__ is original


def test_already_exists_is_a_conflict() -> None:
    assert isinstance(from_exception(api_exception(409, "AlreadyExists")), Conflict)


def test_retry_after_comes_from_header_or_status_details() -> None:
    assert from_exception(api_exception(429, headers={"Retry-After": "3"})).retry_after == 3.0
    body = {"kind": "Status", "code": 429, "reason": "TooManyRequests", "details": {"retryAfterSeconds": 7}}
    assert from_exception(ApiException(status=429, body=json.dumps(body))).retry_after == 7.0


def test_non_status_body_becomes_the_message() -> None:
    err = from_exception(ApiException(status=502, reason="Bad Gateway", body="<html>proxy error</html>"))
    assert isinstance(err, ServerError)
    assert "proxy error" in err.message


def test_client_side_status_zero_is_not_transient() -> None:
    # The client reports e.g. TLS verification failures as status 0: repeating will not help.
    err = from_exception(ApiException(status=0, reason="SSLError\ncertificate verify failed"))
    assert type(err) is ApiError
    assert not err.transient


@pytest.mark.parametrize(
    "exc",
    [
        urllib3.exceptions.ReadTimeoutError(None, "/api", "read timed out"),  # type: ignore[arg-type]
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
        urllib3.exceptions.NewConnectionError(None, "refused"),  # type: ignore[arg-type]
        urllib3.exceptions.MaxRetryError(None, "/api", urllib3.exceptions.ConnectTimeoutError("slow")),  # type: ignore[arg-type]
        TimeoutError("timed out"),
        TimeoutError("timed out"),
        ConnectionResetError(104, "Connection reset by peer"),
        ConnectionRefusedError(111, "refused"),
        http.client.RemoteDisconnected("closed"),
        http.client.IncompleteRead(b"partial"),
    ],
)
def test_transport_errors_are_transient(exc: BaseException) -> None:
    err = from_exception(exc)
    assert isinstance(err, Transient)
    assert err.status == 0
    assert is_transient(exc)


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (api_exception(429), True),
        (api_exception(500), True),
        (api_exception(504), True),
        (api_exception(501), False),
        (api_exception(404), False),
        (api_exception(409), False),
        (api_exception(410), False),
        (ValueError("bug"), False),
        (urllib3.exceptions.LocationValueError("no host"), False),
    ],
)
def test_is_transient(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_from_exception_passes_our_errors_through() -> None:
    err = NotFound(404, "NotFound", "x")
    assert from_exception(err) is err


def test_raise_from_keeps_the_original() -> None:
    original = api_exception(404, "NotFound", 'pods "p" not found')
    with pytest.raises(NotFound) as info:
        try:
            raise original
        except ApiException as e:
            raise from_exception(e) from e
    assert info.value.__cause__ is original
    assert str(info.value) == '404 NotFound: pods "p" not found'


def test_from_status_maps_a_watch_error_event() -> None:
    err = from_status(
        {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    )
    assert isinstance(err, Gone)
    assert err.message == "too old resource version"


def test_errors_module_does_not_need_the_kubernetes_client() -> None:
    # Only the lazy lookup in sys.modules touches it; mapping a socket error works regardless.
    assert errors.from_exception(OSError("boom")).transient


def test_request_errors_are_told_apart_from_caller_bugs() -> None:
    assert errors.is_request_error(api_exception(404))
    assert errors.is_request_error(ConnectionResetError())
    assert errors.is_request_error(urllib3.exceptions.ProtocolError("x"))
    assert not errors.is_request_error(TypeError("bad argument"))
    assert not errors.is_request_error(ValueError("bad value"))
