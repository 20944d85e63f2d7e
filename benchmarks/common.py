"""Shared set-up for benchmarks: cluster generators and a figure printer.

Benchmarks print figures; they never assert on time (tests do not either).
"""

from __future__ import annotations

import resource
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from netsched.app import build_registry
from netsched.config import SchedulerConfig, load_config
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE

PROFILE = NETSCHED_PROFILE + "{extra}\n"


def isolated(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) in a fresh process, so its memory, CPU and imports are its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def config(extra: str = "", registry: Any = None) -> tuple[SchedulerConfig, Any]:
    reg = registry or build_registry()
    return load_config(PROFILE.format(extra=extra), reg), reg


def nodes(n: int, cpu: str = "32", memory: str = "128Gi", zones: int = 10) -> list[dict[str, Any]]:
    return [
        make_node(f"node-{i:05d}")
        .capacity(cpu=cpu, memory=memory, pods="110")
        .zone(f"zone-{i % zones}")
        .obj()
        for i in range(n)
    ]


def pods(
    n: int,
    scheduler: str = "netsched",
    cpu: str = "250m",
    memory: str = "512Mi",
    prefix: str = "p",
    **extra: Any,
) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        b = (
            make_pod(f"{prefix}-{i:06d}")
            .scheduler(scheduler)
            .req(cpu=cpu, memory=memory)
            .label("app", f"app-{i % extra.get('apps', 50)}")
        )
        if extra.get("spread"):
            b.spread(
                1,
                "topology.kubernetes.io/zone",
                "ScheduleAnyway",
                {"app": f"app-{i % extra.get('apps', 50)}"},
            )
        if extra.get("anti_affinity"):
            b.affinity(
                {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "podAffinityTerm": {
                                    "labelSelector": {"matchLabels": {"app": f"app-{i % 50}"}},
                                    "topologyKey": "kubernetes.io/hostname",
                                },
                            }
                        ]
                    }
                }
            )
        out.append(b.obj())
    return out


def peak_rss_mib() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def out(text: str) -> None:
    print(text, flush=True)
    sys.stdout.flush()


def fill(srv: Any, n_nodes: int, pending: Sequence[dict[str, Any]], existing: int = 0) -> None:
    """Put `n_nodes` nodes, `existing` pods already bound (round robin, another scheduler's) and
    the `pending` pods into a fake API server."""
    node_objs = nodes(n_nodes)
    for n in node_objs:
        srv.create("nodes", n)
    for i, p in enumerate(pods(existing, scheduler="default-scheduler", prefix="existing")):
        p["spec"]["nodeName"] = node_objs[i % n_nodes]["metadata"]["name"]
        srv.create("pods", p)
    for p in pending:
        srv.create("pods", p)


def server_timestamps(srv: Any) -> tuple[dict[str, float], dict[str, float]]:
    """Note, server side, when each pod was bound and when its Scheduled event was stored."""
    store = srv.store
    bound: dict[str, float] = {}
    scheduled: dict[str, float] = {}
    lock = threading.Lock()
    bind, create = store.bind, store.create

    def timed_bind(namespace: str, name: str, node: str, **kw: Any) -> Any:
        out = bind(namespace, name, node, **kw)
        with lock:
            bound[f"{namespace}/{name}"] = time.monotonic()
        return out

    def timed_create(rt: Any, namespace: str | None, body: Any) -> Any:
        out = create(rt, namespace, body)
        if body.get("reason") == "Scheduled":
            ref = body.get("regarding") or body.get("involvedObject") or {}
            with lock:
                scheduled.setdefault(f"{ref.get('namespace')}/{ref.get('name')}", time.monotonic())
        return out

    store.bind, store.create = timed_bind, timed_create
    return bound, scheduled
