"""Command line, shaped like kube-scheduler's.

    netsched --config FILE [--kubeconfig FILE | --master URL] [--leader-elect=false] [-v 2]
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

from netsched.framework.interfaces import Plugin


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="netsched",
        description="A Kubernetes scheduler that places pods by measured node load as well as requests.",
        epilog="Subcommands: 'netsched demo' (no cluster needed), 'netsched simulate --help'.",
    )
    p.add_argument(
        "--config", default="", help="KubeSchedulerConfiguration file (default: one 'netsched' profile)"
    )
    p.add_argument(
        "--kubeconfig", default="", help="kubeconfig file (default: in-cluster, then ~/.kube/config)"
    )
    p.add_argument("--master", default="", help="API server URL; overrides the kubeconfig's server")
    p.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        default=None,
        help="true/false; overrides leaderElection.leaderElect from the config",
    )
    p.add_argument(
        "--kube-api-qps", type=float, default=None, help="client QPS (overrides clientConnection.qps)"
    )
    p.add_argument(
        "--kube-api-burst", type=int, default=None, help="client burst (overrides clientConnection.burst)"
    )
    p.add_argument(
        "--metrics-bind-address",
        default="127.0.0.1:10259",
        help="host:port for /metrics, /healthz, /livez, /readyz and /debug (port 0 disables)",
    )
    p.add_argument(
        "--write-config-to", default="", help="write the defaulted configuration to this file and exit"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="shadow mode: compute placements for pods of other schedulers, record them, bind nothing",
    )
    p.add_argument(
        "--shadow-scheduler-name",
        default="default-scheduler",
        help="with --dry-run: the schedulerName whose pods are shadowed",
    )
    p.add_argument(
        "--shadow-annotate",
        action="store_true",
        help="with --dry-run: also annotate shadowed pods with netsched.io/shadow-node (the only write made)",
    )
    p.add_argument(
        "--explain-annotations",
        action="store_true",
        help="annotate each scheduled pod with netsched.io/explain: the top nodes' per-plugin scores (costs a re-score)",
    )
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=0, help="log verbosity (klog levels)")
    p.add_argument("--logging-format", choices=("text", "json"), default="text")
    return p


def main(*plugins: type[Plugin], argv: Sequence[str] | None = None) -> int:
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
    opts = run_parser().parse_args(args)
    from netsched.app import run

    return run(opts, plugins)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
