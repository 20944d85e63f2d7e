"""LeaderElector against an in-memory Lease store, with time stepped by hand.

Each elector runs on a thread as in production; the test clock knows when the
elector is parked in wait(), so a test can advance time in small steps and
let every due attempt happen before looking at the outcome.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from netsched.clock import microtime
from netsched.kube.errors import AlreadyExists, Conflict, ServerError
from netsched.kube.lease import Lease, LeaseRecord
from netsched.leaderelection import WATCHDOG_GRACE, ElectorConfig, LeaderElector
from netsched.observability.metrics import SchedulerMetrics
from netsched.testing.clock import FakeClock

NS, NAME = "netsched-system", "netsched"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class StepClock(FakeClock):
    """A FakeClock that can tell when every waiter has caught up with the time."""

    def __init__(self) -> None:
        super().__init__()
        self._waiting: dict[int, float] = {}
        self.threads: list[threading.Thread] = []

    def wait(self, event: threading.Event, seconds: float) -> bool:
        me = threading.get_ident()
        self._waiting[me] = self.now() + seconds
        try:
            return super().wait(event, seconds)
        finally:
            del self._waiting[me]

    def settle(self) -> None:
        """Return once every live elector thread waits for a time still ahead."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            live = [t.ident for t in self.threads if t.is_alive()]
            if all(ident in self._waiting and self._waiting[ident] > self.now() for ident in live):
                return
            time.sleep(0.001)
        raise AssertionError("elector threads did not settle")

    def advance(self, seconds: float, step: float = 0.25) -> None:
        end = self.now() + seconds
        while self.now() < end - 1e-9:
            self.step(min(step, end - self.now()))
            self.settle()


class LeaseStore:
    """Leases in a dict, with resourceVersion checks like the API server."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0

    def client(self) -> StoreClient:
        return StoreClient(self)

    def lease(self) -> Lease | None:
        with self.lock:
            obj = self.objects.get((NS, NAME))
            return None if obj is None else Lease.from_object(_copy(obj))

    def put(self, record: LeaseRecord) -> Lease:
        """Write as another party would, regardless of resourceVersion."""
        with self.lock:
            return self._write(NS, NAME, record)

    def _write(self, namespace: str, name: str, record: LeaseRecord) -> Lease:
        self.rv += 1
        obj = {
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": str(self.rv)},
            "spec": record.to_spec(),
        }
        self.objects[(namespace, name)] = obj
        return Lease.from_object(_copy(obj))


def holder(store: LeaseStore) -> str | None:
    lease = store.lease()
    return None if lease is None else lease.record.holder_identity


class StoreClient:
    """One replica's connection to the store: it can be cut off on its own."""

    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.failing = False
        self.calls: list[str] = []

    def _call(self, verb: str) -> None:
        self.calls.append(verb)
        if self.failing:
            raise ServerError(503, "ServiceUnavailable", verb)

    def get(self, namespace: str, name: str, timeout: float) -> Lease | None:
        self._call("get")
        with self.store.lock:
            obj = self.store.objects.get((namespace, name))
            return None if obj is None else Lease.from_object(_copy(obj))

    def create(self, namespace: str, name: str, record: LeaseRecord, timeout: float) -> Lease:
        self._call("create")
        with self.store.lock:
            if (namespace, name) in self.store.objects:
                raise AlreadyExists(409, "AlreadyExists", name)
            return self.store._write(namespace, name, record)

    def replace(self, lease: Lease, record: LeaseRecord, timeout: float) -> Lease:
        self._call("replace")
        with self.store.lock:
            current = self.store.objects[(lease.namespace, lease.name)]
            if current["metadata"]["resourceVersion"] != lease.resource_version:
                raise Conflict(409, "Conflict", "the object has been modified")
            return self.store._write(lease.namespace, lease.name, record)


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in obj.items()}


class Recorder:
    """Callbacks that log what happened, with the fake time."""

    def __init__(self, clock: FakeClock, who: str, events: list[tuple[float, str, str]]) -> None:
        self.clock, self.who, self.events = clock, who, events

    def started(self) -> None:
        self.events.append((self.clock.now(), self.who, "started"))

    def stopped(self) -> None:
        self.events.append((self.clock.now(), self.who, "stopped"))

    def new_leader(self, identity: str) -> None:
        self.events.append((self.clock.now(), self.who, f"leader={identity}"))


def config(identity: str, **kw: float) -> ElectorConfig:
    return ElectorConfig(name=NAME, namespace=NS, identity=identity, jitter_factor=0.0, **kw)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def store() -> LeaseStore:
    return LeaseStore()


@pytest.fixture
def events() -> list[tuple[float, str, str]]:
    return []


