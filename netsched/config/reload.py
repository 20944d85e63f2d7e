"""Hot reload of the --config file: watch it, load and validate a new version, decide if it may apply.

A tuning step (a score weight, a threshold, the Prometheus address,
percentageOfNodesToScore) should not cost a restart, with its leader change
and cold caches. `ConfigReloader` polls the file (and is poked on SIGHUP),
loads a changed file through the normal load_config/validate path and hands a
valid one to `apply` (netsched.app builds new Frameworks and swaps them into
the scheduler between two cycles). What the running process cannot change in
place is refused with one log line naming each field (`restart_required`);
an invalid file is refused with every error and its path. Either way the
running config stays as it was, whole.

Change detection survives every way a file gets replaced: edited in place,
renamed over, or a ConfigMap volume's atomic swap (config.yaml ->
..data/config.yaml, ..data -> ..2024_01_01_00_00_00.123; the swap replaces
the ..data symlink, so the path resolves to a new inode). os.stat follows the
symlinks, so (device, inode, mtime, size) of what the path resolves to
changes; then the content's SHA-256 decides whether anything really changed
(a touch, or a swap to identical content, is not a reload). A file caught
half-written fails validation and is refused; the finished write changes it
again and is then applied.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

from netsched.config.errors import ConfigError
from netsched.config.load import parse_yaml, refuse_empty
from netsched.config.types import SchedulerConfig

log = logging.getLogger(__name__)

SUCCESS = "success"
INVALID = "invalid"
RESTART_REQUIRED = "restart_required"
UNCHANGED = "unchanged"
RESULTS = (SUCCESS, INVALID, RESTART_REQUIRED, UNCHANGED)


class ReloadMetrics(Protocol):
    def config_reloaded(self, result: str) -> None: ...
    def config_active(self, digest: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ReloadResult:
    result: str  # one of RESULTS
    digest: str = ""
    problems: tuple[str, ...] = ()  # the errors or the restart-only fields


def digest(data: bytes) -> str:
    """The short hash the config_info metric carries (first 16 hex digits of SHA-256)."""
    return hashlib.sha256(data).hexdigest()[:16]


# ---------------------------------------------------------------- what needs a restart

_TOP_LEVEL = (
    ("parallelism", "parallelism"),
    ("pod_initial_backoff_seconds", "podInitialBackoffSeconds"),
    ("pod_max_backoff_seconds", "podMaxBackoffSeconds"),
    ("enable_profiling", "enableProfiling"),
    ("enable_contention_profiling", "enableContentionProfiling"),
    ("delay_cache_until_active", "delayCacheUntilActive"),
)


def restart_required_fields(old: SchedulerConfig, new: SchedulerConfig) -> list[str]:
    """The field paths that differ between the configs and cannot change without a restart.

    Profiles (added, removed, renamed or reordered), a profile's queue sort
    plugin or its args (one queue is shared by every profile), leader
    election, the client connection, and the top-level fields that size the
    process (parallelism: the binder pool) or its queue (backoffs).
    """
    out: list[str] = []
    old_names = [p.scheduler_name for p in old.profiles]
    new_names = [p.scheduler_name for p in new.profiles]
    if old_names != new_names:
        out.append(f"profiles ({', '.join(old_names)} -> {', '.join(new_names)})")
    else:
        for i, (a, b) in enumerate(zip(old.profiles, new.profiles, strict=True)):
            if a.names("queueSort") != b.names("queueSort"):
                out.append(f"profiles[{i}].plugins.queueSort")
            elif any(a.args(n) != b.args(n) for n in a.names("queueSort")):
                out.append(f"profiles[{i}].pluginConfig[{a.names('queueSort')[0]}]")
    for f in fields(old.leader_election):
        if getattr(old.leader_election, f.name) != getattr(new.leader_election, f.name):
            out.append(f"leaderElection.{_camel(f.name)}")
    for f in fields(old.client_connection):
        if getattr(old.client_connection, f.name) != getattr(new.client_connection, f.name):
            out.append(f"clientConnection.{_camel(f.name)}")
    for attr, key in _TOP_LEVEL:
        if getattr(old, attr) != getattr(new, attr):
            out.append(key)
    return out


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(w.capitalize() for w in rest)


# ---------------------------------------------------------------- the reloader


class ConfigReloader:
    """Polls `path`; `check()` reloads when the file changed, `reload()` (SIGHUP) always does.

    `load(text)` returns the validated config of the file's content or raises
    ConfigError (netsched.app passes its loader, which applies the command-line
    flags as at start-up); it gets the very bytes that were hashed, so what is
    applied is what the hash metric names;
    `apply(new)` makes it current and may raise ConfigError for a config that
    validated but cannot be built (a plugin refusing its args).
    """

    def __init__(
        self,
        path: str,
        current: SchedulerConfig,
        load: Callable[[str], SchedulerConfig],
        apply: Callable[[SchedulerConfig], None],
        *,
        metrics: ReloadMetrics | None = None,
    ) -> None:
        self.path = path
        self.current = current
        self._load = load
        self._apply = apply
        self._metrics = metrics
        self._lock = threading.Lock()
        self._signature = self._stat()
        data = self._read()
        self.digest = digest(data) if data is not None else ""
        self._seen = self.digest  # last content looked at, applied or not
        if metrics is not None and self.digest:
            metrics.config_active(self.digest)

    def check(self) -> ReloadResult | None:
        """Reload if the file changed since the last look; None when it did not."""
        signature = self._stat()
        if signature == self._signature:
            return None
        self._signature = signature
        data = self._read()
        if data is None or digest(data) == self._seen:
            return None
        return self._reload(data, "file changed")

    def reload(self, why: str = "SIGHUP") -> ReloadResult:
        """Load the file now, changed or not (an unchanged file is reported as such)."""
        self._signature = self._stat()
        data = self._read()
        if data is None:
            log.error("Config reload refused: file unreadable path=%s trigger=%s", self.path, why)
            return self._count(ReloadResult(INVALID, problems=(f"{self.path}: unreadable",)))
        return self._reload(data, why)

    def run(self, stop: threading.Event, interval: float) -> None:
        """Poll every `interval` seconds until stop is set (a daemon thread's target)."""
        while not stop.wait(interval):
            try:
                self.check()
            except Exception:  # the watcher must outlive any surprise
                log.exception("Config watch failed path=%s", self.path)

    # ------------------------------------------------------------ internals

    def _reload(self, data: bytes, why: str) -> ReloadResult:
        with self._lock:
            new_digest = digest(data)
            self._seen = new_digest
            if new_digest == self.digest:
                log.info("Config reload: content unchanged path=%s trigger=%s", self.path, why)
                return self._count(ReloadResult(UNCHANGED, new_digest))
            try:
                text = data.decode("utf-8", errors="replace")
                refuse_empty(parse_yaml(text, self.path), self.path)
                new = self._load(text)
            except ConfigError as e:
                problems = tuple(str(err) for err in e.errors)
                log.error(
                    "Config reload refused: invalid configuration; the running one is kept "
                    "path=%s errors=%d\n  %s",
                    self.path,
                    len(problems),
                    "\n  ".join(problems),
                )
                return self._count(ReloadResult(INVALID, new_digest, problems))
            restart = restart_required_fields(self.current, new)
            if restart:
                log.error(
                    "Config reload refused: these fields change only with a restart; the running "
                    "config is kept path=%s fields=%s",
                    self.path,
                    ", ".join(restart),
                )
                return self._count(ReloadResult(RESTART_REQUIRED, new_digest, tuple(restart)))
            try:
                self._apply(new)
            except ConfigError as e:
                problems = tuple(str(err) for err in e.errors)
                log.error(
                    "Config reload refused: the new profiles cannot be built path=%s errors=%s",
                    self.path,
                    "; ".join(problems),
                )
                return self._count(ReloadResult(INVALID, new_digest, problems))
            self.current = new
            self.digest = new_digest
            if self._metrics is not None:
                self._metrics.config_active(new_digest)
            log.info("Config reloaded path=%s hash=%s trigger=%s", self.path, new_digest, why)
            return self._count(ReloadResult(SUCCESS, new_digest))

    def _count(self, result: ReloadResult) -> ReloadResult:
        if self._metrics is not None:
            self._metrics.config_reloaded(result.result)
        return result

    def _stat(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path)  # follows the ConfigMap's symlinks
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)

    def _read(self) -> bytes | None:
        try:
            return Path(self.path).read_bytes()
        except OSError:
            return None
