"""CoschedulingArgs: scheduler-plugins' CoschedulingArgs, same names and defaults.

`permitWaitingTimeSeconds` is how long members wait at Permit for the rest of
their gang when the PodGroup sets no `scheduleTimeoutSeconds`;
`podGroupBackoffSeconds` is how long a gang that just failed is turned away at
PreFilter (0: not at all).  `deniedPGExpirationTimeSeconds` is the older
(v1beta2) name of the latter and is accepted as its alias.
"""

from __future__ import annotations

from dataclasses import dataclass

from netsched.framework import Fields, PluginArgs, join


@dataclass(frozen=True, slots=True)
class CoschedulingArgs(PluginArgs):
    permit_waiting_time_seconds: int = 60
    pod_group_backoff_seconds: int = 0

    @classmethod
    def decode(cls, fields: Fields) -> CoschedulingArgs:
        wait = fields.int("permitWaitingTimeSeconds", 60, min=0)
        backoff = fields.int("podGroupBackoffSeconds", 0, min=0)
        denied = fields.int("deniedPGExpirationTimeSeconds", 0, min=0)
        if fields.has("deniedPGExpirationTimeSeconds"):
            if fields.has("podGroupBackoffSeconds") and backoff != denied:
                fields.errs.invalid(
                    join(fields.path, "deniedPGExpirationTimeSeconds"),
                    denied,
                    "is the old name of podGroupBackoffSeconds: set one of them",
                )
            backoff = backoff if fields.has("podGroupBackoffSeconds") else denied
        # Older releases' client settings: the scheduler's own connection is used instead.
        fields.any("kubeConfigPath")
        fields.any("kubeMaster")
        fields.finish()
        return cls(wait, backoff)

    def encode(self) -> dict[str, object]:
        return {
            "permitWaitingTimeSeconds": self.permit_waiting_time_seconds,
            "podGroupBackoffSeconds": self.pod_group_backoff_seconds,
        }
