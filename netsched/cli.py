"""Command line, shaped like kube-scheduler's.

    netsched --config FILE [--master URL] [--leader-elect=false] [--authentication-kubeconfig K] [-v 2]
    netsched --config FILE --write-config-to OUT      # the fully defaulted config, then exit
    netsched --version                                  # netsched's version and the kube it follows
    netsched demo                                       # in-process fake cluster, no Kubernetes needed
    netsched simulate [SCENARIO]                        # what a config would do (see simulate --help)

Exit status: 0 on a clean stop (SIGTERM/SIGINT), 1 on a bad configuration
(every problem listed with its field path), 2 on bad flags.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from netsched import logutil
from netsched.config.duration import format_duration
from netsched.config.types import ClientConnection, LeaderElectionConfig
from netsched.flags import HelpFormatter, flag_bool, flag_duration, flag_list
from netsched.framework.extension_points import PluginFactory
from netsched.observability.auth import DEFAULT_ALWAYS_ALLOW_PATHS, DEFAULT_TTL
from netsched.observability.server import DEFAULT_PORT
from netsched.observability.tls import TLS_VERSIONS
from netsched.version import KUBE_BASELINE, version_text

# `netsched NAME ...` runs a subcommand: the module (imported only then) has its own
# parser() and main(args, plugins=...); main() dispatches and parsers() lists from this table.
SUBCOMMANDS = {"demo": "netsched.demo", "simulate": "netsched.simulate.cli"}
# The usage line names every way to run the command (the flags below are the scheduler's).
USAGE = """\
netsched [flags]                      run the scheduler (flags below: kube-scheduler's)
       netsched demo [flags]                 kube's default profile beside netsched's, no cluster
       netsched simulate [SCENARIO] [flags]  what a configuration would do, without a cluster
"""


def _gates(text: str) -> dict[str, bool]:
    """kube's mapStringBool: "A=true,B=false"."""
    out: dict[str, bool] = {}
    for item in flag_list(text):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"expected NAME=true|false, got {item!r}")
        out[key.strip()] = flag_bool(value)
    return out


