"""The real `netsched` process: launch to first bind, and SIGTERM to exit.

    python -m benchmarks.bench_launch [--nodes 1000] [--existing 0] [--pods 200] [--plain] [--runs 3]

The fake API server runs in a child process (HTTPS with realistic objects by
default, `--plain` for plain HTTP and small objects) holding `--nodes` nodes,
`--existing` pods already bound (to be listed and cached at start-up) and
`--pods` pending pods for netsched.  `netsched` is then started as an
operator starts it (`python -m netsched --config ...` naming the kubeconfig in clientConnection, HTTPS
serving on a free port with a generated certificate) and timed from the
moment the process is spawned (interpreter start and imports included) to the
API server storing its first binding (the process's CPU until then is reported
too: the fake API server, in Python, is slower to serve lists than a real one).  The sources are byte-compiled first, as
they are in the image (pip compiles at install): a checkout run with
PYTHONDONTWRITEBYTECODE would otherwise compile every module on every start.  Once every pending pod is bound it is
sent SIGTERM, and the time to its exit and its exit code are reported.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import PROFILE, fill, out, pods


def _serve(
    n_nodes: int,
    n_existing: int,
    n_pods: int,
    realistic: bool,
    kubeconfig: str,
    ready: Any,
    stop: Any,
    binds: Any,
) -> None:
    from netsched.testing.fakeapi import FakeAPIServer

    with FakeAPIServer(watch_timeout=300, tls=realistic, realistic=realistic) as srv:
        store = srv.store
        bind = store.bind
        count = [0]

        def timed_bind(namespace: str, name: str, node: str, **kw: Any) -> Any:
            got = bind(namespace, name, node, **kw)
            count[0] += 1
            binds.put((time.monotonic(), count[0]))
            return got

        store.bind = timed_bind
        fill(srv, n_nodes, pods(n_pods), existing=n_existing)
        srv.write_kubeconfig(kubeconfig)
        ready.set()
        stop.wait()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a running process (Linux /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch_once(n_nodes: int, n_existing: int, n_pods: int, realistic: bool) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    ready, stop, binds = ctx.Event(), ctx.Event(), ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        config = Path(tmp) / "config.yaml"
        # As with kube-scheduler, --kubeconfig is ignored next to --config: the file names it.
        config.write_text(PROFILE.format(extra="") + f"clientConnection:\n  kubeconfig: {kubeconfig}\n")
        server = ctx.Process(
            target=_serve,
            args=(n_nodes, n_existing, n_pods, realistic, kubeconfig, ready, stop, binds),
            daemon=True,
        )
        server.start()
        try:
            if not ready.wait(600):
                raise RuntimeError("fake API server did not start")
            cmd = [
                sys.executable,
                "-m",
                "netsched",
                "--config",
                str(config),
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                str(_free_port()),
                "--cert-dir",
                tmp,
            ]
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                try:
                    first, bound = binds.get(timeout=120)
                except queue.Empty:
                    proc.kill()
                    _, err = proc.communicate()
                    raise RuntimeError(
                        f"netsched bound nothing in 120 s; its log ends:\n{err[-3000:]}"
                    ) from None
                cpu_first = _cpu_seconds(proc.pid)
                last = first
                while bound < n_pods:
                    last, bound = binds.get(timeout=120)
                t_term = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                try:
                    code = proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = proc.wait()
                    code = -9
                t_exit = time.monotonic()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        finally:
            stop.set()
            server.join(10)
    return {
        "cpu_to_first_bind_s": cpu_first,
        "first_bind_s": first - t0,
        "all_bound_s": last - t0,
        "exit_s": t_exit - t_term,
        "exit_code": float(code),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--existing", type=int, default=0, help="pods already bound, listed at start-up")
    p.add_argument("--pods", type=int, default=200, help="pending pods for netsched")
    p.add_argument("--plain", action="store_true", help="plain HTTP and small objects")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "netsched"), str(root / "plugins")], check=True
    )
    runs = [launch_once(a.nodes, a.existing, a.pods, not a.plain) for _ in range(a.runs)]
    mode = "plain" if a.plain else "https+realistic"
    first = [r["first_bind_s"] for r in runs]
    out(
        f"launch ({mode}, {a.nodes} nodes, {a.existing} existing pods, {a.pods} pending): "
        f"process spawn -> first bind median {statistics.median(first):.2f} s "
        f"(runs: {', '.join(f'{x:.2f}' for x in first)}); "
        f"-> all {a.pods} bound median {statistics.median(r['all_bound_s'] for r in runs):.2f} s; "
        f"netsched's CPU until its first bind median {statistics.median(r['cpu_to_first_bind_s'] for r in runs):.2f} s"
    )
    codes = sorted({int(r["exit_code"]) for r in runs})
    out(
        f"SIGTERM -> exit: median {statistics.median(r['exit_s'] for r in runs):.2f} s, "
        f"max {max(r['exit_s'] for r in runs):.2f} s, exit codes {codes}"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
