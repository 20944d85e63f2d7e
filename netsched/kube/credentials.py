"""The credentials netsched's own requests carry: built once, rebuilt only when they can change.

The kubernetes package computes them per request (`Configuration.auth_settings()`). With a
bearer token (in cluster, or most kubeconfigs) it installs a refresh hook that re-sets the
configuration's host on every call, and the host's setter scans the environment for proxy
settings: 8-53 µs a request, growing with the environment (a pod gets several variables per
Service in its namespace), about a third of a binding's client CPU.

Here the headers come from that same call, and are kept:
- for good when the configuration has no refresh hook (a static token in code, client
  certificates, no auth): nothing can change them;
- otherwise for `max_age` seconds (the in-cluster loader re-reads the token file once a
  minute; an exec plugin's or OIDC token carries its expiry, which the hook checks), and
  no longer once a request is answered 401: the caller invalidates and sends again once with
  headers read afresh (a token that expired or was rotated meanwhile).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from netsched.clock import Clock, SystemClock

# How long headers from a refreshable source are reused; a rotated token is picked up within it
# (or at once, on a 401).
MAX_AGE_SECONDS = 10.0


class Credentials:
    """Authorization (and any other header-borne credential) for requests to one cluster."""

    def __init__(
        self, configuration: Any, *, clock: Clock | None = None, max_age: float = MAX_AGE_SECONDS
    ) -> None:
        self._cfg = configuration
        self._clock = clock or SystemClock()
        self._max_age = max_age
        self._lock = threading.Lock()
        self._headers: dict[str, str] = {}
        self._expires = float("-inf")  # read on first use

    @property
    def refreshable(self) -> bool:
        """Whether the headers can change at all (the kubernetes configuration has a refresh hook)."""
        return self._cfg.refresh_api_key_hook is not None

    def headers(self) -> Mapping[str, str]:
        """The credential headers to send now (never modify the mapping)."""
        if self._clock.now() < self._expires:
            return self._headers
        with self._lock:
            if self._clock.now() >= self._expires:
                fresh: dict[str, str] = {}
                for auth in self._cfg.auth_settings().values():  # runs the refresh hook, if any
                    if auth.get("in") == "header" and auth.get("value"):
                        fresh[str(auth["key"])] = str(auth["value"])
                self._headers = fresh
                self._expires = self._clock.now() + self._max_age if self.refreshable else float("inf")
            return self._headers

    def invalidate(self) -> bool:
        """The server refused these credentials (401): read them afresh on next use. True when
        that can change anything (a refreshable source), so sending again is worth it."""
        if not self.refreshable:
            return False
        with self._lock:
            self._expires = float("-inf")
        return True
