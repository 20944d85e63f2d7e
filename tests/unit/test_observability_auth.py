"""DelegatingAuth's decisions and kube's cache lifetimes, on an injected clock."""

from __future__ import annotations

from typing import Any

from netsched.observability.auth import AuthSettings, DelegatingAuth, path_allowed


class Reviews:
    def __init__(self) -> None:
        self.tokens = {"good": {"username": "prom", "groups": ["g"]}}
        self.allowed: set[tuple[str, str, str]] = set()
        self.calls = {"token": 0, "sar": 0}

    def create_token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls["token"] += 1
        user = self.tokens.get(body["spec"]["token"])
        return {"status": {"authenticated": user is not None, "user": user or {}}}

    def create_subject_access_review(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls["sar"] += 1
        spec = body["spec"]
        attrs = spec["nonResourceAttributes"]
        return {"status": {"allowed": (spec["user"], attrs["path"], attrs["verb"]) in self.allowed}}


def test_cache_lifetimes_are_kubes_ten_seconds() -> None:
    now = [0.0]
    reviews = Reviews()
    auth = DelegatingAuth(reviews, reviews, AuthSettings(), clock=lambda: now[0])
    bearer = {"authorization": "Bearer good"}
    assert auth.check("GET", "/metrics", bearer).status == 403
    reviews.allowed.add(("prom", "/metrics", "get"))
    now[0] = 9.9
    assert auth.check("GET", "/metrics", bearer).status == 403  # denied answer still cached
    assert reviews.calls == {"token": 1, "sar": 1}
    now[0] = 10.1
    assert auth.check("GET", "/metrics", bearer).status == 200  # both expired: asked again
    assert reviews.calls == {"token": 2, "sar": 2}
    reviews.tokens.clear()
    assert auth.check("GET", "/metrics", bearer).status == 200  # token answer cached 10 s
    now[0] = 20.2
    assert auth.check("GET", "/metrics", bearer).status == 401


def test_without_review_clients_everything_but_allowed_paths_is_refused() -> None:
    auth = DelegatingAuth(None, None)
    assert auth.check("GET", "/healthz", {}).status == 200
    assert auth.check("GET", "/metrics", {"Authorization": "Bearer x"}).status == 401
    assert auth.check("GET", "/metrics", {}).reason.startswith("Unauthorized")


def test_review_failures_are_not_cached_and_not_leaked() -> None:
    class Broken(Reviews):
        def create_subject_access_review(self, body: dict[str, Any]) -> dict[str, Any]:
            raise ConnectionError("api server down")

    auth = DelegatingAuth(Reviews(), Broken())
    d = auth.check("GET", "/metrics", {"Authorization": "Bearer good"})
    assert d.status == 500 and "good" not in d.reason


def test_always_allow_paths_match_exactly_or_by_prefix() -> None:
    assert path_allowed("/healthz", ["/healthz"]) and not path_allowed("/healthz/x", ["/healthz"])
    assert path_allowed("/debug/pprof/profile", ["/debug/*"])