@pytest.fixture
def start(
    clock: StepClock, store: LeaseStore, events: list[tuple[float, str, str]]
) -> Iterator[Callable[..., tuple[LeaderElector, StoreClient]]]:
    stops: list[threading.Event] = []

    def start(
        identity: str, client: StoreClient | None = None, **kw: object
    ) -> tuple[LeaderElector, StoreClient]:
        client = client or store.client()
        rec = Recorder(clock, identity, events)
        stop = kw.setdefault("stop", threading.Event())
        stops.append(stop)  # type: ignore[arg-type]
        elector = LeaderElector(
            kw.pop("cfg", None) or config(identity),  # type: ignore[arg-type]
            client,
            clock=clock,
            **{  # type: ignore[arg-type]
                "on_started_leading": rec.started,
                "on_stopped_leading": rec.stopped,
                "on_new_leader": rec.new_leader,
                **kw,
            },
        )
        thread = threading.Thread(target=elector.run, daemon=True)
        clock.threads.append(thread)
        thread.start()
        clock.settle()
        return elector, client

    yield start
    for stop in stops:
        stop.set()
    for thread in clock.threads:
        thread.join(timeout=5)
        assert not thread.is_alive(), "run() did not return after stop"


def test_acquires_a_missing_lease(
    start: Callable[..., tuple[LeaderElector, StoreClient]],
    store: LeaseStore,
    events: list[tuple[float, str, str]],
) -> None:
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    elector, _ = start("a", gauge=metrics.leader)

    assert elector.is_leader and elector.leader == "a"
    lease = store.lease()
    assert lease is not None
    assert lease.record.holder_identity == "a"
    assert lease.record.lease_duration_seconds == 15
    assert lease.record.lease_transitions == 0
    assert MICRO_TIME.match(lease.record.renew_time or "")
    assert lease.record.acquire_time == lease.record.renew_time
    assert [e[2] for e in events] == ["leader=a", "started"]
    assert registry.get_sample_value("netsched_leader") == 1.0


def test_renews_every_retry_period_keeping_acquire_time(
    start: Callable[..., tuple[LeaderElector, StoreClient]], store: LeaseStore, clock: StepClock
) -> None:
    elector, client = start("a")
    first = store.lease()
    assert first is not None
    client.calls.clear()

    clock.advance(2.0)
    second = store.lease()
    assert second is not None and second.resource_version != first.resource_version
    assert second.record.renew_time != first.record.renew_time
    assert second.record.acquire_time == first.record.acquire_time
    assert second.record.lease_transitions == 0
    # The leader renews from what it wrote last: one PUT, no GET.
    assert client.calls == ["replace"]

    clock.advance(20.0)
    assert elector.is_leader
    assert client.calls == ["replace"] * 11


def test_leader_stops_before_a_standby_can_take_over(
    start: Callable[..., tuple[LeaderElector, StoreClient]],
    clock: StepClock,
    events: list[tuple[float, str, str]],
) -> None:
    a, a_client = start("a")
    acquired_at = clock.now()
    b, _ = start("b")
    assert a.is_leader and not b.is_leader and b.leader == "a"

    a_client.failing = True  # a is cut off from the API server; b is not
    clock.advance(30.0)

    assert not a.is_leader and b.is_leader
    stopped = [t for t, who, what in events if (who, what) == ("a", "stopped")]
    started = [t for t, who, what in events if (who, what) == ("b", "started")]
    assert len(stopped) == 1 and len(started) == 1
    # a's last good renew was at acquired_at + 0 (the next ones all failed).
    assert stopped[0] == pytest.approx(acquired_at + 10.0)
    assert started[0] >= acquired_at + 15.0
    assert stopped[0] < started[0]


def test_lost_leader_campaigns_again(
    start: Callable[..., tuple[LeaderElector, StoreClient]],
    clock: StepClock,
    events: list[tuple[float, str, str]],
) -> None:
    a, client = start("a")
    client.failing = True
    clock.advance(10.0)
    assert not a.is_leader
    client.failing = False
    clock.advance(2.0)
    # Nobody else took it: a may hold its own lease again.
    assert a.is_leader
    assert [what for _, _, what in events] == ["leader=a", "started", "stopped", "started"]


def test_standby_takes_over_only_after_the_lease_expires_by_its_own_clock(
    start: Callable[..., tuple[LeaderElector, StoreClient]], store: LeaseStore, clock: StepClock
) -> None:
    # The remote renewTime is far in the past; only local observation counts.
    old = microtime(clock.wall() - 3600)
    store.put(LeaseRecord("other", 15, old, old, 4))
    b, _ = start("b")
    assert not b.is_leader and b.leader == "other"

    clock.advance(14.0)
    assert not b.is_leader
    clock.advance(2.0)
    assert b.is_leader
    lease = store.lease()
    assert lease is not None
    assert lease.record.holder_identity == "b"
    assert lease.record.lease_transitions == 5
    assert lease.record.acquire_time == lease.record.renew_time != old


