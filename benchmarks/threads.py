"""Per-thread CPU and waits of this process, from the kernel (no netsched import: a process can read
its threads before it imports anything else)."""

from __future__ import annotations

import os
import re
import threading


def thread_cpu() -> dict[str, tuple[float, int]]:
    """(CPU seconds, voluntary context switches) used so far by each group of this process's live
    threads ("bind_3" and "bind_7" are one group, "bind"), from the kernel's per-thread run time
    (ns) where it keeps it. A voluntary switch is a wait: for I/O, a lock, a queue or the GIL; each
    costs a wake-up (on this VM about as much CPU as a small request)."""
    tick = os.sysconf("SC_CLK_TCK")
    groups: dict[str, tuple[float, int]] = {}
    for t in threading.enumerate():
        base = f"/proc/self/task/{t.native_id}"
        try:
            with open(f"{base}/schedstat") as f:
                secs = int(f.read().split()[0]) / 1e9
        except OSError:
            try:
                with open(f"{base}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                secs = (int(fields[11]) + int(fields[12])) / tick
            except OSError:  # the thread ended meanwhile, or no procfs
                continue
        switches = 0
        try:
            with open(f"{base}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        switches = int(line.split()[1])
        except OSError:
            pass
        name = re.sub(r"[-_]\d+(_\d+)?$", "", t.name)
        cpu, n = groups.get(name, (0.0, 0))
        groups[name] = (cpu + secs, n + switches)
    return groups
