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
    """`KUBECONFIG=K netsched --config C --secure-port 0 EXTRA...`, output piped.

    The cluster comes from $KUBECONFIG: as in kube-scheduler, --kubeconfig is ignored
    when --config is given (clientConnection.kubeconfig is the file's own field).
    """
    args = ["--config", str(config), "--secure-port", "0"]
    return subprocess.Popen(
        [sys.executable, "-m", "netsched.cli", *args, *extra],
        env=dict(os.environ, PYTHONPATH=str(REPO), KUBECONFIG=str(kubeconfig)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