def test_standby_never_takes_a_lease_that_keeps_being_renewed(
    start: Callable[..., tuple[LeaderElector, StoreClient]], store: LeaseStore, clock: StepClock
) -> None:
    store.put(LeaseRecord("other", 15, "t0", "t0", 0))
    b, _ = start("b")
    for i in range(10):
        clock.advance(5.0)
        store.put(LeaseRecord("other", 15, "t0", f"t{i + 1}", 0))
    assert not b.is_leader


def test_release_hands_over_at_once(
    start: Callable[..., tuple[LeaderElector, StoreClient]],
    store: LeaseStore,
    clock: StepClock,
    events: list[tuple[float, str, str]],
) -> None:
    a, _ = start("a")
    b, _ = start("b")
    holder_when_stopped: list[str | None] = []
    a._on_stopped = lambda: holder_when_stopped.append(holder(store))

    assert a.release()
    # Scheduling stopped while the lease was still ours, so no two leaders overlap.
    assert holder_when_stopped == ["a"]
    lease = store.lease()
    assert lease is not None
    assert lease.record.holder_identity == "" and lease.record.lease_duration_seconds == 1
    assert not a.is_leader and a.stopped

    clock.advance(2.0)  # b's next try, not a whole lease duration
    assert b.is_leader
    assert store.lease().record.lease_transitions == 1  # type: ignore[union-attr]
    assert not a.release()  # already released


def test_stop_while_leading_releases(
    start: Callable[..., tuple[LeaderElector, StoreClient]], store: LeaseStore, clock: StepClock
) -> None:
    stop = threading.Event()
    a, _ = start("a", stop=stop)
    stop.set()  # the app's shutdown event
    clock.threads[0].join(timeout=5)
    assert not clock.threads[0].is_alive()
    assert holder(store) == ""


def test_stop_without_release_on_cancel_keeps_the_lease(
    start: Callable[..., tuple[LeaderElector, StoreClient]],
    store: LeaseStore,
    clock: StepClock,
    events: list[tuple[float, str, str]],
) -> None:
    stop = threading.Event()
    a, _ = start("a", cfg=replace(config("a"), release_on_cancel=False), stop=stop)
    stop.set()
    clock.threads[0].join(timeout=5)
    assert holder(store) == "a"
    assert events[-1][2] == "stopped"


def test_conflict_on_renew_rereads_and_keeps_leading(
    start: Callable[..., tuple[LeaderElector, StoreClient]], store: LeaseStore, clock: StepClock
) -> None:
    a, client = start("a")
    lease = store.lease()
    assert lease is not None
    store.put(lease.record)  # same content, new resourceVersion: a's next PUT gets 409
    client.calls.clear()

    clock.advance(2.0)
    assert a.is_leader
    assert client.calls == ["replace", "get", "replace"]
    assert holder(store) == "a"


def test_lease_taken_by_someone_else_stops_leading_at_once(
    start: Callable[..., tuple[LeaderElector, StoreClient]], store: LeaseStore, clock: StepClock
) -> None:
    a, _ = start("a")
    store.put(LeaseRecord("intruder", 15, "x", "x", 1))
    clock.advance(2.0)
    assert not a.is_leader and a.leader == "intruder"


def test_create_race_is_lost_quietly(
    start: Callable[..., tuple[LeaderElector, StoreClient]], store: LeaseStore, clock: StepClock
) -> None:
    class Racing(StoreClient):
        def create(self, namespace: str, name: str, record: LeaseRecord, timeout: float) -> Lease:
            store.put(LeaseRecord("other", 15, "t", "t", 0))  # the other replica got there first
            return super().create(namespace, name, record, timeout)

    b, _ = start("b", client=Racing(store))
    assert not b.is_leader
    clock.advance(2.0)
    assert b.leader == "other" and not b.is_leader


