"""Where the real `netsched` process spends its start-up, step by step and thread by thread.

    python -m benchmarks.bench_startup [--nodes 5000] [--pods 10000] [--profile FILE] [--src DIR]

The fake API server (bench_launch's: HTTPS, realistic objects, in a child
process) holds `--nodes` nodes and `--pods` pending pods.  The scheduler runs
in a process of its own started from the interpreter as bench_launch starts
it, but through this module (`--child`), which notes, before handing the
command line to `netsched.cli.main`: the spawn, the imports, then as they
happen each reflector's list applied (per resource), the caches synced, each
metrics source's first poll done, the first scheduling cycle started and the
first binding made, with the wall time since the spawn and each thread's CPU
so far (from the kernel: /proc/self/task/<id>/schedstat).  Printed: one line
per step, then the CPU per thread group at the first binding.  Hooks are
installed on the classes (a benchmark's instrumentation), the code path is
the CLI's own.  `--profile` as bench_launch's (a config or ConfigMap whose
profiles to run; deploy/configmap.yaml's load-aware profile needs a
Prometheus: the polls then fail and the first one is noted as done when it
gives up); `--src` runs another checkout.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

STEPS_FILE = "NETSCHED_STARTUP_STEPS"  # where the child writes its steps (one JSON line each)


def _child(argv: list[str]) -> None:
    """In the scheduler's process: note the steps, then run the CLI."""
    from benchmarks.threads import thread_cpu

    spawned = float(os.environ["NETSCHED_SPAWNED"])
    out = open(os.environ[STEPS_FILE], "a", buffering=1)  # noqa: SIM115 - open for the process's life
    lock = threading.Lock()
    seen: set[str] = set()

    def note(step: str, once: bool = True) -> None:
        with lock:
            if once and step in seen:
                return
            seen.add(step)
            cpu = {k: round(v[0], 3) for k, v in thread_cpu().items()}
            out.write(json.dumps({"step": step, "t": time.monotonic() - spawned, "cpu": cpu}) + "\n")

    note("interpreter started")
    import netsched.cli
    from netsched.kube.reflector import Reflector
    from netsched.metrics.poller import Poller
    from netsched.scheduler import Scheduler

    note("netsched imported")
    apply_list, poll_once, schedule_one = Reflector._apply_list, Poller.poll_once, Scheduler.schedule_one
    bind = __import__("netsched.binder", fromlist=["Binder"]).Binder.bind

    def listed(self: Any, result: Any) -> None:
        apply_list(self, result)
        note(f"list applied: {self.name} ({len(result.items)})")

    def polled(self: Any) -> Any:
        try:
            return poll_once(self)
        finally:
            note("first metrics poll done")

    def cycle(self: Any, timeout: float | None = None) -> bool:
        if "first scheduling cycle started" not in seen and self.queue.counts().get("active"):
            note("first scheduling cycle started")
        return bool(schedule_one(self, timeout))

    def bound(self: Any, req: Any) -> None:
        bind(self, req)
        note("first binding made")

    Reflector._apply_list = listed  # type: ignore[method-assign]
    Poller.poll_once = polled  # type: ignore[method-assign]
    Scheduler.schedule_one = cycle  # type: ignore[method-assign]
    __import__("netsched.binder", fromlist=["Binder"]).Binder.bind = bound

    import logging

    class Synced(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.msg.startswith("Caches synced"):
                note("caches synced")

    logging.getLogger("netsched.app").addHandler(Synced())
    sys.exit(netsched.cli.main(argv=argv))


def run(n_nodes: int, n_pods: int, profile: Path | None, src: Path | None) -> list[dict[str, Any]]:
    from benchmarks.bench_launch import _config, _free_port, _serve

    ctx = mp.get_context("spawn")
    ready, stop, binds = ctx.Event(), ctx.Event(), ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        config = Path(tmp) / "config.yaml"
        config.write_text(_config(kubeconfig, 5000, 10000, profile))
        steps = Path(tmp) / "steps.jsonl"
        server = ctx.Process(
            target=_serve, args=(n_nodes, 0, n_pods, True, kubeconfig, ready, stop, binds), daemon=True
        )
        server.start()
        try:
            if not ready.wait(600):
                raise RuntimeError("fake API server did not start")
            here = str(Path(__file__).resolve().parent.parent)
            path = os.pathsep.join(p for p in (str(src) if src else "", here) if p)
            cmd = [sys.executable, "-m", "benchmarks.bench_startup", "--child", "--", "--config", str(config)]
            cmd += ["--bind-address", "127.0.0.1", "--secure-port", str(_free_port()), "--cert-dir", tmp]
            env = dict(os.environ, PYTHONPATH=path, NETSCHED_SPAWNED=repr(time.monotonic()))
            env[STEPS_FILE] = str(steps)
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            try:
                binds.get(timeout=180)
            finally:
                proc.terminate()
                proc.wait(60)
        finally:
            stop.set()
            server.join(10)
        return [json.loads(line) for line in steps.read_text().splitlines()]


def main() -> None:
    if "--child" in sys.argv:
        _child(sys.argv[sys.argv.index("--") + 1 :])
        return
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--profile", type=Path)
    p.add_argument("--src", type=Path)
    a = p.parse_args()
    root = (a.src or Path(__file__).resolve().parent.parent).resolve()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "netsched"), str(root / "plugins")], check=True
    )
    steps = run(a.nodes, a.pods, a.profile, a.src)
    print(f"start-up at {a.nodes} nodes, {a.pods} pending pods{', ' + str(a.src) if a.src else ''}:")
    prev = 0.0
    for s in steps:
        total = sum(s["cpu"].values())
        print(f"  {s['t']:6.2f} s (+{s['t'] - prev:5.2f})  CPU {total:5.2f} s  {s['step']}")
        prev = s["t"]
    last = steps[-1]["cpu"] if steps else {}
    by_thread = ", ".join(f"{k} {v:.2f}" for k, v in sorted(last.items(), key=lambda kv: -kv[1]) if v >= 0.01)
    print(f"  CPU by thread at the last step (s): {by_thread}")


if __name__ == "__main__":
    main()
