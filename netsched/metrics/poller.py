"""One poller per Prometheus connection: the union of required queries, once per poll.

`poll_once()` is a plain method (APScheduler calls it on a timer; tests call
it directly): one instant query per required metric for all nodes together,
never per node and never from a scheduling cycle.  Transient failures are
retried within a deadline inside the poll interval; if they persist the poll
stops early (the other queries would fail the same way) and the source is in
fallback until a poll gets an answer.  State changes (fallback, a query
starting or stopping to fail, the self-check outcome) are logged once each,
never per poll, node or pod.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from netsched.clock import Clock
from netsched.metrics.args import BY_LABEL, FAIL_OPEN, ConnectionKey, NodeMappingArgs
from netsched.metrics.cache import BadResponse, MetricsTable, Series, parse_vector
from netsched.metrics.client import QueryClient, QueryError, retrying
from netsched.metrics.instruments import Instruments
from netsched.metrics.mapping import NodeResolver
from netsched.metrics.queries import QueryKey
from netsched.metrics.selfcheck import SelfCheckReport, check

log = logging.getLogger(__name__)

# A poll must finish well before the next one is due, or APScheduler skips runs: every
# attempt and every wait between retries is cut to what is left of this budget.
POLL_BUDGET_FRACTION = 0.8


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """What one poll did (returned by poll_once for tests and benchmarks)."""

    table: MetricsTable
    queries: int  # HTTP queries issued, retries included
    seconds: float


@dataclass(slots=True)
class _Run:
    """What one poll gathered so far."""

    fresh: dict[QueryKey, Series] = field(default_factory=dict)
    errors: dict[QueryKey, str] = field(default_factory=dict)  # query -> reason
    details: dict[QueryKey, str] = field(default_factory=dict)  # query -> message
    issued: int = 0  # HTTP requests, retries included
    abort: QueryError | None = None  # a transient failure that outlived its retries

    def fail(self, key: QueryKey, reason: str, detail: str) -> None:
        self.errors[key] = reason
        self.details[key] = detail


class Poller:
    def __init__(
        self,
        name: str,
        conn: ConnectionKey,
        client: QueryClient,
        clock: Clock,
        sleep: Callable[[float], None],
        instruments: Instruments,
    ) -> None:
        self.name = name
        self.conn = conn
        self._client = client
        self._clock = clock
        self._sleep = sleep
        self._ins = instruments
        self._keys: dict[QueryKey, None] = {}  # insertion-ordered set
        self._keys_lock = threading.Lock()
        # Swapped whole; readers take the reference once.
        self.table = MetricsTable.initial()
        self.directory: NodeResolver | None = None
        self.fallback = False
        self._fallback_since = 0.0
        # The stalePolicy of each source polled through this connection (MetricsHub keeps it):
        # what an outage does, and so what its log line says, depends on them.
        self.stale_policies: tuple[str, ...] = ()
        self.filters_fail_closed = False  # a failClosed source here is read by a filter plugin
        self._failing: dict[QueryKey, tuple[str, bool]] = {}  # query -> (reason, was it logged)
        self._logged_check: tuple[str, ...] | None = None
        self._check_lock = threading.Lock()  # polls and node relists both run the check
        self._cond = threading.Condition()
        self._started = 0
        self._finished = 0
        self._running = False
        self._last_crash = ""
        instruments.fallback.labels(name).set(0)

    # ------------------------------------------------------------ queries

    def require(self, key: QueryKey) -> None:
        with self._keys_lock:
            self._keys[key] = None

    def keys(self) -> list[QueryKey]:
        with self._keys_lock:
            return list(self._keys)

    # ------------------------------------------------------------ polling

    def poll_once(self) -> PollOutcome:
        with self._cond:
            self._started += 1
            seq = self._started
            self._running = True
        try:
            return self._poll()
        finally:
            with self._cond:
                self._finished = seq
                self._running = False
                self._cond.notify_all()

    def scheduled_poll(self) -> None:
        """The APScheduler job: poll_once, with a bug logged once rather than every interval."""
        try:
            self.poll_once()
            self._last_crash = ""
        except Exception as e:
            crash = f"{type(e).__name__}: {e}"
            if crash != self._last_crash:
                self._last_crash = crash
                log.exception("Metrics poll crashed source=%s", self.name)

    def _poll(self) -> PollOutcome:
        keys = self.keys()
        t0 = time.perf_counter()
        wall = self._clock.wall()
        deadline = self._clock.now() + POLL_BUDGET_FRACTION * self.conn.poll_interval_seconds
        run = _Run()
        for key in keys:
            self._run_query(key, deadline, run)
        reachable = bool(run.fresh) or not keys
        table = self.table.successor(wall, run.fresh, run.errors, keys, reachable)
        self.table = table  # the atomic swap
        seconds = time.perf_counter() - t0
        self._ins.poll_duration.labels(self.name).observe(seconds)
        self._log_query_changes(keys, run.errors, run.details)
        self._set_fallback(not reachable, run.abort or next(iter(run.details.values()), ""))
        self._after_poll()
        return PollOutcome(table, run.issued, seconds)

    def _run_query(self, key: QueryKey, deadline: float, run: _Run) -> None:
        """One query with retries; the outcome lands in `run`."""
        if run.abort is not None:  # the server is not answering: do not wait for it again
            run.fail(key, run.abort.reason, "skipped: " + run.abort.detail)
            return
        remaining = deadline - self._clock.now()
        if remaining <= 0:
            run.fail(key, "deadline", "poll ran out of time")
            self._ins.query_errors.labels(self.name, key.name, "deadline").inc()
            return

        def attempt(promql: str) -> Series:
            # Every attempt, retries included, gets only what is left of the poll's budget.
            left = deadline - self._clock.now()
            if left <= 0:
                raise QueryError("deadline", "poll ran out of time", transient=False)
            run.issued += 1
            raw = self._client.query(promql, min(self.conn.timeout_seconds, left))
            mapping = NodeMappingArgs(BY_LABEL, key.key_label) if key.key_label else self.conn.node_mapping
            try:
                return parse_vector(raw, mapping)
            except BadResponse as e:
                raise QueryError("bad_response", str(e), transient=False) from None

        q0 = time.perf_counter()
        try:
            series = retrying(self._clock.now, self._sleep, deadline)(attempt, key.promql)
        except QueryError as e:
            run.fail(key, e.reason, e.detail)
            self._ins.query_errors.labels(self.name, key.name, e.reason).inc()
            if e.transient:
                run.abort = e
            return
        finally:
            self._ins.query_duration.labels(self.name, key.name).observe(time.perf_counter() - q0)
        for reason, n in series.dropped.items():
            self._ins.dropped.labels(self.name, key.name, reason).inc(n)
        run.fresh[key] = series

    # ------------------------------------------------------------ state changes (logged once each)

    def _set_fallback(self, down: bool, why: object) -> None:
        if down == self.fallback:
            return
        self.fallback = down
        self._ins.fallback.labels(self.name).set(1 if down else 0)
        if down:
            self._fallback_since = self._clock.now()
            if self.filters_fail_closed:
                # In fallback nothing is fresh: a filter (LoadThreshold) reading a failClosed source
                # rejects every node, so its pods stay pending. A scorer's failClosed blocks nothing.
                log.warning(
                    "Prometheus unreachable, stalePolicy failClosed: load filters reject every node, pods "
                    "wait until it answers; metrics plugins score by requests source=%s err=%r stalePolicies=%s",
                    self.name,
                    str(why),
                    ",".join(self.stale_policies),
                )
            else:
                log.warning(
                    "Prometheus unreachable, metrics plugins score by requests until it answers "
                    "source=%s err=%r stalePolicies=%s",
                    self.name,
                    str(why),
                    ",".join(self.stale_policies) or FAIL_OPEN,
                )
        else:
            log.info(
                "Prometheus answers again, metrics plugins use measured load source=%s down_for=%.0fs",
                self.name,
                self._clock.now() - self._fallback_since,
            )

    def _log_query_changes(
        self, keys: list[QueryKey], errors: dict[QueryKey, str], details: dict[QueryKey, str]
    ) -> None:
        for key in keys:
            reason = errors.get(key)
            before = self._failing.get(key)
            if reason == (before[0] if before else None):
                continue
            if reason is None:
                del self._failing[key]
                if before is not None and before[1]:
                    log.info("Prometheus query works again source=%s metric=%s", self.name, key.name)
                continue
            # An unreachable server is reported once by _set_fallback, not once per query.
            loud = reason not in ("unreachable", "timeout", "http") and not details[key].startswith("skipped")
            self._failing[key] = (reason, loud)
            if loud:
                log.warning(
                    "Prometheus query failed source=%s metric=%s reason=%s promql=%r err=%r",
                    self.name,
                    key.name,
                    reason,
                    key.promql,
                    details[key],
                )

    # ------------------------------------------------------------ nodes and self-check

    def set_directory(self, directory: NodeResolver) -> None:
        self.directory = directory
        if self.table.version > 0:
            self._after_poll()

    def self_check(self, keys: list[QueryKey] | None = None) -> SelfCheckReport:
        return check(
            self.name,
            self.table,
            self.keys() if keys is None else keys,
            self.directory,
            self.conn.node_mapping,
        )

    def _after_poll(self) -> None:
        with self._check_lock:
            self._check_and_log()

    def _check_and_log(self) -> None:
        report = self.self_check()
        for m in report.metrics:
            if not m.polled:
                continue
            self._ins.query_empty.labels(self.name, m.metric).set(1 if m.empty else 0)
            if report.nodes:
                self._ins.nodes_without_series.labels(self.name, m.metric).set(m.nodes_without_series_count)
                self._ins.unmapped.labels(self.name, m.metric).set(m.unmapped_count)
        if not report.reachable:
            return  # the outage itself is logged by _set_fallback
        signature = tuple(report.problems())
        if signature == self._logged_check:
            return
        self._logged_check = signature
        if signature:
            log.warning("Prometheus metrics self-check found problems source=%s report=%s", self.name, report)
        else:
            log.info(
                "Metrics self-check ok source=%s nodes=%d metrics=%d",
                self.name,
                report.nodes,
                len(report.metrics),
            )

    # ------------------------------------------------------------ waiting (tests, start-up)

    def begin_wait(self) -> int:
        """Sequence number a later `wait_after` waits to see finished (waits out a poll in progress)."""
        with self._cond:
            self._cond.wait_for(lambda: not self._running, timeout=2 * self.conn.poll_interval_seconds)
            return self._started + 1

    def wait_after(self, seq: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._finished >= seq, timeout=timeout)

    @property
    def polls(self) -> int:
        return self._finished

    def close(self) -> None:
        self._client.close()