def test_retry_is_jittered_between_one_and_one_plus_factor_periods(
    store: LeaseStore, clock: StepClock
) -> None:
    store.put(LeaseRecord("other", 15, "t", "t", 0))
    client = store.client()
    cfg = ElectorConfig(name=NAME, namespace=NS, identity="b")
    elector = LeaderElector(cfg, client, clock=clock)
    thread = threading.Thread(target=elector.run, daemon=True)
    clock.threads.append(thread)
    thread.start()
    try:
        attempts = []
        for i in range(20):
            store.put(LeaseRecord("other", 15, "t", f"t{i}", 0))  # kept renewed: b stays a candidate
            clock.settle()
            attempts.append(clock.now())
            waits = list(clock._waiting.values())
            clock.step(waits[0] - clock.now())
        gaps = [b - a for a, b in zip(attempts, attempts[1:], strict=False)]
        assert all(2.0 <= g <= 2.0 * 2.2 for g in gaps)
        assert max(gaps) - min(gaps) > 0.1
    finally:
        elector.stop(release=False)
        thread.join(timeout=5)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"lease_duration": 10.0, "renew_deadline": 10.0}, "leaseDuration must be greater"),
        ({"renew_deadline": 2.0, "retry_period": 2.0}, "renewDeadline must be greater"),
        ({"retry_period": 0.0}, "must be positive"),
        ({"name": ""}, "name and namespace are required"),
    ],
)
def test_config_is_validated(kw: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"name": NAME, "namespace": NS} | kw
    with pytest.raises(ValueError, match=message):
        ElectorConfig(**args)  # type: ignore[arg-type]


def test_default_identity_is_hostname_and_uuid() -> None:
    a = ElectorConfig(name=NAME, namespace=NS)
    b = ElectorConfig(name=NAME, namespace=NS)
    assert re.match(r"^.+_[0-9a-f-]{36}$", a.identity)
    assert a.identity != b.identity
    assert a.lease_duration_seconds == 15
    assert replace(a, lease_duration=1.5, renew_deadline=1.0, retry_period=0.2).lease_duration_seconds == 2


def test_from_config_takes_the_loaded_leader_election_block() -> None:
    from netsched.config import LeaderElectionConfig

    le = LeaderElectionConfig(
        resource_name="netsched", resource_namespace="netsched-system", lease_duration=20.0
    )
    cfg = ElectorConfig.from_config(le, identity="me")
    assert (cfg.name, cfg.namespace, cfg.identity) == ("netsched", "netsched-system", "me")
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (20.0, 10.0, 2.0)
    assert ElectorConfig.from_config(le).identity != ""


def test_gauge_hook_may_be_a_plain_callable(store: LeaseStore, clock: StepClock) -> None:
    seen: list[bool] = []
    LeaderElector(config("a"), store.client(), clock=clock, gauge=seen.append)
    assert seen == [False]


def test_a_failing_callback_does_not_stop_the_election(
    start: Callable[..., tuple[LeaderElector, StoreClient]], clock: StepClock
) -> None:
    def broken() -> None:
        raise RuntimeError("callback bug")

    a, client = start("a", on_started_leading=broken)
    client.calls.clear()
    clock.advance(4.0)
    assert a.is_leader
    assert client.calls == ["replace", "replace"]


def test_start_and_stop_manage_the_thread(store: LeaseStore, clock: StepClock) -> None:
    elector = LeaderElector(config("a"), store.client(), clock=clock).start()
    assert elector._thread is not None
    clock.threads.append(elector._thread)
    clock.settle()
    assert elector.is_leader
    with pytest.raises(RuntimeError):
        elector.start()
    elector.stop(release=False)  # let the lease run out instead of handing it over
    assert not elector._thread.is_alive()
    assert not elector.is_leader
    assert holder(store) == "a"


def test_stop_releases_by_default(store: LeaseStore, clock: StepClock) -> None:
    elector = LeaderElector(config("a"), store.client(), clock=clock).start()
    assert elector._thread is not None
    clock.threads.append(elector._thread)
    clock.settle()
    elector.stop()
    assert not elector._thread.is_alive()
    assert holder(store) == ""


def test_the_watchdog_passes_a_renewing_leader_and_a_campaigning_standby(
    start: Callable[..., tuple[LeaderElector, StoreClient]], clock: StepClock
) -> None:
    leader, _ = start("a")
    standby, _ = start("b")
    assert leader.is_leader and not standby.is_leader
    clock.advance(3 * (15 + WATCHDOG_GRACE))  # many renewals and attempts later
    assert leader.check() is None and standby.check() is None
    leader.stop(release=False)
    assert leader.check() is None  # stopped: shutting down, not wedged


def test_the_watchdog_fails_an_elector_that_stopped_trying(clock: StepClock, store: LeaseStore) -> None:
    # Never run: as wedged as an elector gets. Limit: leaseDuration 15 s + the 20 s grace.
    elector = LeaderElector(config("a"), store.client(), clock=clock)
    clock.step(15 + WATCHDOG_GRACE)
    assert elector.check() is None
    clock.step(1)
    assert elector.check() == f"no attempt to acquire lease {NS}/{NAME} for 36s (limit 35s)"
