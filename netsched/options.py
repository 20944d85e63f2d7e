"""kube-scheduler's options: the config file, the flags over it, and what each flag means here.

As kube's cmd/kube-scheduler/app/options: the config comes from `--config`
(or netsched's built-in default: one profile named netsched), the flags are
applied over it with kube's precedence (`apply_flags`), the result is
validated again, and flags that are accepted but ignored, deprecated or not
applied are logged once at start-up (`warn_about_flags`). The argparse
parser itself is netsched.cli's; netsched.serve runs what this module reads.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from netsched.app import AppOptions
from netsched.config import ConfigError, SchedulerConfig, load_config, validate_config
from netsched.config.duration import format_duration
from netsched.framework.registry import Registry
from netsched.observability.server import SecureServing
from netsched.version import KUBE_BASELINE

log = logging.getLogger(__name__)

NETSCHED_SCHEDULER_NAME = "netsched"
# Used when no --config is given: one profile named netsched with kube's default plugins.
DEFAULT_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
"""

# Flags that kube-scheduler marks DEPRECATED and ignores when --config is given
# (cmd/kube-scheduler/app/options/deprecated.go, ApplyTo); dest -> flag.
DEPRECATED_FLAGS = {
    "kubeconfig": "--kubeconfig",
    "kube_api_qps": "--kube-api-qps",
    "kube_api_burst": "--kube-api-burst",
    "kube_api_content_type": "--kube-api-content-type",
    "profiling": "--profiling",
    "contention_profiling": "--contention-profiling",
}
# Where each of those goes in the config file instead (named in the warning).
DEPRECATED_FLAG_FIELDS = {
    "--kubeconfig": "clientConnection.kubeconfig",
    "--kube-api-qps": "clientConnection.qps",
    "--kube-api-burst": "clientConnection.burst",
    "--kube-api-content-type": "clientConnection.contentType",
    "--profiling": "enableProfiling",
    "--contention-profiling": "enableContentionProfiling",
}
# Gates of kube's KUBE_BASELINE about scheduling that netsched knows: accepted, so kube command
# lines keep working; APPLIED_FEATURE_GATES change behaviour, the others keep the baseline's
# default whatever value is given.
APPLIED_FEATURE_GATES = frozenset({"SchedulerQueueingHints"})
KNOWN_FEATURE_GATES = frozenset(
    {
        "SchedulerQueueingHints",
        "PodSchedulingReadiness",
        "MatchLabelKeysInPodAffinity",
        "MatchLabelKeysInPodTopologySpread",
        "NodeInclusionPolicyInPodTopologySpread",
        "MinDomainsInPodTopologySpread",
        "PodDisruptionConditions",
        "DynamicResourceAllocation",
        "VolumeCapacityPriority",
        "InPlacePodVerticalScaling",
        "PodLevelResources",
        "AllAlpha",
        "AllBeta",
    }
)


def load(path: str, registry: Registry) -> SchedulerConfig:
    """The validated config from a file (or the built-in default when path is empty)."""
    return load_config(
        path if path else DEFAULT_CONFIG, registry, default_scheduler_name=NETSCHED_SCHEDULER_NAME
    )


def apply_flags(cfg: SchedulerConfig, opts: argparse.Namespace) -> list[str]:
    """Command-line flags over the config, with kube-scheduler's precedence; returns the flags ignored.

    As kube's Options.ApplyTo: leader-election flags that were given override the
    file's leaderElection either way; the deprecated flags that map to config
    fields (--kubeconfig, --kube-api-qps/-burst/-content-type, --profiling,
    --contention-profiling) apply only without --config and are ignored (the
    caller warns) when a config file is given.
    """
    le = cfg.leader_election
    for dest, attr in (
        ("leader_elect", "leader_elect"),
        ("leader_elect_lease_duration", "lease_duration"),
        ("leader_elect_renew_deadline", "renew_deadline"),
        ("leader_elect_retry_period", "retry_period"),
        ("leader_elect_resource_lock", "resource_lock"),
        ("leader_elect_resource_name", "resource_name"),
        ("leader_elect_resource_namespace", "resource_namespace"),
    ):
        value = getattr(opts, dest, None)
        if value is not None:
            setattr(le, attr, value)
    if getattr(opts, "config", ""):
        return ignored_flags(opts)
    cc = cfg.client_connection
    if opts.kubeconfig is not None:
        cc.kubeconfig = opts.kubeconfig
    if opts.kube_api_qps is not None:
        cc.qps = opts.kube_api_qps
    if opts.kube_api_burst is not None:
        cc.burst = opts.kube_api_burst
    if opts.kube_api_content_type is not None:
        cc.content_type = opts.kube_api_content_type
    if opts.profiling is not None:
        cfg.enable_profiling = opts.profiling
        cfg.enable_contention_profiling = opts.profiling
    if opts.contention_profiling is not None:
        cfg.enable_contention_profiling = opts.contention_profiling
    return []


