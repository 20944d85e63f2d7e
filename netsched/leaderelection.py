"""Leader election over a coordination.k8s.io/v1 Lease, with client-go's semantics.

Several replicas run for availability; exactly one may schedule, or two would
bind pods against the same free capacity. The official client's
kubernetes.leaderelection cannot be stopped, cannot release its lease and
calls sys.exit on bad config, so this is a small elector of our own with an
injected clock (tests step time instead of sleeping).

The rules, as in client-go:
- A candidate tries every retry_period (with jitter). It takes the Lease when
  none exists, when it already holds it, when the holder is empty (released),
  or when the record has not changed for leaseDurationSeconds *as measured by
  our own clock since we first saw that record*. Remote timestamps are never
  compared with local time, so clock skew between nodes cannot cause a steal.
- The leader renews every retry_period. If no renew has succeeded for
  renew_deadline it stops leading. A renew counts from the moment its request
  was sent, and every call is bounded by the time left, so leading stops before
  anyone else can see the record unchanged for lease_duration
  (renew_deadline < lease_duration is the safety margin).
- Writes carry the resourceVersion read; a 409 means someone else wrote first,
  so the next attempt starts by reading again.
- release() first stops leading, then writes holderIdentity "" and
  leaseDurationSeconds 1, so a standby takes over at its next try instead of
  waiting out the lease.

Callbacks run on the election thread and must return quickly (set an Event,
not run the scheduler): on_started_leading(), on_stopped_leading() and
on_new_leader(identity) for every change of the observed holder.
"""

from __future__ import annotations

import logging
import math
import random
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from netsched.clock import Clock, SystemClock, microtime
from netsched.kube.errors import ApiError, Conflict
from netsched.kube.lease import Lease, LeaseClient, LeaseRecord

log = logging.getLogger(__name__)

# kube-scheduler's NewLeaderHealthzAdaptor(20 * time.Second): how long past its lease a leader
# that stopped renewing still counts as healthy.
WATCHDOG_GRACE = 20.0


class GaugeLike(Protocol):
    """A prometheus_client Gauge such as SchedulerMetrics.leader."""

    def set(self, value: float) -> None: ...


class LeaderElectionSettings(Protocol):
    """The fields of netsched.config.LeaderElectionConfig the elector reads."""

    resource_name: str
    resource_namespace: str
    lease_duration: float
    renew_deadline: float
    retry_period: float


