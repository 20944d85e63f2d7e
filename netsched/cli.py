"""Command line, shaped like kube-scheduler's.

    netsched --config FILE [--master URL] [--leader-elect=false] [--authentication-kubeconfig K] [-v 2]
    netsched --config FILE --write-config-to OUT      # the fully defaulted config, then exit
    netsched demo                                       # in-process fake cluster, no Kubernetes needed
    netsched simulate [SCENARIO]                        # what a config would do (see simulate --help)

Exit status: 0 on a clean stop (SIGTERM/SIGINT), 1 on a bad configuration
(every problem listed with its field path), 2 on bad flags.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from netsched.config.duration import DurationError, parse_duration
from netsched.framework.interfaces import PluginFactory


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except DurationError as e:
        raise argparse.ArgumentTypeError(f"expected a duration such as 15s, got {text!r}: {e}") from e


def _paths(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _gates(text: str) -> dict[str, bool]:
    """kube's mapStringBool: "A=true,B=false"."""
    out: dict[str, bool] = {}
    for item in _paths(text):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"expected NAME=true|false, got {item!r}")
        out[key.strip()] = _bool(value)
    return out


def _flag_bool(p: argparse._ActionsContainer, name: str, help: str) -> None:
    # --flag, --flag=true, --flag=false as in pflag; default None = "not given".
    p.add_argument(name, type=_bool, nargs="?", const=True, default=None, help=help)


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netsched",
        description="A Kubernetes scheduler that places pods by measured node load as well as requests.",
        epilog="Subcommands: 'netsched demo' (no cluster needed), 'netsched simulate --help'. "
        "Flags are kube-scheduler's; see README.md (Flags) for what each does in netsched.",
    )
    misc = p.add_argument_group("misc")
    misc.add_argument(
        "--config",
        default="",
        help="KubeSchedulerConfiguration file (default: one 'netsched' profile); watched and "
        "reloaded on change or SIGHUP",
    )
    misc.add_argument("--master", default="", help="API server URL; overrides the kubeconfig's server")
    misc.add_argument(
        "--write-config-to", default="", help="write the defaulted configuration to this file and exit"
    )
    misc.add_argument(
        "--config-reload-interval",
        type=_duration,
        default=2.0,
        help="how often the --config file is checked for changes (netsched; 0 disables the watch, "
        "SIGHUP still reloads)",
    )

    dep = p.add_argument_group("deprecated (ignored when --config is given, as in kube-scheduler)")
    dep.add_argument("--kubeconfig", default=None, help="kubeconfig file (clientConnection.kubeconfig)")
    dep.add_argument("--kube-api-qps", type=float, default=None, help="client QPS (clientConnection.qps)")
    dep.add_argument("--kube-api-burst", type=int, default=None, help="client burst (clientConnection.burst)")
    dep.add_argument(
        "--kube-api-content-type",
        default=None,
        help="accepted for compatibility: netsched always sends and reads JSON",
    )
    _flag_bool(dep, "--profiling", "enableProfiling: /debug/pprof/profile (CPU samples) behind authorization")
    _flag_bool(dep, "--contention-profiling", "enableContentionProfiling: accepted, no effect in netsched")
    dep.add_argument(
        "--port",
        type=int,
        default=None,
        help="DEPRECATED: insecure serving was removed; only 0 is accepted (see --metrics-bind-address)",
    )

    le = p.add_argument_group("leader election (override leaderElection.* even with --config)")
    _flag_bool(le, "--leader-elect", "true/false: campaign for the lease before scheduling")
    for flag, what in (
        ("--leader-elect-lease-duration", "leaseDuration"),
        ("--leader-elect-renew-deadline", "renewDeadline"),
        ("--leader-elect-retry-period", "retryPeriod"),
    ):
        le.add_argument(flag, type=_duration, default=None, help=f"leaderElection.{what} (e.g. 15s)")
    for flag, what in (
        ("--leader-elect-resource-lock", "resourceLock (only 'leases')"),
        ("--leader-elect-resource-name", "resourceName"),
        ("--leader-elect-resource-namespace", "resourceNamespace"),
    ):
        le.add_argument(flag, default=None, help=f"leaderElection.{what}")

    srv = p.add_argument_group("secure serving (HTTPS for /metrics, /healthz, /livez, /readyz, /debug/*)")
    srv.add_argument("--secure-port", type=int, default=10259, help="HTTPS port (0 disables HTTPS)")
    srv.add_argument("--bind-address", default="0.0.0.0", help="address for --secure-port")
    srv.add_argument("--cert-dir", default="", help="where the self-signed certificate is written")
    srv.add_argument("--tls-cert-file", default="", help="PEM certificate (chain) for HTTPS")
    srv.add_argument("--tls-private-key-file", default="", help="PEM private key for --tls-cert-file")
    srv.add_argument(
        "--tls-min-version",
        default="VersionTLS12",
        choices=("VersionTLS12", "VersionTLS13"),
        help="minimum TLS version",
    )
    srv.add_argument(
        "--tls-cipher-suites",
        type=_paths,
        default=[],
        help="accepted for compatibility: the ciphers are OpenSSL's defaults for the TLS version",
    )
    srv.add_argument(
        "--metrics-bind-address",
        default="",
        help="netsched: ALSO serve the endpoints over plain HTTP, WITHOUT authentication, on host:port "
        "(local use only; default off)",
    )

    auth = p.add_argument_group("delegated authentication and authorization")
    auth.add_argument(
        "--authentication-kubeconfig",
        default="",
        help="kubeconfig allowed to create tokenreviews (default: in-cluster; none: every token is refused)",
    )
    auth.add_argument(
        "--authentication-token-webhook-cache-ttl",
        type=_duration,
        default=10.0,
        help="how long TokenReview answers are cached",
    )
    _flag_bool(auth, "--authentication-skip-lookup", "accepted (netsched reads no client CA ConfigMap)")
    _flag_bool(auth, "--authentication-tolerate-lookup-failure", "accepted (no client CA lookup)")
    auth.add_argument(
        "--authorization-kubeconfig",
        default="",
        help="kubeconfig allowed to create subjectaccessreviews (default: in-cluster; none: all forbidden)",
    )
    auth.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=["/healthz", "/readyz", "/livez"],
        help="paths served without authentication or authorization",
    )
    auth.add_argument("--authorization-webhook-cache-authorized-ttl", type=_duration, default=10.0)
    auth.add_argument("--authorization-webhook-cache-unauthorized-ttl", type=_duration, default=10.0)

    run = p.add_argument_group("netsched")
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="shadow mode: compute placements for pods of other schedulers, record them, bind nothing",
    )
    run.add_argument(
        "--shadow-scheduler-name",
        default="default-scheduler",
        help="with --dry-run: the schedulerName whose pods are shadowed",
    )
    run.add_argument(
        "--shadow-annotate",
        action="store_true",
        help="with --dry-run: also annotate shadowed pods with netsched.io/shadow-node (the only write made)",
    )
    run.add_argument(
        "--explain-annotations",
        action="store_true",
        help="annotate each scheduled pod with netsched.io/explain: the top nodes' per-plugin scores (costs a re-score)",
    )

    logs = p.add_argument_group("logging")
    logs.add_argument("-v", "--v", dest="verbosity", type=int, default=0, help="log verbosity (klog levels)")
    logs.add_argument("--logging-format", choices=("text", "json"), default="text")
    logs.add_argument(
        "--feature-gates",
        type=_gates,
        default={},
        help="NAME=true|false,...: accepted; netsched implements kube's v1.31 defaults and warns "
        "about gates it does not know",
    )
    return p


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse, then the checks argparse cannot express (exit 2 with the flag named)."""
    parser = run_parser()
    opts = parser.parse_args(argv)
    if opts.port not in (None, 0):
        parser.error(f"--port={opts.port}: insecure serving was removed; only --port=0 is accepted")
    if not 0 <= opts.secure_port <= 65535:
        parser.error(f"--secure-port={opts.secure_port}: must be in [0, 65535]")
    if bool(opts.tls_cert_file) != bool(opts.tls_private_key_file):
        parser.error("--tls-cert-file and --tls-private-key-file must be given together")
    return opts


def main(*plugins: PluginFactory, argv: Sequence[str] | None = None) -> int:
    """The `netsched` command; a binary with out-of-tree plugins passes them here:

    netsched.main(netsched.with_plugin(MyPlugin))
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "simulate":
        from netsched.simulate.cli import main as simulate_main

        return int(simulate_main(args[1:], plugins=plugins))
    if args and args[0] == "demo":
        from netsched.demo import main as demo_main

        return demo_main(args[1:], plugins=plugins)
    opts = parse_args(args)
    from netsched.serve import run

    return run(opts, plugins)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
