"""KubeClient: raw JSON replies, error mapping, retries with injected waits, configuration loading."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import tenacity
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from netsched.kube.client import KubeClient, RetrySettings
from netsched.kube.errors import NotFound, ServerError, TooManyRequests, Transient
from netsched.kube.kubeconfig import KubeConfigError, build_api_client, load_configuration
from netsched.kube.ratelimit import TokenBucket


class FakeResponse:
    def __init__(self, status: int = 200, body: Any = None, fail_read: BaseException | None = None) -> None:
        self.status = status
        self._body = b"" if body is None else json.dumps(body).encode()
        self._fail_read = fail_read
        self.released = False

    @property
    def data(self) -> bytes:
        if self._fail_read is not None:
            raise self._fail_read
        return self._body

    def release_conn(self) -> None:
        self.released = True


class StubApiClient:
    class configuration:  # noqa: N801 - mimics the attribute of the real ApiClient
        host = "https://example.invalid:6443"

    def close(self) -> None:
        pass


class Script:
    """A fake API method: raises or returns the scripted outcomes in order, recording kwargs."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def status_exc(code: int, reason: str, retry_after: str | None = None) -> ApiException:
    e = ApiException(
        status=code, reason=reason, body=json.dumps({"kind": "Status", "code": code, "reason": reason})
    )
    e.headers = {"Retry-After": retry_after} if retry_after else {}
    return e


def make_client(**retry: Any) -> tuple[KubeClient, list[float]]:
    sleeps: list[float] = []
    client = KubeClient(
        StubApiClient(),
        retry=RetrySettings(**retry),
        timeout=7.0,
        sleep=sleeps.append,
        limiter=TokenBucket(0, 1),
    )
    return client, sleeps


def test_call_returns_status_and_parsed_body_and_asks_for_raw_content() -> None:
    client, _ = make_client()
    resp = FakeResponse(201, {"kind": "Status", "code": 201})
    fn = Script(resp)
    reply = client.call("create", "pods/binding", fn, "p", "ns", {"x": 1})
    assert reply.status == 201
    assert reply.body == {"kind": "Status", "code": 201}
    args, kwargs = fn.calls[0]
    assert args == ("p", "ns", {"x": 1})
    assert kwargs == {"_preload_content": False, "_request_timeout": 7.0}
    assert resp.released


def test_empty_body_is_an_empty_dict() -> None:
    client, _ = make_client()
    assert client.call("delete", "pods", Script(FakeResponse(200))).body == {}


def test_transient_errors_are_retried_then_succeed() -> None:
    client, sleeps = make_client(backoff=0.1, max_backoff=1.0)
    reset = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))
    fn = Script(reset, status_exc(503, "ServiceUnavailable"), FakeResponse(200, {"items": []}))
    assert client.call("list", "nodes", fn).body == {"items": []}
    assert len(fn.calls) == 3
    assert len(sleeps) == 2
    assert all(0.0 < s <= 1.0 for s in sleeps)
    assert client.retries_total == 2
    assert client.requests_total == 3


def test_a_reset_while_reading_the_body_is_retried_too() -> None:
    client, _ = make_client()
    broken = FakeResponse(200, fail_read=urllib3.exceptions.ProtocolError("IncompleteRead"))
    fn = Script(broken, FakeResponse(200, {"ok": True}))
    assert client.call("get", "nodes", fn, "n1").body == {"ok": True}


def test_permanent_errors_are_not_retried_and_keep_their_cause() -> None:
    client, sleeps = make_client()
    original = status_exc(404, "NotFound")
    fn = Script(original)
    with pytest.raises(NotFound) as info:
        client.call("get", "pods", fn, "p", "ns")
    assert info.value.__cause__ is original
    assert len(fn.calls) == 1
    assert sleeps == []


def test_gives_up_after_max_attempts_with_the_last_error() -> None:
    client, sleeps = make_client(max_attempts=3)
    fn = Script(*[status_exc(500, "InternalError")] * 3)
    with pytest.raises(ServerError):
        client.call("list", "pods", fn)
    assert len(fn.calls) == 3
    assert len(sleeps) == 2


def test_retry_after_wins_when_longer_but_is_capped() -> None:
    client, sleeps = make_client(backoff=0.01, max_backoff=0.05, max_retry_after=4.0)
    fn = Script(
        status_exc(429, "TooManyRequests", "2"),
        status_exc(429, "TooManyRequests", "60"),
        FakeResponse(200, {}),
    )
    client.call("create", "events", fn)
    assert sleeps == [2.0, 4.0]


