"""Start the real `netsched` command in a child process, as an operator would.

Integration tests that need a separate process (signals, exit codes, what a
SIGTERM flushes) start it here, so the command line and environment are
written once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start_netsched(config: str | Path, kubeconfig: str | Path, *extra: str) -> subprocess.Popen[str]:
    """`netsched --config C --kubeconfig K --metrics-bind-address 127.0.0.1:0 EXTRA...`, output piped."""
    args = ["--config", str(config), "--kubeconfig", str(kubeconfig), "--metrics-bind-address", "127.0.0.1:0"]
    return subprocess.Popen(
        [sys.executable, "-m", "netsched.cli", *args, *extra],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
