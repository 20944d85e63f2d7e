"""A synthetic node_exporter for several fake nodes, over HTTP on 127.0.0.1.

Tests set each node's load (receive/transmit bytes/s, CPU and memory
utilisation) and a real Prometheus scrapes one endpoint for all nodes.
Counters advance with elapsed time at the set rate, so rate() in Prometheus
returns exactly what the test set once a rate window has passed.  Loopback
and veth interfaces carry heavy traffic and a veth reports a 10 Gb/s speed:
queries that forget to exclude them give visibly wrong numbers.

Series are labelled with `node="<name>"` (label name configurable, or off)
and/or `instance="<ip>:9100"`, as a scrape config with relabelling would;
scrape with honor_labels: true so Prometheus keeps our `instance`.

Counter samples carry their own timestamp (the moment their value was
computed, as cAdvisor's do): Prometheus stamps a scrape with the time it
started, and on a busy machine the exporter may answer tens of milliseconds
later, so rate() over a few 1 s scrapes would be off by that jitter over the
window (for `1 - rate(idle)`, an absolute error of ~1 % of a CPU).  Gauges
carry none, so a series that disappears goes stale as usual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from netsched.fakemetrics.loopback import LoopbackServer

GIB = 1024**3
NOISE_RATE = 500_000_000.0  # bytes/s on lo and the veth: large enough to be noticed if counted
VETH = "veth1a2b3c"


class _Counter:
    """A counter growing at `rate` per second since its last change."""

    __slots__ = ("base", "rate", "since")

    def __init__(self, rate: float, now: float) -> None:
        self.base = 0.0
        self.rate = rate
        self.since = now

    def value(self, now: float) -> float:
        return self.base + self.rate * (now - self.since)

    def set_rate(self, rate: float, now: float, since: float | None = None) -> None:
        """From `now` on it grows at `rate`; `since` (between its last change and now): the
        change happened then, and the counter has grown at `rate` since (a load the exporter
        learns of at a scrape but that began before it)."""
        at = now if since is None else min(max(since, self.since), now)
        self.base = self.value(at) + rate * (now - at)
        self.since = now
        self.rate = rate


@dataclass
class FakeNode:
    name: str
    ip: str
    cpus: int = 2
    link_speed: float | None = 125_000_000.0  # bytes/s (1 Gb/s); None: no speed series
    memory_total: float = 8 * GIB
    memory_used: float = 0.25  # fraction
    counters: dict[tuple[str, str], _Counter] = field(default_factory=dict)


class SyntheticExporter:
    def __init__(
        self,
        nodes: Iterable[FakeNode],
        *,
        node_label: str | None = "node",
        instance_port: int | None = 9100,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        # Counter samples are stamped (see the module docstring) when the clock is the real one.
        self._stamped = clock is time.monotonic
        self._lock = threading.Lock()
        self.node_label = node_label
        self.instance_port = instance_port
        self.nodes: dict[str, FakeNode] = {}
        for n in nodes:
            self.add_node(n)
        self._server: LoopbackServer | None = None
        self.scrapes = 0

    # ------------------------------------------------------------ load control

    def add_node(self, node: FakeNode, *, rx: float = 0.0, tx: float = 0.0, cpu: float = 0.0) -> None:
        now = self._clock()
        with self._lock:
            node.counters = {
                ("rx", "eth0"): _Counter(rx, now),
                ("tx", "eth0"): _Counter(tx, now),
                ("rx", "lo"): _Counter(NOISE_RATE, now),
                ("tx", "lo"): _Counter(NOISE_RATE, now),
                ("rx", VETH): _Counter(NOISE_RATE, now),
                ("tx", VETH): _Counter(NOISE_RATE, now),
            }
            for c in range(node.cpus):
                node.counters[("idle", str(c))] = _Counter(1.0 - cpu, now)
                node.counters[("user", str(c))] = _Counter(cpu, now)
            self.nodes[node.name] = node

    def remove_node(self, name: str) -> None:
        with self._lock:
            self.nodes.pop(name, None)

    def set_load(
        self,
        name: str,
        *,
        rx: float | None = None,
        tx: float | None = None,
        cpu: float | None = None,
        memory: float | None = None,
    ) -> None:
        """rx/tx: bytes/s on eth0; cpu, memory: utilisation fractions 0..1."""
        now = self._clock()
        with self._lock:
            n = self.nodes[name]
            if rx is not None:
                n.counters[("rx", "eth0")].set_rate(rx, now)
            if tx is not None:
                n.counters[("tx", "eth0")].set_rate(tx, now)
            if cpu is not None:
                for c in range(n.cpus):
                    n.counters[("idle", str(c))].set_rate(1.0 - cpu, now)
                    n.counters[("user", str(c))].set_rate(cpu, now)
            if memory is not None:
                n.memory_used = memory

    # ------------------------------------------------------------ exposition

    def _labels(self, n: FakeNode, **extra: str) -> str:
        pairs = []
        if self.node_label:
            pairs.append((self.node_label, n.name))
        if self.instance_port is not None:
            pairs.append(("instance", f"{n.ip}:{self.instance_port}"))
        pairs.extend(extra.items())
        return "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"

    def stamp(self, now: float) -> str:
        """ " <milliseconds>": the wall time of clock reading `now`, for a counter sample ("" with
        a test's own clock)."""
        if not self._stamped:
            return ""
        return f" {int((time.time() - time.monotonic() + now) * 1000)}"

    def render(self) -> str:
        now = self._clock()
        ts = self.stamp(now)
        out: list[str] = []
        with self._lock:
            nodes = list(self.nodes.values())
            for direction, metric in (("rx", "receive"), ("tx", "transmit")):
                name = f"node_network_{metric}_bytes_total"
                out.append(f"# TYPE {name} counter")
                for n in nodes:
                    for dev in ("eth0", "lo", VETH):
                        out.append(
                            f"{name}{self._labels(n, device=dev)} {n.counters[(direction, dev)].value(now):.3f}{ts}"
                        )
            out.append("# TYPE node_network_speed_bytes gauge")
            for n in nodes:
                if n.link_speed is not None:
                    out.append(f"node_network_speed_bytes{self._labels(n, device='eth0')} {n.link_speed:.0f}")
                out.append(f"node_network_speed_bytes{self._labels(n, device=VETH)} 1250000000")
            out.append("# TYPE node_cpu_seconds_total counter")
            for n in nodes:
                for c in range(n.cpus):
                    for mode in ("idle", "user"):
                        v = n.counters[(mode, str(c))].value(now)
                        out.append(
                            f"node_cpu_seconds_total{self._labels(n, cpu=str(c), mode=mode)} {v:.6f}{ts}"
                        )
            out.append("# TYPE node_memory_MemTotal_bytes gauge")
            for n in nodes:
                out.append(f"node_memory_MemTotal_bytes{self._labels(n)} {n.memory_total:.0f}")
            out.append("# TYPE node_memory_MemAvailable_bytes gauge")
            for n in nodes:
                avail = n.memory_total * (1.0 - n.memory_used)
                out.append(f"node_memory_MemAvailable_bytes{self._labels(n)} {avail:.0f}")
            self.scrapes += 1
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------ HTTP

    @property
    def target(self) -> str:
        """host:port for a scrape config."""
        assert self._server is not None, "start() the exporter first"
        return f"127.0.0.1:{self._server.port}"

    def start(self) -> SyntheticExporter:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self._server = LoopbackServer(Handler, "synthetic-exporter")
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> SyntheticExporter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def fake_nodes(count: int, *, prefix: str = "node", subnet: str = "10.0.0", **kw: object) -> list[FakeNode]:
    """`count` FakeNodes named node-0.. with IPs 10.0.0.1..; kw sets FakeNode fields."""
    return [FakeNode(f"{prefix}-{i}", f"{subnet}.{i + 1}", **kw) for i in range(count)]  # type: ignore[arg-type]
