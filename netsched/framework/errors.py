"""The framework's faults: exceptions, where outcomes are Status values.

A profile that cannot schedule anything stops start-up (FrameworkBuildError);
args of the wrong type are a wiring bug (PluginArgsError); a plugin that
raises or returns Error is wrapped so the runtime can name the plugin and
retry the pod with backoff (PluginError, PluginFault).
"""

from __future__ import annotations

from netsched.framework.status import Status


class PluginArgsError(TypeError):
    """A plugin was given args of the wrong type: a wiring bug, never silently defaulted."""


class FrameworkBuildError(ValueError):
    """A profile that cannot schedule anything; raised at start-up."""


class PluginFault(Exception):
    """A plugin raised or returned Error; the pod is retried with backoff."""

    def __init__(self, status: Status) -> None:
        super().__init__(str(status))
        self.status = status


class PluginError(Exception):
    """A plugin fault; the runtime turns it into an Error status naming the plugin."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause
