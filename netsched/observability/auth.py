"""Delegated authentication and authorization for the scheduler's own endpoints.

As kube-scheduler (k8s.io/apiserver's delegating authn/authz): the caller's
bearer token is checked with a TokenReview, and what it may do with a
SubjectAccessReview on the non-resource URL (path + lowercased HTTP method as
verb), both asked of the API server and cached briefly so a scrape every few
seconds costs no API call: TokenReview answers for 10 s (success and failure),
SubjectAccessReview "allowed" for 10 s and "denied" for 10 s (kube's
--authentication-token-webhook-cache-ttl, --authorization-webhook-cache-
authorized-ttl / -unauthorized-ttl defaults).

Paths in --authorization-always-allow-paths (/healthz, /readyz, /livez; a
trailing "*" is a prefix) are served without either check, so kubelet probes
need no token. Members of system:masters are allowed without a review (kube's
delegating authorizer does the same).

Deliberate difference: kube maps a request without credentials to
system:anonymous and lets the SubjectAccessReview decide (usually 403);
netsched has no anonymous user: no token is 401.

Tokens are never logged and never kept: the caches are keyed by SHA-256.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
ALWAYS_ALLOW_GROUPS = ("system:masters",)
DEFAULT_TTL = 10.0
CACHE_SIZE = 1024

JsonObj = dict[str, Any]
K = TypeVar("K")
V = TypeVar("V")


class ReviewClient(Protocol):
    """Creates review objects on the API server (netsched.kube.reviews.KubeReviews); raises on failure."""

    def create_token_review(self, body: JsonObj) -> JsonObj: ...
    def create_subject_access_review(self, body: JsonObj) -> JsonObj: ...


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class AuthDecision:
    """HTTP status to answer with when not 200, and why (the reason goes into the body)."""

    status: int  # 200 allowed, 401 unauthenticated, 403 forbidden, 500 review failed
    reason: str = ""
    user: UserInfo | None = None

    @property
    def allowed(self) -> bool:
        return self.status == 200


class TTLCache(Generic[K, V]):
    """A small thread-safe map whose entries expire after the TTL given when each was put."""

    def __init__(self, clock: Callable[[], float], size: int = CACHE_SIZE) -> None:
        self._clock = clock
        self._size = size
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            if item[0] <= self._clock():
                del self._items[key]
                return None
            return item[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            self._items[key] = (self._clock() + ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


def path_allowed(path: str, patterns: Iterable[str]) -> bool:
    """kube's always-allow matching: exact, or a prefix when the pattern ends with "*"."""
    for p in patterns:
        if p.endswith("*") and path.startswith(p[:-1]):
            return True
        if path == p:
            return True
    return False


@dataclass
class AuthSettings:
    always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS
    token_ttl: float = DEFAULT_TTL
    allowed_ttl: float = DEFAULT_TTL
    denied_ttl: float = DEFAULT_TTL
    always_allow_groups: Sequence[str] = field(default_factory=lambda: list(ALWAYS_ALLOW_GROUPS))


class DelegatingAuth:
    """check(method, path, headers) -> AuthDecision; `authn`/`authz` None: every token refused /
    every request forbidden (kube's behaviour without an authentication/authorization kubeconfig)."""

    def __init__(
        self,
        authn: ReviewClient | None,
        authz: ReviewClient | None,
        settings: AuthSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.authn = authn
        self.authz = authz
        self.settings = settings or AuthSettings()
        self._tokens: TTLCache[str, UserInfo] = TTLCache(clock)
        self._refused: TTLCache[str, bool] = TTLCache(clock)
        self._access: TTLCache[tuple[UserInfo, str, str], tuple[bool, str]] = TTLCache(clock)

    def check(self, method: str, path: str, headers: Mapping[str, str]) -> AuthDecision:
        if path_allowed(path, self.settings.always_allow_paths):
            return AuthDecision(200)
        header = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        token = bearer_token(header)
        if not token:
            return AuthDecision(401, "Unauthorized: a bearer token is required")
        try:
            user = self.authenticate(token)
        except Exception as e:
            log.warning("TokenReview failed err=%s", type(e).__name__)
            return AuthDecision(401, "Unauthorized")
        if user is None:
            return AuthDecision(401, "Unauthorized")
        verb = method.lower()
        try:
            allowed, reason = self.authorize(user, path, verb)
        except Exception as e:
            log.warning(
                "SubjectAccessReview failed user=%s path=%s err=%s", user.name, path, type(e).__name__
            )
            return AuthDecision(500, "Internal error: could not authorize the request", user)
        if allowed:
            return AuthDecision(200, user=user)
        why = f": {reason}" if reason else ""
        return AuthDecision(403, f'forbidden: User "{user.name}" cannot {verb} path "{path}"{why}', user)

    def authenticate(self, token: str) -> UserInfo | None:
        """The user a token belongs to (None: not authenticated); cached for token_ttl."""
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._tokens.get(key)
        if cached is not None:
            return cached
        if self._refused.get(key):
            return None
        if self.authn is None:
            return None
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = self.authn.create_token_review(body).get("status") or {}
        user = _user(status.get("user") or {}) if status.get("authenticated") else None
        if user is None:
            self._refused.put(key, True, self.settings.token_ttl)  # kube caches failures as long
        else:
            self._tokens.put(key, user, self.settings.token_ttl)
        return user

    def authorize(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        if any(g in self.settings.always_allow_groups for g in user.groups):
            return True, ""
        key = (user, path, verb)
        cached = self._access.get(key)
        if cached is not None:
            return cached
        if self.authz is None:
            return False, "no authorization-kubeconfig: every request is forbidden"
        spec: JsonObj = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        status = self.authz.create_subject_access_review(body).get("status") or {}
        allowed = bool(status.get("allowed")) and not status.get("denied")
        answer = (allowed, str(status.get("reason") or ""))
        self._access.put(key, answer, self.settings.allowed_ttl if allowed else self.settings.denied_ttl)
        return answer


def bearer_token(header: str) -> str:
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _user(raw: Mapping[str, Any]) -> UserInfo | None:
    name = str(raw.get("username") or "")
    if not name:
        return None
    extra = raw.get("extra") or {}
    return UserInfo(
        name=name,
        uid=str(raw.get("uid") or ""),
        groups=tuple(str(g) for g in raw.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())),
    )