def test_retry_can_be_disabled_per_call() -> None:
    client, _ = make_client()
    fn = Script(status_exc(429, "TooManyRequests"))
    with pytest.raises(TooManyRequests):
        client.call("list", "nodes", fn, retry=False)
    assert len(fn.calls) == 1


def test_waits_can_be_replaced_like_any_tenacity_policy() -> None:
    client, sleeps = make_client(backoff=5.0, max_backoff=5.0)
    client.retrying = client.retrying.copy(wait=tenacity.wait_none())
    client.call("get", "nodes", Script(TimeoutError("slow"), FakeResponse(200, {})))
    assert sleeps == [0.0]


def test_every_attempt_takes_a_rate_limit_token() -> None:
    taken: list[float] = []
    limiter = TokenBucket(1, 1, clock=lambda: 0.0, sleep=taken.append)
    client = KubeClient(StubApiClient(), limiter=limiter, sleep=lambda _s: None)
    client.call("get", "nodes", Script(TimeoutError(), TimeoutError(), FakeResponse(200, {})))
    # Burst 1 at qps 1 with time frozen: attempts 2 and 3 wait 1 s and 2 s for their tokens.
    assert taken == [1.0, 2.0]


def test_retries_are_logged_at_debug_with_verb_and_resource(caplog: pytest.LogCaptureFixture) -> None:
    client, _ = make_client()
    with caplog.at_level(logging.DEBUG, logger="netsched.kube.client"):
        client.call(
            "create", "pods/binding", Script(status_exc(503, "ServiceUnavailable"), FakeResponse(201, {}))
        )
    [record] = [r for r in caplog.records if "Retrying" in r.getMessage()]
    assert record.levelno == logging.DEBUG
    assert "verb=create resource=pods/binding attempt=1" in record.getMessage()


def test_open_stream_makes_one_attempt_and_returns_the_raw_response() -> None:
    client, _ = make_client()
    resp = FakeResponse(200)
    fn = Script(resp)
    assert client.open_stream("watch", "pods", fn, watch=True) is resp
    assert fn.calls[0][1]["_preload_content"] is False
    with pytest.raises(Transient):
        client.open_stream("watch", "pods", Script(ConnectionResetError(104, "reset")))


# --- configuration -----------------------------------------------------------


def write_kubeconfig(path: Path, server: str, token: str = "s3cr3t-token") -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(config))
    return path


def test_kubeconfig_is_loaded_and_master_overrides_its_server(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://from-file:6443")
    cfg = load_configuration(str(path))
    assert cfg.host == "https://from-file:6443"
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer s3cr3t-token"
    cfg = load_configuration(str(path), master="https://override:443/")
    assert cfg.host == "https://override:443"
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer s3cr3t-token"


def test_master_alone_needs_no_kubeconfig() -> None:
    assert load_configuration("", "http://127.0.0.1:8080").host == "http://127.0.0.1:8080"


def test_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError):
        load_configuration(str(tmp_path / "nope"))


def test_no_flags_outside_a_cluster_without_default_kubeconfig_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    # Where the kubeconfig goes: with --config, --kubeconfig is ignored (as kube-scheduler).
    with pytest.raises(
        KubeConfigError, match="set clientConnection.kubeconfig in the --config file.*--master"
    ):
        load_configuration()


def test_no_flags_falls_back_to_the_default_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = write_kubeconfig(tmp_path / "config", "https://default:6443")
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert load_configuration().host == "https://default:6443"


def test_build_api_client_sizes_the_pool_and_disables_urllib3_retries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://from-file:6443")
    with caplog.at_level(logging.DEBUG):
        client = build_api_client(str(path), qps=20, burst=30, pool_size=8, timeout=5)
    cfg = client.api_client.configuration
    assert cfg.connection_pool_maxsize == 8
    assert cfg.retries is False
    assert (client.limiter.qps, client.limiter.burst, client.timeout) == (20, 30, 5)
    assert client.host == "https://from-file:6443"
    assert "s3cr3t-token" not in caplog.text
    client.close()


def test_caller_bugs_propagate_unchanged() -> None:
    client, sleeps = make_client()
    with pytest.raises(TypeError):
        client.call("get", "nodes", Script(TypeError("unexpected keyword argument 'nmae'")))
    assert sleeps == []
