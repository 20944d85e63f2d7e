"""netsched.kube.credentials: the Authorization header read once, again only when it can change."""

from __future__ import annotations

from typing import Any

from netsched.clock import ManualClock
from netsched.kube.credentials import MAX_AGE_SECONDS, Credentials


class Configuration:
    """The two members of kubernetes.client.Configuration that Credentials reads."""

    def __init__(self, token: str, hook: bool) -> None:
        self.token = token
        self.calls = 0
        self.refresh_api_key_hook: Any = (lambda _cfg: None) if hook else None

    def auth_settings(self) -> dict[str, dict[str, str]]:
        self.calls += 1
        return {
            "BearerToken": {"in": "header", "key": "authorization", "value": f"Bearer {self.token}"},
            "Empty": {"in": "header", "key": "x-empty", "value": ""},
            "Query": {"in": "query", "key": "token", "value": "never-a-header"},
        }


def test_without_a_refresh_hook_the_headers_are_read_once() -> None:
    cfg = Configuration("t1", hook=False)
    creds = Credentials(cfg, clock=ManualClock())
    for _ in range(100):
        assert creds.headers() == {"authorization": "Bearer t1"}
    assert cfg.calls == 1
    assert not creds.refreshable
    assert creds.invalidate() is False  # nothing can change: sending again would not help
    creds.headers()
    assert cfg.calls == 1


def test_with_a_refresh_hook_the_headers_are_reused_for_max_age_then_read_again() -> None:
    cfg, clock = Configuration("t1", hook=True), ManualClock()
    creds = Credentials(cfg, clock=clock)
    assert creds.headers() == {"authorization": "Bearer t1"}
    cfg.token = "t2"  # the hook would now give the rotated token
    clock.step(MAX_AGE_SECONDS - 0.1)
    assert creds.headers() == {"authorization": "Bearer t1"} and cfg.calls == 1
    clock.step(0.2)
    assert creds.headers() == {"authorization": "Bearer t2"} and cfg.calls == 2


def test_invalidate_after_a_401_reads_afresh_at_once() -> None:
    cfg, clock = Configuration("t1", hook=True), ManualClock()
    creds = Credentials(cfg, clock=clock)
    creds.headers()
    cfg.token = "t2"
    assert creds.invalidate() is True
    assert creds.headers() == {"authorization": "Bearer t2"} and cfg.calls == 2
