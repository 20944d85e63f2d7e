"""Scheduled events around an API server restart and around leader kills: how late, how many lost.

    python -m benchmarks.bench_event_outage [--scenario restart|kill|both] [--pods 600]
        [--hang 8] [--down 2] [--stop-after 5] [--event-delay 0.02] [--qps 500] [--burst 1000]
        [--src DIR]

The real `netsched` command runs in child processes against the fake API server
in this process, which notes when it stored each binding and each Scheduled event.

restart (issue 29 item 8a): event writes are slowed (--event-delay seconds each,
as on a busy API server) so events trail the bindings; when half the pods are
bound the API server restarts as kube-apiserver does on SIGTERM then SIGKILL:
wedged for --hang seconds (requests accepted, never answered), then dead for
--down seconds (connections reset, connects refused), then back on the same
port; with --down 0 it comes back without closing the wedged connections, as
when the server vanished behind a partition or with its node (half-open
connections that only a client's read timeout ends). --stop-after seconds after it answers again the scheduler gets SIGTERM.
Printed: binding -> event lag p50/p90/max, how long after the server came back
the first event was stored and the backlog had drained, and events missing
once the scheduler has exited (dropped).

kill (item 8b): two replicas with leader election (lease 2 s); the leader is
SIGKILLed twice mid-burst (each time a new replica is started), then the last
leader is stopped with SIGTERM. Printed: pods bound and Scheduled events
missing: what a SIGKILL loses is what the killed process held unwritten.

--src DIR runs the scheduler from another checkout (say the commit before a
change, from `git archive`) for before/after figures; the fake is this one's.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import fill, out, pods, server_timestamps
from netsched.testing.wait import wait_until

REPO = Path(__file__).resolve().parents[1]
POLL = 0.01  # seconds between checks of a wait: the outage starts this close to its trigger
EVENT_WRITES = r"^/apis/events\.k8s\.io/v1/namespaces/[^/]+/events"
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: {qps}
  burst: {burst}
leaderElection:
  leaderElect: {elect}
  leaseDuration: 2s
  renewDeadline: 1500ms
  retryPeriod: 250ms
  resourceNamespace: default
  resourceName: netsched
profiles:
- schedulerName: netsched
"""


