"""MetricsHub: the one metrics pipeline of the process.

app.py creates one hub and hands it to every profile through Handle.metrics.
Plugins ask it for a source with their `prometheus:` args; sources with the
same connection share a Poller (one APScheduler interval job, one thread, one
table) and fully equal args share the MetricSource itself.  The cluster cache
calls `update_nodes` on (re)list and node add/remove so the self-check and the
per-node gauges know the nodes.

Polling runs on an APScheduler 3 BackgroundScheduler: one job per poller on
its own 1-thread executor, max_instances=1 and coalesce=True so a slow
Prometheus delays polls instead of stacking them.

Time: APScheduler decides *when* a poll runs, in real time (it compares its
run times with datetime.now, so the run times given to it are real too).
Everything a poll computes from time comes from the injected Clock: its
budget and retry waits (`now`, `sleep`), sample ages and staleness (`wall`),
how long a fallback lasted.  A test on a ManualClock therefore runs polls on
demand with `trigger()` (the scheduled job, run now on its own thread) and
moves time with `clock.step()`: no sleeping, and no poll it did not ask for
as long as the interval is longer than the test.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.job import Job
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger
from prometheus_client import CollectorRegistry

from netsched.clock import Clock, SystemClock
from netsched.framework.types import PodInfo
from netsched.metrics.args import ConnectionKey, PrometheusArgs, redact
from netsched.metrics.client import ClientFactory, PrometheusHTTPClient
from netsched.metrics.instruments import Instruments, NodeCollector
from netsched.metrics.mapping import NodeLike, NodeResolver, node_ref
from netsched.metrics.poller import Poller, PollOutcome
from netsched.metrics.selfcheck import SelfCheckReport
from netsched.metrics.source import MetricSource

log = logging.getLogger(__name__)


class MetricsHub:
    def __init__(
        self,
        *,
        registry: CollectorRegistry | None = None,
        clock: Clock | None = None,
        client_factory: ClientFactory | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        """`client_factory(connection)` builds the Prometheus client (tests pass a fake);
        `sleep` is used between retries (default: the clock's; a simulation passes a no-op
        so that retries do not move its time)."""
        self.registry = registry if registry is not None else CollectorRegistry()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._sleep = sleep or self.clock.sleep
        self._client_factory: ClientFactory = client_factory or PrometheusHTTPClient
        self._ins = Instruments(self.registry)
        self.registry.register(NodeCollector(self._poller_estimates, self.clock.wall))
        self._lock = threading.RLock()
        self._pollers: dict[ConnectionKey, Poller] = {}
        self._sources: dict[PrometheusArgs, MetricSource] = {}
        # The generation in which each source was last asked for (hot reload: see prune_before).
        self._generation = 0
        self._asked: dict[PrometheusArgs, int] = {}
        # The same for the sources a filtering plugin asked for (filters=True): their failClosed
        # rejects nodes in an outage, which the poller's log line must say.
        self._filtering: dict[PrometheusArgs, int] = {}
        self._directory: NodeResolver | None = None
        self._scheduler: BackgroundScheduler | None = None
        self._jobs: dict[str, Job] = {}

    # ------------------------------------------------------------ sources

    def source(self, args: PrometheusArgs, *, filters: bool = False) -> MetricSource:
        """The shared source for these args (the same object for equal args).

        `filters`: the caller rejects nodes on the source's readings (a Filter plugin such as
        LoadThreshold), so with failClosed an outage keeps pods pending, not only re-scored."""
        with self._lock:
            self._asked[args] = self._generation
            changed = filters and args not in self._filtering
            if filters:
                self._filtering[args] = self._generation
            src = self._sources.get(args)
            if src is None:
                poller = self._poller(args)
                src = self._sources[args] = MetricSource(args, poller, self.clock.wall, len(self._sources))
                changed = True
            if changed:
                self._note_policies()
            return src

    def _note_policies(self) -> None:
        """Tell each poller the stalePolicies of the sources it serves, and whether a failClosed
        one is read by a filter (lock held)."""
        for poller in self._pollers.values():
            mine = [a for a, s in self._sources.items() if s.poller is poller]
            poller.stale_policies = tuple(sorted({a.stale_policy for a in mine}))
            poller.filters_fail_closed = any(a.fail_closed and a in self._filtering for a in mine)

    def new_generation(self) -> int:
        """Start a generation of plugins (a config reload builds new ones); returns its number."""
        with self._lock:
            self._generation += 1
            return self._generation

    def prune_before(self, generation: int) -> list[str]:
        """Drop the sources no plugin of `generation` or later asked for, and stop the pollers
        (their scheduled jobs and clients) that no remaining source uses. Returns their names.

        After a reload swaps in the new plugins, a Prometheus whose settings changed
        is polled with the new ones only: the old poller does not poll on unseen."""
        with self._lock:
            for args in [a for a, gen in self._asked.items() if gen < generation]:
                del self._asked[args]
                self._sources.pop(args, None)
            for args in [a for a, gen in self._filtering.items() if gen < generation]:
                del self._filtering[args]  # no filter of the new plugins reads it
            self._note_policies()
            used = {src.poller.conn for src in self._sources.values()}
            gone = [p for conn, p in self._pollers.items() if conn not in used]
            for p in gone:
                del self._pollers[p.conn]
                job = self._jobs.pop(p.name, None)
                if job is not None:
                    job.remove()
        for p in gone:
            p.close()
            log.info("Metrics source no longer used, stopped polling source=%s", p.name)
        return [p.name for p in gone]

    def _poller(self, args: PrometheusArgs) -> Poller:
        conn = args.connection
        p = self._pollers.get(conn)
        if p is not None:
            return p
        name = redact(conn.address)
        taken = {q.name for q in self._pollers.values()}
        if name in taken:
            name = next(f"{name}#{i}" for i in range(2, len(taken) + 2) if f"{name}#{i}" not in taken)
        p = Poller(name, conn, self._client_factory(conn), self.clock, self._sleep, self._ins)
        if self._directory is not None:
            p.set_directory(self._directory)
        self._pollers[conn] = p
        if self._scheduler is not None:
            self._add_job(p)
        return p

    @property
    def pollers(self) -> list[Poller]:
        with self._lock:
            return list(self._pollers.values())

    @property
    def sources(self) -> list[MetricSource]:
        with self._lock:
            return list(self._sources.values())

    def _poller_estimates(self) -> list[tuple[Poller, int]]:
        with self._lock:
            counts = {id(p): 0 for p in self._pollers.values()}
            for s in self._sources.values():
                counts[id(s.poller)] += len(s.ledger)
            return [(p, counts[id(p)]) for p in self._pollers.values()]

    # ------------------------------------------------------------ nodes

    def update_nodes(self, nodes: Iterable[NodeLike]) -> None:
        """The cluster's nodes (NodeInfo, NodeRef or (name, addresses, labels)); re-runs the self-check."""
        directory = NodeResolver([node_ref(n) for n in nodes])
        with self._lock:
            self._directory = directory
            pollers = list(self._pollers.values())
        for p in pollers:
            p.set_directory(directory)

    def pod_departed(self, pod: PodInfo) -> None:
        """A placed pod stopped loading its node (deleted, terminating, finished): every source's
        ledger takes it out of its readings (the cluster cache calls this, from the watch)."""
        for src in self.sources:
            src.depart(pod)

    def self_check(self) -> list[SelfCheckReport]:
        return [s.self_check() for s in self.sources]

    # ------------------------------------------------------------ polling

    def poll_now(self) -> list[PollOutcome]:
        """Poll every source once on the calling thread (tests; start-up without a scheduler)."""
        return [p.poll_once() for p in self.pollers]

    def start(self, first_poll_timeout: float | None = 10.0) -> None:
        """Start polling; wait up to `first_poll_timeout` s for each source's first poll (None: don't wait)."""
        with self._lock:
            if self._scheduler is not None:
                return
            self._scheduler = BackgroundScheduler(timezone=UTC)
            for p in self._pollers.values():
                self._add_job(p)
            self._scheduler.start()
            pollers = list(self._pollers.values())
        if first_poll_timeout is not None:
            self.wait_polled(first_poll_timeout, pollers)

    def wait_polled(self, timeout: float, pollers: list[Poller] | None = None) -> bool:
        """Wait up to `timeout` s (each) for every poller's first poll; False (and a warning
        naming it) for one still running."""
        ok = True
        for p in self.pollers if pollers is None else pollers:
            if not p.wait_after(1, timeout):
                log.warning("First metrics poll still running source=%s waited=%.1fs", p.name, timeout)
                ok = False
        return ok

    def _add_job(self, p: Poller) -> None:
        assert self._scheduler is not None
        alias = f"netsched-poll-{len(self._jobs)}"
        # APScheduler logs every run at INFO; a poll every 15 s is not news.
        logging.getLogger(f"apscheduler.executors.{alias}").setLevel(logging.WARNING)
        # Named threads: a thread dump or /debug/pprof shows which poller is which.
        self._scheduler.add_executor(
            ThreadPoolExecutor(max_workers=1, pool_kwargs={"thread_name_prefix": alias}), alias
        )
        interval = p.conn.poll_interval_seconds
        self._jobs[p.name] = self._scheduler.add_job(
            p.scheduled_poll,
            IntervalTrigger(seconds=interval, timezone=UTC),
            id=alias,
            name=f"poll {p.name}",
            executor=alias,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(interval)),
            next_run_time=datetime.now(UTC),
        )

    def trigger(self, timeout: float = 10.0) -> bool:
        """Run every poller's job now and wait until each has finished a poll started after this call.

        For tests: no sleeping, no waiting for the interval.  Without a running
        scheduler, polls synchronously.
        """
        with self._lock:
            scheduler = self._scheduler
            pollers = list(self._pollers.values())
        if scheduler is None:
            self.poll_now()
            return True
        seqs = []
        for p in pollers:
            seq = p.begin_wait()
            self._jobs[p.name].modify(next_run_time=datetime.now(UTC))  # APScheduler's time: real
            seqs.append((p, seq))
        scheduler.wakeup()
        # A bound on waiting for the executor threads, not a time the test controls: real.
        deadline = time.monotonic() + timeout
        return all(p.wait_after(seq, max(0.0, deadline - time.monotonic())) for p, seq in seqs)

    def stop(self) -> None:
        with self._lock:
            scheduler, self._scheduler = self._scheduler, None
            self._jobs.clear()
            pollers = list(self._pollers.values())
        if scheduler is not None:
            scheduler.shutdown(wait=True)
        for p in pollers:
            p.close()