def default_identity() -> str:
    """hostname_uuid, as kube-scheduler builds it: unique even across restarts of one pod."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class ElectorConfig:
    """Times in seconds; defaults are kube-scheduler's. The lease name comes from
    the config layer (derived from the first profile's schedulerName); build this
    from the loaded leaderElection block with from_config()."""

    name: str
    namespace: str
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    jitter_factor: float = 1.2
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        problems = []
        if not self.name or not self.namespace:
            problems.append("lease name and namespace are required")
        if not self.identity:
            problems.append("identity must not be empty")
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            problems.append("leaseDuration, renewDeadline and retryPeriod must be positive")
        if self.lease_duration <= self.renew_deadline:
            problems.append("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= self.jitter_factor * self.retry_period:
            problems.append(f"renewDeadline must be greater than retryPeriod*{self.jitter_factor}")
        if problems:
            raise ValueError("invalid leader election config: " + "; ".join(problems))

    @classmethod
    def from_config(cls, le: LeaderElectionSettings, identity: str = "") -> ElectorConfig:
        """From netsched.config's LeaderElectionConfig (the YAML leaderElection block)."""
        return cls(
            name=le.resource_name,
            namespace=le.resource_namespace,
            identity=identity or default_identity(),
            lease_duration=le.lease_duration,
            renew_deadline=le.renew_deadline,
            retry_period=le.retry_period,
        )

    @property
    def lease_duration_seconds(self) -> int:
        # The Lease holds whole seconds; rounding down would let others expire us early.
        return math.ceil(self.lease_duration)


class LeaderElector:
    """Campaigns for one Lease and reports leadership through callbacks.

        elector = LeaderElector(ElectorConfig.from_config(cfg.leader_election), leases,
                                on_started_leading=..., on_stopped_leading=...,
                                gauge=metrics.leader).start()
        ...
        elector.stop()  # on SIGTERM: stop leading, release the lease, return

    start() runs run() on a daemon thread; run() itself blocks until the stop
    event is set (the one passed in, or stop()/release()). A leader that loses
    its lease goes back to being a candidate. Stopping while leading releases
    the lease when config.release_on_cancel (the default).
    """

    def __init__(
        self,
        config: ElectorConfig,
        leases: LeaseClient,
        *,
        clock: Clock | None = None,
        stop: threading.Event | None = None,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        gauge: GaugeLike | Callable[[bool], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._stop = stop if stop is not None else threading.Event()
        self._leases = leases
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._gauge = _gauge_setter(gauge)
        self._rng = rng if rng is not None else random.Random()
        # Serialises API use between run() and release().
        self._lock = threading.Lock()
        self._flag_lock = threading.Lock()
        self._lease: Lease | None = None
        self._observed: LeaseRecord | None = None
        self._observed_time = 0.0
        self._leading = False
        self._renewed_at = 0.0
        # When the last acquire-or-renew attempt began: the health check's standby heartbeat.
        self._attempted_at = self._clock.now()
        self._released = False
        self._release_on_exit = config.release_on_cancel
        self._reported_leader = ""
        self._thread: threading.Thread | None = None
        self._gauge(False)

    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def leader(self) -> str:
        """The holder we last observed ("" while unknown or released)."""
        return self._observed.holder_identity if self._observed is not None else ""

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def check(self, grace: float = WATCHDOG_GRACE) -> str | None:
        """client-go's leader-election watchdog (kube-scheduler's healthz "leaderElection"): None
        while healthy, else why not. A leader that has not renewed for leaseDuration + `grace` is
        wedged (its renew loop would have given up at renewDeadline had it been running); so is
        a standby that has not even tried for as long. A stopped elector is healthy (shutting down)."""
        if self._stop.is_set():
            return None
        limit = self.config.lease_duration + grace
        lease = f"{self.config.namespace}/{self.config.name}"
        if self._leading:
            since = self._clock.now() - self._renewed_at
            if since > limit:
                return f"leader has not renewed lease {lease} for {since:.0f}s (limit {limit:.0f}s)"
            return None
        since = self._clock.now() - self._attempted_at
        if since > limit:
            return f"no attempt to acquire lease {lease} for {since:.0f}s (limit {limit:.0f}s)"
        return None

    # --- the loop -------------------------------------------------------------

    def start(self) -> LeaderElector:
        """Run the election on a daemon thread; returns self."""
        if self._thread is not None:
            raise RuntimeError("LeaderElector already started")
        self._thread = threading.Thread(target=self.run, name="leader-election", daemon=True)
        self._thread.start()
        return self

    def stop(self, release: bool = True, timeout: float | None = None) -> None:
        """Stop campaigning and wait for run() to return. If leading, stop leading
        and, with `release`, hand the lease over at once (else it runs out)."""
        if release:
            self.release()
        else:
            self._release_on_exit = False
            self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self.config.renew_deadline + 1.0 if timeout is None else timeout)

    def run(self) -> None:
        log.info(
            'Starting leader election lease="%s/%s" identity="%s"',
            self.config.namespace,
            self.config.name,
            self.identity,
        )
        try:
            while self._acquire():
                self._renew_until_lost()
        finally:
            if self._leading:
                if self._release_on_exit:
                    self.release()
                else:
                    self._stop_leading("stopped", logging.INFO)

    def _acquire(self) -> bool:
        """Try until we hold the lease (True) or are told to stop (False)."""
        while not self._stop.is_set():
            started = self._clock.now()
            if self._try_acquire_or_renew(started, started + self.config.renew_deadline):
                self._start_leading(started)
                return True
            wait = self.config.retry_period * (1.0 + self._rng.random() * self.config.jitter_factor)
            if self._clock.wait(self._stop, wait):
                break
        return False

    def _renew_until_lost(self) -> None:
        while True:
            deadline = self._renewed_at + self.config.renew_deadline
            wait = min(self.config.retry_period, deadline - self._clock.now())
            if self._clock.wait(self._stop, wait):
                return
            started = self._clock.now()
            if started < deadline and self._try_acquire_or_renew(started, deadline):
                self._renewed_at = started
                continue
            if self._observed is not None and self._observed.holder_identity not in ("", self.identity):
                # Someone else holds it (an operator edited it, or we stalled): stop at once.
                self._stop_leading(f"lease taken by {self._observed.holder_identity}")
                return
            if self._clock.now() >= deadline:
                self._stop_leading("failed to renew lease within the renew deadline")
                return

    # --- one attempt ----------------------------------------------------------

    def _try_acquire_or_renew(self, now: float, deadline: float) -> bool:
        """One client-go tryAcquireOrRenew; every call gets only the time left before `deadline`."""
        self._attempted_at = now
        with self._lock:
            if self._stop.is_set() or self._released:
                return False
            stamp = microtime(self._clock.wall())
            if self._leading and self._lease is not None and self._valid(now):
                # Fast path: renew with what we wrote last; a 409 falls back to a fresh read.
                try:
                    held = self._lease.record
                    self._store(self._replace(self._lease, self._ours(held, stamp), deadline), now)
                    return True
                except ApiError as e:
                    log.info("Failed to renew lease optimistically, re-reading it err=%s", e)
            try:
                lease = self._leases.get(self.config.namespace, self.config.name, self._left(deadline))
                if lease is None:
                    record = LeaseRecord(self.identity, self.config.lease_duration_seconds, stamp, stamp, 0)
                    lease = self._leases.create(
                        self.config.namespace, self.config.name, record, self._left(deadline)
                    )
                    self._store(lease, now)
                    return True
                self._store(lease, now)
                held = lease.record
                if held.holder_identity not in ("", self.identity) and self._valid(now):
                    log.debug('Lease is held by another candidate holder="%s"', held.holder_identity)
                    return False
                self._store(self._replace(lease, self._ours(held, stamp), deadline), now)
                return True
            except Conflict as e:
                log.info("Lost a race for the lease, will re-read it err=%s", e)
            except ApiError as e:
                log.warning(
                    'Failed to acquire or renew lease lease="%s/%s" err=%s',
                    self.config.namespace,
                    self.config.name,
                    e,
                )
            return False

    def _ours(self, held: LeaseRecord, stamp: str) -> LeaseRecord:
        """The record we write: acquire time and transition count move only on a change of holder."""
        mine = held.holder_identity == self.identity
        return LeaseRecord(
            holder_identity=self.identity,
            lease_duration_seconds=self.config.lease_duration_seconds,
            acquire_time=held.acquire_time if mine else stamp,
            renew_time=stamp,
            lease_transitions=held.lease_transitions if mine else held.lease_transitions + 1,
        )

    def _replace(self, lease: Lease, record: LeaseRecord, deadline: float) -> Lease:
        return self._leases.replace(lease, record, self._left(deadline))

    def _left(self, deadline: float) -> float:
        left = deadline - self._clock.now()
        if left <= 0:
            raise ApiError(0, "DeadlineExceeded", "no time left before the renew deadline")
        return left

    def _valid(self, now: float) -> bool:
        """Whether the observed record is still within its lease, by our clock."""
        assert self._observed is not None
        return self._observed_time + self._observed.lease_duration_seconds > now

    def _store(self, lease: Lease, now: float) -> None:
        self._lease = lease
        if lease.record != self._observed:
            self._observed = lease.record
            self._observed_time = now
        holder = lease.record.holder_identity
        if holder and holder != self._reported_leader:
            self._reported_leader = holder
            if holder != self.identity:
                log.info('New leader elected leader="%s"', holder)
            if self._on_new_leader is not None:
                _call(self._on_new_leader, holder)

    # --- leadership changes ---------------------------------------------------

    def _start_leading(self, renewed_at: float) -> None:
        self._renewed_at = renewed_at
        self._leading = True
        self._gauge(True)
        log.info(
            'Successfully acquired lease lease="%s/%s" identity="%s"',
            self.config.namespace,
            self.config.name,
            self.identity,
        )
        if self._on_started is not None:
            _call(self._on_started)

    def _stop_leading(self, reason: str, level: int = logging.WARNING) -> None:
        with self._flag_lock:  # run() and release() may both get here; report once
            if not self._leading:
                return
            self._leading = False
        self._gauge(False)
        lease = f"{self.config.namespace}/{self.config.name}"
        log.log(level, 'Stopped leading lease="%s" reason="%s"', lease, reason)
        if self._on_stopped is not None:
            _call(self._on_stopped)

    def release(self) -> bool:
        """Stop leading and hand the lease over at once; ends run(). True if a lease
        we held was released. Safe to call from any thread, e.g. on SIGTERM."""
        self._stop.set()
        with self._lock:
            # The lock waits out a renew in flight; stop is set, so none follows.
            if self._released:
                return False
            self._released = True
            self._stop_leading("released", logging.INFO)
            lease = self._lease
            if lease is None or lease.record.holder_identity != self.identity:
                return False
            stamp = microtime(self._clock.wall())
            record = LeaseRecord("", 1, stamp, stamp, lease.record.lease_transitions)
            timeout = self.config.renew_deadline
            try:
                try:
                    lease = self._leases.replace(lease, record, timeout)
                except Conflict:
                    current = self._leases.get(self.config.namespace, self.config.name, timeout)
                    if current is None or current.record.holder_identity != self.identity:
                        return False
                    lease = self._leases.replace(current, record, timeout)
            except ApiError as e:
                log.warning('Failed to release lease lease="%s/%s" err=%s', lease.namespace, lease.name, e)
                return False
            self._store(lease, self._clock.now())
            log.info('Released lease lease="%s/%s"', lease.namespace, lease.name)
            return True


def _gauge_setter(hook: GaugeLike | Callable[[bool], None] | None) -> Callable[[bool], None]:
    if hook is None:
        return lambda _leading: None
    if callable(hook):
        return hook
    gauge = hook
    return lambda leading: gauge.set(1.0 if leading else 0.0)


def _call(callback: Callable[..., None], *args: str) -> None:
    # A failing callback must not kill the election thread and leave a leader that never renews.
    try:
        callback(*args)
    except Exception:
        log.exception("Leader election callback failed callback=%r", callback)
