"""netsched's version and the kube-scheduler version it behaves like, for `netsched --version`.

netsched's own version is the installed distribution's (pyproject.toml's
`version`, read from the package metadata), so a wheel and its `--version`
never disagree.  KUBE_BASELINE is the kube-scheduler release whose behaviour
netsched follows; docs/KUBE_VERSION.md states the same baseline and
tests/unit/test_cli_help.py fails when the two differ.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys

KUBE_BASELINE = "v1.31"
DISTRIBUTION = "netsched"


def netsched_version() -> str:
    """The installed netsched's version; "unknown" when run from a tree that is not installed."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def version_text(raw: bool = False) -> str:
    """What --version prints (one line); --version=raw adds the runtime, as kube's raw form."""
    line = f"netsched v{netsched_version()} (follows kube-scheduler {KUBE_BASELINE})"
    if not raw:
        return line
    return "\n".join(
        [
            line,
            f"netschedVersion: {netsched_version()}",
            f"kubeSchedulerBaseline: {KUBE_BASELINE}",
            f"python: {platform.python_implementation()} {platform.python_version()}",
            f"platform: {sys.platform}/{platform.machine()}",
        ]
    )
