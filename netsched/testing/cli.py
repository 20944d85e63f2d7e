"""Start the real `netsched` command in a child process, as an operator would.

Integration tests that need a separate process (signals, exit codes, what a
SIGTERM flushes) start it here, so the command line and environment are
written once, and so is the stop: SIGTERM and the output (`sigterm`), the process killed
if a test ends before that (`killed_if_left`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start_netsched(
    config: str | Path, kubeconfig: str | Path, *extra: str, output: Path | None = None
) -> subprocess.Popen[str]:
    """`KUBECONFIG=K netsched --config C --secure-port 0 EXTRA...`, output piped, or written to
    the file `output` (for a test that reads it while the process runs).

    The cluster comes from $KUBECONFIG: as in kube-scheduler, --kubeconfig is ignored
    when --config is given (clientConnection.kubeconfig is the file's own field).
    """
    args = ["--config", str(config), "--secure-port", "0"]
    with contextlib.ExitStack() as files:
        stdout = subprocess.PIPE if output is None else files.enter_context(output.open("w"))
        return subprocess.Popen(
            [sys.executable, "-m", "netsched.cli", *args, *extra],
            env=dict(os.environ, PYTHONPATH=str(REPO), KUBECONFIG=str(kubeconfig)),
            stdout=stdout,
            stderr=subprocess.STDOUT,
            text=True,
        )


@contextlib.contextmanager
def killed_if_left(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """`proc` for a `with` block; still running when the block ends (a wait failed or timed
    out), it is killed and reaped, so no test leaves a scheduler behind."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=5)


def sigterm(proc: subprocess.Popen[str], timeout: float) -> str:
    """SIGTERM, as the kubelet stops a pod (nothing if it has exited), then the process's whole
    output once it exits; TimeoutExpired if it outlives `timeout` seconds."""
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=timeout)
    return out
