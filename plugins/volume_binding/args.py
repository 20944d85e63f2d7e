"""VolumeBindingArgs: how long PreBind waits for the claims to become bound.

kube's VolumeBindingArgs also has `shape`, the scoring curve of the alpha
VolumeCapacityPriority feature; netsched runs with that gate off, so `shape`
is rejected exactly as kube rejects it with the gate disabled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsched.framework import Fields, PluginArgs, join

DEFAULT_BIND_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class VolumeBindingArgs(PluginArgs):
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS

    @classmethod
    def decode(cls, fields: Fields) -> VolumeBindingArgs:
        timeout = fields.int("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        if timeout < 0:
            fields.errs.invalid(
                join(fields.path, "bindTimeoutSeconds"),
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
            timeout = DEFAULT_BIND_TIMEOUT_SECONDS
        if fields.has("shape"):
            fields.errs.invalid(
                join(fields.path, "shape"),
                fields.any("shape"),
                "unsupported when VolumeCapacityPriority feature is disabled",
            )
        fields.finish()
        return cls(timeout)

    def encode(self) -> dict[str, Any]:
        return {"bindTimeoutSeconds": self.bind_timeout_seconds}
