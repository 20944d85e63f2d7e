"""Checks on a decoded SchedulerConfig, with kube's rules, paths and wording.

Every rule of kube's validation.go and component-base's leader-election /
client-connection validation that applies to netsched, plus the profile
checks kube makes only when it builds a framework (one queue sort plugin, at
least one bind plugin, usable weights): failing those at load
time, with a path, beats failing at start-up.  Works on the typed config, so
the CLI can call it again after applying its flag overrides.
"""

from __future__ import annotations

from netsched.config.duration import format_duration
from netsched.config.types import MAX_WEIGHT, LeaderElectionConfig, Profile, SchedulerConfig
from netsched.framework.fields import ErrorList

SUPPORTED_RESOURCE_LOCKS = ("leases",)


def validate_config(cfg: SchedulerConfig) -> ErrorList:
    errs = ErrorList()
    if cfg.client_connection.burst < 0:
        errs.invalid("clientConnection.burst", cfg.client_connection.burst, "must be non-negative")
    _leader_election(cfg.leader_election, errs)
    if cfg.parallelism <= 0:
        errs.invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero")
    _profiles(cfg.profiles, errs)
    _percentage("percentageOfNodesToScore", cfg.percentage_of_nodes_to_score, errs)
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.invalid("podInitialBackoffSeconds", cfg.pod_initial_backoff_seconds, "must be greater than 0")
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errs.invalid(
            "podMaxBackoffSeconds",
            cfg.pod_max_backoff_seconds,
            "must be greater than or equal to PodInitialBackoffSeconds",
        )
    return errs


def _leader_election(le: LeaderElectionConfig, errs: ErrorList) -> None:
    if not le.leader_elect:
        return  # kube checks nothing else when leader election is off
    path = "leaderElection"
    for key, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            errs.invalid(f"{path}.{key}", format_duration(value), "must be greater than zero")
    if le.lease_duration <= le.renew_deadline:
        errs.invalid(
            f"{path}.leaseDuration",
            format_duration(le.renew_deadline),
            "LeaseDuration must be greater than RenewDeadline",
        )
    # client-go refuses to start otherwise (renewals must fit retries with jitter 1.2).
    if le.retry_period > 0 and le.renew_deadline <= 1.2 * le.retry_period:
        errs.invalid(
            f"{path}.renewDeadline",
            format_duration(le.renew_deadline),
            f"must be greater than 1.2 x retryPeriod ({format_duration(le.retry_period)})",
        )
    if le.resource_lock not in SUPPORTED_RESOURCE_LOCKS:
        errs.unsupported(f"{path}.resourceLock", le.resource_lock, SUPPORTED_RESOURCE_LOCKS)
    if not le.resource_name:
        errs.required(f"{path}.resourceName", "resourceName is required")
    if not le.resource_namespace:
        errs.required(f"{path}.resourceNamespace", "resourceNamespace is required")


def _percentage(path: str, value: int | None, errs: ErrorList) -> None:
    if value is not None and not 0 <= value <= 100:
        errs.invalid(path, value, "not in valid range [0-100]")


def _profiles(profiles: list[Profile], errs: ErrorList) -> None:
    if not profiles:
        errs.required("profiles")
        return
    first_index: dict[str, int] = {}
    for i, p in enumerate(profiles):
        path = f"profiles[{i}]"
        if not p.scheduler_name:
            errs.required(f"{path}.schedulerName")
        elif p.scheduler_name in first_index:
            errs.duplicate(f"{path}.schedulerName", p.scheduler_name)
        else:
            first_index[p.scheduler_name] = i
        _percentage(f"{path}.percentageOfNodesToScore", p.percentage_of_nodes_to_score, errs)
        _profile_plugins(path, p, errs)
    _common_queue_sort(profiles, errs)


def _profile_plugins(path: str, p: Profile, errs: ErrorList) -> None:
    queue_sort = p.names("queueSort")
    if not queue_sort:
        errs.required(f"{path}.plugins.queueSort", "at least one queue sort plugin is needed")
    elif len(queue_sort) > 1:
        listed = ", ".join(f'"{n}"' for n in queue_sort)
        errs.invalid(
            f"{path}.plugins.queueSort",
            len(queue_sort),
            f"only one queue sort plugin can be enabled (got {listed})",
        )
    if not p.names("bind"):
        errs.required(f"{path}.plugins.bind", "at least one bind plugin is needed")
    # Weights are int32 in kube, so kube's "total score could overflow" check
    # (sum of weight x 100 > MaxInt64) cannot trip below ~40 million plugins.
    for ref in p.plugins.get("score", []):
        if not 0 < ref.weight <= MAX_WEIGHT:
            errs.invalid(
                f"{path}.plugins.score", ref.weight, f"weight of {ref.name} must be in [1, {MAX_WEIGHT}]"
            )


def _common_queue_sort(profiles: list[Profile], errs: ErrorList) -> None:
    """All profiles feed one queue, so they must order it the same way (kube's rule)."""
    first = profiles[0]
    if len(first.names("queueSort")) != 1:
        return
    name = first.names("queueSort")[0]
    for i, p in enumerate(profiles[1:], start=1):
        mine = p.names("queueSort")
        if len(mine) != 1:
            continue  # already reported for this profile
        if mine[0] != name:
            errs.invalid(
                f"profiles[{i}].plugins.queueSort",
                mine[0],
                f'must be the same for all profiles (profiles[0] uses "{name}")',
            )
        elif p.args(name) != first.args(name):
            errs.invalid(
                f"profiles[{i}].pluginConfig",
                name,
                "queue sort plugin args must be the same for all profiles",
            )
