"""The KubeSchedulerConfiguration as netsched holds it after loading.

Field defaults here are kube's v1 defaults (pkg/scheduler/apis/config/v1),
so a default lives next to its field.  Instances come out of `load_config`
fully defaulted and validated; the runtime reads them and never looks at YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from netsched.framework.extension_points import EXTENSION_POINTS as _FRAMEWORK_POINTS

if TYPE_CHECKING:
    from netsched.framework.extension_points import PluginArgs

API_GROUP = "kubescheduler.config.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
# Read as v1 with a deprecation warning; kube removed them in 1.28 / 1.29.
DEPRECATED_API_VERSIONS = (f"{API_GROUP}/v1beta2", f"{API_GROUP}/v1beta3")
KIND = "KubeSchedulerConfiguration"

DEFAULT_SCHEDULER_NAME = "default-scheduler"
KUBE_LEASE_NAME = "kube-scheduler"  # the default scheduler's lease: never take it by default
NETSCHED_LEASE_NAME = "netsched"

MULTI_POINT = "multiPoint"
# YAML keys of the extension points, in framework order.
EXTENSION_POINTS: tuple[str, ...] = tuple(_FRAMEWORK_POINTS)
PLUGIN_SET_KEYS: tuple[str, ...] = (MULTI_POINT, *EXTENSION_POINTS)

MAX_WEIGHT = 2**31 - 1  # weights are int32 in kube's API


@dataclass(slots=True, frozen=True)
class PluginRef:
    """A plugin name with its score weight.

    In a PluginSet the weight is as written, 0 meaning unset (after loading,
    score plugins under multiPoint and score carry 1 instead of 0, kube's
    rule).  In `Profile.plugins` it is resolved: the effective weight for the
    score point, 0 elsewhere.
    """

    name: str
    weight: int = 0


@dataclass(slots=True)
class PluginSet:
    """One `plugins.<point>` block: enabled entries (in order) and disabled names ("*" = all)."""

    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.enabled or self.disabled)


@dataclass(slots=True)
class Profile:
    """One scheduling profile (one schedulerName).

    `plugins` is what the runtime runs: for every extension point the enabled
    plugins in order, after defaults, multiPoint expansion and
    enabled/disabled have been applied.  `plugin_sets` is the same profile as
    kube's defaulted config shows it (default multiPoint set merged with the
    user's blocks) and is what `dump_config` writes.
    """

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # None: use the top-level value; 0: adaptive for this profile.
    percentage_of_nodes_to_score: int | None = None
    plugins: dict[str, list[PluginRef]] = field(default_factory=dict)
    plugin_config: dict[str, PluginArgs] = field(default_factory=dict)
    plugin_sets: dict[str, PluginSet] = field(default_factory=dict)

    def names(self, point: str) -> list[str]:
        """Enabled plugin names at an extension point, in run order."""
        return [p.name for p in self.plugins.get(point, [])]

    def score_weights(self) -> dict[str, int]:
        return {p.name: p.weight for p in self.plugins.get("score", [])}

    def args(self, name: str) -> PluginArgs | None:
        return self.plugin_config.get(name)


@dataclass(slots=True)
class LeaderElectionConfig:
    leader_elect: bool = True
    lease_duration: float = 15.0  # seconds
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    # Empty until loading derives it from the first profile (see defaults.default_lease_name).
    resource_name: str = ""
    resource_namespace: str = "kube-system"


@dataclass(slots=True)
class ClientConnection:
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/json"
    qps: float = 50.0  # negative: no client-side rate limit (client-go semantics)
    burst: int = 100


@dataclass(slots=True)
class SchedulerConfig:
    parallelism: int = 16
    # None (written as 0, kube's default): adaptive, max(5, 50 - nodes/125) percent.
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    profiles: list[Profile] = field(default_factory=list)
    # Accepted so kube's own written configs load; the app decides what it honours.
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    delay_cache_until_active: bool = False

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None