def _vmodule(text: str) -> tuple[logutil.ModulePattern, ...]:
    try:
        return logutil.parse_vmodule(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _flag_bool(p: argparse._ActionsContainer, name: str, help: str) -> None:
    # --flag, --flag=true, --flag=false as in pflag; default None = "not given".
    p.add_argument(name, type=flag_bool, nargs="?", const=True, default=None, metavar="bool", help=help)


class _Version(argparse.Action):
    """kube's --version: alone or =true prints the version and exits, =raw adds details."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        value: Any,
        option: str | None = None,
    ) -> None:
        if value == "raw":
            print(version_text(raw=True))
            parser.exit(0)
        try:
            wanted = flag_bool(str(value))
        except argparse.ArgumentTypeError:
            parser.error(f"--version={value}: expected true, false or raw")
        if wanted:
            print(version_text())
            parser.exit(0)


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netsched",
        usage=USAGE,
        description="A Kubernetes scheduler that places pods by measured node load as well as requests.",
        epilog="Subcommands: 'netsched demo --help' (no cluster needed), 'netsched simulate --help'. "
        "Flags are kube-scheduler's; see README.md (Flags) for what each does in netsched.",
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "--version",
        action=_Version,
        nargs="?",
        const="true",
        default=None,
        metavar="true|raw",
        help=f"print netsched's version and the kube-scheduler version it follows ({KUBE_BASELINE}), "
        "then exit; =raw adds the Python runtime",
    )
    misc = p.add_argument_group("misc")
    misc.add_argument(
        "--config",
        default="",
        help="KubeSchedulerConfiguration file (without it: one 'netsched' profile with the defaults); "
        "watched and reloaded on change or SIGHUP",
    )
    misc.add_argument("--master", default="", help="API server URL; overrides the kubeconfig's server")
    misc.add_argument(
        "--write-config-to", default="", help="write the defaulted configuration to this file and exit"
    )
    misc.add_argument(
        "--config-reload-interval",
        type=flag_duration,
        default="2s",
        help="how often the --config file is checked for changes (netsched; 0 disables the watch, "
        "SIGHUP still reloads)",
    )

    dep = p.add_argument_group(
        "deprecated (ignored when --config is given, as in kube-scheduler; the config file's "
        "value, or its default, applies when a flag is not given)"
    )
    dep.add_argument(
        "--kubeconfig", default=None, help="kubeconfig file (clientConnection.kubeconfig; default in-cluster)"
    )
    dep.add_argument(
        "--kube-api-qps",
        type=float,
        default=None,
        help=f"client QPS (clientConnection.qps; default {ClientConnection().qps:g})",
    )
    dep.add_argument(
        "--kube-api-burst",
        type=int,
        default=None,
        help=f"client burst (clientConnection.burst; default {ClientConnection().burst})",
    )
    dep.add_argument(
        "--kube-api-content-type",
        default=None,
        help="accepted for compatibility: netsched always sends and reads JSON",
    )
    _flag_bool(
        dep,
        "--profiling",
        "enableProfiling: /debug/pprof/profile (CPU samples) behind authorization (default true)",
    )
    _flag_bool(
        dep,
        "--contention-profiling",
        "enableContentionProfiling: accepted, no effect in netsched (default true)",
    )
    dep.add_argument(
        "--port",
        type=int,
        default=None,
        help="DEPRECATED: insecure serving was removed; only 0 is accepted (see --metrics-bind-address)",
    )

    le = p.add_argument_group(
        "leader election (override leaderElection.* even with --config; the config file's value, "
        "or its default, applies when a flag is not given)"
    )
    _flag_bool(
        le,
        "--leader-elect",
        "leaderElection.leaderElect: campaign for the lease before scheduling (default true)",
    )
    le_defaults = LeaderElectionConfig()
    for flag, what, seconds in (
        ("--leader-elect-lease-duration", "leaseDuration", le_defaults.lease_duration),
        ("--leader-elect-renew-deadline", "renewDeadline", le_defaults.renew_deadline),
        ("--leader-elect-retry-period", "retryPeriod", le_defaults.retry_period),
    ):
        le.add_argument(
            flag,
            type=flag_duration,
            default=None,
            help=f"leaderElection.{what} (default {format_duration(seconds)})",
        )
    for flag, what in (
        (
            "--leader-elect-resource-lock",
            f"resourceLock: only 'leases' (default \"{le_defaults.resource_lock}\")",
        ),
        ("--leader-elect-resource-name", "resourceName (default: the first profile's schedulerName)"),
        (
            "--leader-elect-resource-namespace",
            f'resourceNamespace (default "{le_defaults.resource_namespace}")',
        ),
    ):
        le.add_argument(flag, default=None, help=f"leaderElection.{what}")

    srv = p.add_argument_group("secure serving (HTTPS for /metrics, /healthz, /livez, /readyz, /debug/*)")
    srv.add_argument("--secure-port", type=int, default=DEFAULT_PORT, help="HTTPS port (0 disables HTTPS)")
    srv.add_argument("--bind-address", default="0.0.0.0", help="address for --secure-port")
    srv.add_argument(
        "--cert-dir",
        default="",
        help="where the self-signed certificate is written and reused from (without it: a temporary "
        "directory, a new certificate at each start)",
    )
    srv.add_argument("--tls-cert-file", default="", help="PEM certificate (chain) for HTTPS")
    srv.add_argument("--tls-private-key-file", default="", help="PEM private key for --tls-cert-file")
    srv.add_argument(
        "--tls-min-version",
        default="VersionTLS12",
        choices=tuple(TLS_VERSIONS),
        help="minimum TLS version",
    )
    srv.add_argument(
        "--tls-cipher-suites",
        type=flag_list,
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
        type=flag_duration,
        default=format_duration(DEFAULT_TTL),
        help="how long a TokenReview's answer for a bearer token is cached",
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
        type=flag_list,
        default=",".join(DEFAULT_ALWAYS_ALLOW_PATHS),
        help="paths served without authentication or authorization",
    )
    auth.add_argument(
        "--authorization-webhook-cache-authorized-ttl",
        type=flag_duration,
        default=format_duration(DEFAULT_TTL),
        help="how long a SubjectAccessReview that allowed a request is cached",
    )
    auth.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=flag_duration,
        default=format_duration(DEFAULT_TTL),
        help="how long a SubjectAccessReview that denied a request is cached",
    )

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
    gates = p.add_argument_group("feature gates")
    gates.add_argument(
        "--feature-gates",
        type=_gates,
        default={},
        metavar="mapStringBool",
        help=f"NAME=true|false,...: accepted; netsched implements kube's {KUBE_BASELINE} defaults and warns "
        "about gates it does not know",
    )

    logs = p.add_argument_group("logging")
    logs.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=0,
        metavar="Level",
        help="log verbosity: 2 adds netsched's steady-state details (an optional API not served), 4 its "
        "debug lines, 6 the client libraries' (klog's levels)",
    )
    logs.add_argument(
        "--vmodule",
        type=_vmodule,
        default="",
        metavar="pattern=N,...",
        help="per-file verbosity, klog's comma-separated pattern=N list; a pattern matches a source "
        "file's name without .py (binder, reflector, *queue*)",
    )
    logs.add_argument(
        "--logging-format",
        choices=logutil.FORMATS,
        default="text",
        help="text: klog's lines; json: one JSON object per line with kube's fields (ts, caller, msg, "
        "v, then one field per key, err on errors)",
    )
    logs.add_argument(
        "--log-flush-frequency",
        type=flag_duration,
        default=None,
        help="accepted for kube-scheduler manifests (kube's default 5s); no effect: every line is "
        "flushed when it is written (said once in the log)",
    )
    return p


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, subcommands included (for tests and docs)."""
    subcommands = {f"netsched {name}": importlib.import_module(m).parser() for name, m in SUBCOMMANDS.items()}
    return {"netsched": run_parser(), **subcommands}


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
    if args and args[0] in SUBCOMMANDS:
        return int(importlib.import_module(SUBCOMMANDS[args[0]]).main(args[1:], plugins=plugins))
    opts = parse_args(args)
    from netsched.serve import run

    return run(opts, plugins)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
