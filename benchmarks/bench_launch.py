"""The real `netsched` process: launch to first bind, the backlog, and SIGTERM to exit.

    python -m benchmarks.bench_launch [--nodes 1000] [--existing 0] [--pods 200] [--plain] [--runs 3]
                                      [--qps 5000] [--burst 10000] [--profile FILE] [--src DIR]

The fake API server runs in a child process (HTTPS with realistic objects by
default, `--plain` for plain HTTP and small objects) holding `--nodes` nodes,
`--existing` pods already bound (to be listed and cached at start-up) and
`--pods` pending pods for netsched.  `netsched` is then started as an
operator starts it (`python -m netsched --config ...` naming the kubeconfig in
clientConnection, with `--qps`/`--burst` there, HTTPS serving on a free port
with a generated certificate) and timed from the moment the process is spawned
(interpreter start and imports included) to the API server storing its first
binding (the process's CPU until then is reported too: the fake API server, in
Python, is slower to serve lists than a real one).  Then, as issue 41's table
has them: pods/s from the first binding to the last, the process's CPU for the
whole backlog (launch included) and per pod, and its peak resident memory
(VmHWM).  The sources are byte-compiled first, as they are in the image (pip
compiles at install): a checkout run with PYTHONDONTWRITEBYTECODE would
otherwise compile every module on every start.  Once every pending pod is
bound it is sent SIGTERM, and the time to its exit and its exit code are
reported.  `--profile FILE` (deploy/configmap.yaml's load-aware profile, say)
replaces the profile: its `profiles:` list is used with the kubeconfig and
rate limits above.  `--src DIR` runs the scheduler from another checkout
(before/after figures; the fake API server is this one's).  The scheduler's
log is read as it comes (10,000 pods write 10,000 lines) and its tail shown if
it fails.
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
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import yaml

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


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _config(kubeconfig: str, qps: float, burst: int, profile: Path | None) -> str:
    """benchmarks.common.PROFILE (or the `profiles:` of `profile`, a config file or a ConfigMap
    manifest holding one) with the kubeconfig and rate limits."""
    cfg: dict[str, Any] = yaml.safe_load(PROFILE.format(extra=""))
    if profile is not None:
        loaded = yaml.safe_load(profile.read_text())
        if loaded.get("kind") == "ConfigMap":
            loaded = yaml.safe_load(loaded["data"]["config.yaml"])
        cfg["profiles"] = loaded["profiles"]
    cfg["clientConnection"] = {"kubeconfig": kubeconfig, "qps": qps, "burst": burst}
    return str(yaml.safe_dump(cfg, sort_keys=False))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch_once(
    n_nodes: int,
    n_existing: int,
    n_pods: int,
    realistic: bool,
    *,
    qps: float = 5000,
    burst: int = 10000,
    profile: Path | None = None,
    src: Path | None = None,
) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    ready, stop, binds = ctx.Event(), ctx.Event(), ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        config = Path(tmp) / "config.yaml"
        # As with kube-scheduler, --kubeconfig is ignored next to --config: the file names it.
        config.write_text(_config(kubeconfig, qps, burst, profile))
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
            env = dict(os.environ, PYTHONPATH=str(src)) if src is not None else None
            t0 = time.monotonic()
            proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=src, env=env
            )
            tail: deque[str] = deque(maxlen=40)
            assert proc.stderr is not None
            reader = threading.Thread(target=tail.extend, args=(proc.stderr,), daemon=True)
            reader.start()
            try:
                try:
                    first, bound = binds.get(timeout=120)
                except queue.Empty:
                    proc.kill()
                    reader.join(10)
                    raise RuntimeError(
                        "netsched bound nothing in 120 s; its log ends:\n" + "".join(tail)
                    ) from None
                cpu_first = _cpu_seconds(proc.pid)
                last = first
                while bound < n_pods:
                    last, bound = binds.get(timeout=120)
                cpu_all = _cpu_seconds(proc.pid)
                rss = _peak_rss_mib(proc.pid)
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
        "pods_per_s": (n_pods - 1) / (last - first) if last > first else float("nan"),
        "cpu_all_s": cpu_all,
        "cpu_ms_per_pod": 1000 * cpu_all / max(1, n_pods),
        "peak_rss_mib": rss,
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
    p.add_argument("--qps", type=float, default=5000, help="clientConnection.qps")
    p.add_argument("--burst", type=int, default=10000, help="clientConnection.burst")
    p.add_argument("--profile", type=Path, help="a config file or ConfigMap whose profiles to run")
    p.add_argument("--src", type=Path, help="run the scheduler from this checkout")
    a = p.parse_args()
    root = (a.src or Path(__file__).resolve().parent.parent).resolve()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "netsched"), str(root / "plugins")], check=True
    )
    runs = [
        launch_once(
            a.nodes, a.existing, a.pods, not a.plain, qps=a.qps, burst=a.burst, profile=a.profile, src=a.src
        )
        for _ in range(a.runs)
    ]
    mode = "plain" if a.plain else "https+realistic"

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    def each(key: str, fmt: str) -> str:
        return ", ".join(format(r[key], fmt) for r in runs)

    first = [r["first_bind_s"] for r in runs]
    out(
        f"launch ({mode}, {a.nodes} nodes, {a.existing} existing pods, {a.pods} pending, qps {a.qps:g} "
        f"burst {a.burst}{', ' + str(a.src) if a.src else ''}): process spawn -> first bind median "
        f"{statistics.median(first):.2f} s (runs: {', '.join(f'{x:.2f}' for x in first)}); "
        f"-> all {a.pods} bound median {med('all_bound_s'):.2f} s; "
        f"netsched's CPU until its first bind median {med('cpu_to_first_bind_s'):.2f} s"
    )
    out(
        f"backlog: {med('pods_per_s'):.0f} pods/s first -> last bind (runs: "
        f"{each('pods_per_s', '.0f')}); CPU for all {a.pods} pods, launch included, "
        f"median {med('cpu_all_s'):.2f} s = {med('cpu_ms_per_pod'):.3f} ms/pod (runs: "
        f"{each('cpu_all_s', '.2f')}); peak RSS median {med('peak_rss_mib'):.0f} MiB"
    )
    codes = sorted({int(r["exit_code"]) for r in runs})
    out(
        f"SIGTERM -> exit: median {med('exit_s'):.2f} s, "
        f"max {max(r['exit_s'] for r in runs):.2f} s, exit codes {codes}"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