class Replica:
    """One `netsched` process; its output is read (and its lease identity noted) by a thread."""

    def __init__(self, src: Path, config: Path, kubeconfig: Path) -> None:
        self.identity = ""
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "netsched.cli", "--config", str(config), "--secure-port", "0"],
            cwd=src,  # `python -m` puts the working directory first on sys.path
            env=dict(os.environ, PYTHONPATH=str(src), KUBECONFIG=str(kubeconfig)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            found = re.search(r'identity="([^"]+)"', line)
            if found and not self.identity:
                self.identity = found.group(1)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def restart(a: argparse.Namespace, tmp: Path) -> None:
    from netsched.testing.fakeapi import FakeAPIServer

    with FakeAPIServer(watch_timeout=300) as srv:
        bound, scheduled = server_timestamps(srv)
        fill(srv, 20, pods(a.pods))
        srv.inject_fault("POST", EVENT_WRITES, status=None, delay=a.event_delay, count=-1)
        kubeconfig = srv.write_kubeconfig(tmp / "kubeconfig")
        config = tmp / "config.yaml"
        config.write_text(CONFIG.format(elect="false", qps=a.qps, burst=a.burst))
        replica = Replica(a.src, config, kubeconfig)
        try:
            wait_until(lambda: len(bound) >= a.pods // 2, 120, "half the pods bound", POLL)
            backlog = len(bound) - len(scheduled)
            # The outage's phases last what the flags say: these sleeps are the scenario, not waits.
            srv.outage("hang")
            time.sleep(a.hang)
            if a.down > 0:  # else the wedged connections are never answered nor closed (half-open)
                srv.outage("refuse")
                time.sleep(a.down)
            srv.recover()
            back = time.monotonic()
            waiting = [k for k, t in bound.items() if t < back and k not in scheduled]
            time.sleep(a.stop_after)
            code = replica.stop()
        finally:
            replica.stop(signal.SIGKILL)
        lags = sorted(scheduled[k] - t for k, t in bound.items() if k in scheduled)
        after = sorted(t - back for t in scheduled.values() if t >= back)
        drained = [scheduled[k] - back for k in waiting if k in scheduled]
        dropped = [line.strip() for line in replica.lines if "unwritten at shutdown" in line]
        out(
            f"restart: {len(bound)} bound, backlog at the outage {backlog} events, hang {a.hang:g} s + "
            f"down {a.down:g} s, SIGTERM {a.stop_after:g} s after recovery (exit {code})"
        )
        out(
            f"  binding -> Scheduled: p50 {statistics.median(lags) if lags else float('nan'):.2f} s, "
            f"p90 {_pct(lags, 0.9):.2f} s, max {_pct(lags, 1.0):.2f} s over {len(lags)} events"
        )
        out(
            f"  after recovery: first event {after[0] if after else float('nan'):.2f} s, the "
            f"{len(waiting)} waiting written by {max(drained) if drained else float('nan'):.2f} s "
            f"({len(waiting) - len(drained)} never)"
        )
        out(f"  missing after exit: {len(bound) - len(scheduled)}; {' '.join(dropped) or 'no drop logged'}")
        out(f"  requests held by the wedged server: {srv.held_requests}")


def kill(a: argparse.Namespace, tmp: Path) -> None:
    from netsched.testing.fakeapi import FakeAPIServer

    with FakeAPIServer(watch_timeout=300) as srv:
        bound, scheduled = server_timestamps(srv)
        fill(srv, 20, [])
        kubeconfig = srv.write_kubeconfig(tmp / "kubeconfig")
        config = tmp / "config.yaml"
        config.write_text(CONFIG.format(elect="true", qps=a.qps, burst=a.burst))
        replicas = [Replica(a.src, config, kubeconfig) for _ in range(2)]

        def leader() -> Replica | None:
            leases = srv.list("coordination.k8s.io/leases", namespace="default")
            holder = leases[0]["spec"].get("holderIdentity") if leases else ""
            return next((r for r in replicas if holder and r.identity == holder), None)

        killed_at: list[int] = []
        kills: list[float] = []
        last: Replica | None = None  # SIGTERMed at the end; read in `finally` even after a failure
        try:
            wait_until(lambda: leader() is not None, 60, "a leader", POLL)
            for p in pods(a.pods):
                srv.create("pods", p)
            for share in (0.3, 0.6):
                wait_until(lambda s=share: len(bound) >= a.pods * s, 120, f"{share:.0%} bound", POLL)  # type: ignore[misc]
                victim = leader()
                if victim is None:
                    continue
                victim.stop(signal.SIGKILL)
                kills.append(time.monotonic())
                killed_at.append(len(bound))
                replicas.append(Replica(a.src, config, kubeconfig))
            wait_until(lambda: len(bound) >= a.pods, 180, "every pod bound", POLL)
            last = leader()
            # A fixed grace for the survivors' own writes (not a wait: what is missing after it
            # is what the benchmark measures).
            time.sleep(1.0)
        finally:
            for r in replicas:
                r.stop(signal.SIGTERM if r is last else signal.SIGKILL)
        missing = sorted(set(bound) - set(scheduled))
        lags = sorted(scheduled[k] - t for k, t in bound.items() if k in scheduled)
        out(f"kill: {len(bound)} bound, leader SIGKILLed at {killed_at} bound pods")
        out(
            f"  binding -> Scheduled: p50 {1000 * statistics.median(lags):.0f} ms, "
            f"p90 {1000 * _pct(lags, 0.9):.0f} ms, max {1000 * _pct(lags, 1.0):.0f} ms"
        )
        # How long before the kill that ended its leader each pod missing an event was bound:
        # ~0 is a binding whose reply the killed process never read (nothing left to write it).
        ages = sorted(min((k - bound[p] for k in kills if k >= bound[p]), default=-1.0) for p in missing)
        out(f"  Scheduled events missing: {len(missing)}, bound this long before the kill (ms):")
        out(f"  {[round(1000 * a) for a in ages]}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", choices=("restart", "kill", "both"), default="both")
    p.add_argument("--pods", type=int, default=600)
    p.add_argument("--hang", type=float, default=8.0, help="seconds the server is wedged (SIGTERM)")
    p.add_argument(
        "--down", type=float, default=2.0, help="seconds it is dead (SIGKILL) before it is back; 0: half-open"
    )
    p.add_argument("--stop-after", type=float, default=5.0, help="seconds after recovery until SIGTERM")
    p.add_argument("--event-delay", type=float, default=0.02, help="seconds each event write takes")
    p.add_argument("--qps", type=float, default=500, help="clientConnection.qps (kube's default: 50)")
    p.add_argument("--burst", type=int, default=1000, help="clientConnection.burst (kube's default: 100)")
    p.add_argument("--src", type=Path, default=REPO, help="the checkout the scheduler runs from")
    a = p.parse_args()
    out(f"scheduler from {a.src}")
    with tempfile.TemporaryDirectory() as tmp:
        if a.scenario in ("restart", "both"):
            restart(a, Path(tmp))
        if a.scenario in ("kill", "both"):
            kill(a, Path(tmp))


if __name__ == "__main__":
    main()