def ignored_flags(opts: argparse.Namespace) -> list[str]:
    """The deprecated flags given that --config makes kube-scheduler (and netsched) ignore."""
    if not getattr(opts, "config", ""):
        return []
    return [flag for dest, flag in DEPRECATED_FLAGS.items() if getattr(opts, dest, None) is not None]


def print_config_error(err: ConfigError, source: str) -> None:
    print(f"netsched: invalid configuration in {source or 'the built-in default'}:", file=sys.stderr)
    for e in err.errors:
        print(f"  {e}", file=sys.stderr)


def load_with_flags(source: str, registry: Registry, opts: argparse.Namespace) -> SchedulerConfig:
    """The config from a file (or YAML text, on reload) with the flags applied, validated again."""
    cfg = load(source, registry)
    apply_flags(cfg, opts)
    errs = validate_config(cfg)
    if errs:
        raise ConfigError(errs)
    return cfg


def warn_about_flags(opts: argparse.Namespace, cfg: SchedulerConfig, ignored: Sequence[str]) -> None:
    for flag in ignored:
        log.warning(
            "Flag ignored because --config is given (as kube-scheduler); set the field in the file "
            "flag=%s field=%s",
            flag,
            DEPRECATED_FLAG_FIELDS[flag],
        )
    if opts.port == 0:
        log.warning("--port is deprecated and has no effect (insecure serving was removed)")
    for gate, value in sorted(opts.feature_gates.items()):
        if gate in APPLIED_FEATURE_GATES:
            log.info("Feature gate applied gate=%s value=%s", gate, value)
        elif gate in KNOWN_FEATURE_GATES:
            log.info(
                "Feature gate accepted; netsched keeps the kube baseline's default gate=%s value=%s kubeBaseline=%s",
                gate,
                value,
                KUBE_BASELINE,
            )
        else:
            log.warning("Unknown feature gate; ignored gate=%s value=%s", gate, value)
    if opts.log_flush_frequency is not None:
        log.warning(
            "--log-flush-frequency has no effect: every log line is flushed when it is written flushFrequency=%s",
            format_duration(opts.log_flush_frequency),
        )
    if opts.tls_cipher_suites:
        log.warning("--tls-cipher-suites is not applied: OpenSSL's defaults for the TLS version are used")
    if cfg.client_connection.content_type != "application/json":
        log.info(
            "Content type accepted; netsched sends and reads JSON contentType=%s",
            cfg.client_connection.content_type,
        )


def app_options(opts: argparse.Namespace) -> AppOptions:
    """What the flags ask of the running scheduler (serving, dry run, explain, feature gates)."""
    return AppOptions(
        metrics_bind_address=opts.metrics_bind_address,
        secure=secure_serving(opts),
        dry_run=opts.dry_run,
        shadow_scheduler_name=opts.shadow_scheduler_name,
        shadow_annotate=opts.shadow_annotate,
        explain_annotations=opts.explain_annotations,
        queueing_hints=opts.feature_gates.get("SchedulerQueueingHints", True),
    )


def secure_serving(opts: argparse.Namespace) -> SecureServing | None:
    """kube-scheduler's secure serving and delegating auth flags; None with --secure-port=0."""
    if opts.secure_port == 0:
        return None
    return SecureServing(
        bind_address=opts.bind_address,
        port=opts.secure_port,
        cert_file=opts.tls_cert_file,
        key_file=opts.tls_private_key_file,
        cert_dir=opts.cert_dir,
        min_tls_version=opts.tls_min_version,
        authentication_kubeconfig=opts.authentication_kubeconfig,
        authorization_kubeconfig=opts.authorization_kubeconfig,
        always_allow_paths=tuple(opts.authorization_always_allow_paths),
        token_cache_ttl=opts.authentication_token_webhook_cache_ttl,
        authorized_cache_ttl=opts.authorization_webhook_cache_authorized_ttl,
        unauthorized_cache_ttl=opts.authorization_webhook_cache_unauthorized_ttl,
    )
