"""Estimation: pod load, idempotent reservations, coverage by newer samples, lifetime, aligned rows."""

from __future__ import annotations

import numpy as np
import pytest

from netsched.framework.snapshot import Snapshot
from netsched.metrics import (
    CPU,
    MEMORY,
    NETWORK_RX,
    NETWORK_TX,
    EstimationArgs,
    MetricsHub,
    MetricSource,
    PrometheusArgs,
    pod_bandwidth,
    pod_load,
)
from netsched.metrics.ledger import Ledger
from netsched.testing.builders import make_node, make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import FakePrometheus, fake_hub

MI = 1024 * 1024


def test_pod_load_is_max_of_request_and_limit_times_factor() -> None:
    pod = make_pod("p").req(cpu="500m", memory="1Gi").limit(cpu="2", memory="1Gi").info()
    load = pod_load(pod, EstimationArgs())
    assert load[0] == pytest.approx(2000 * 0.85)
    assert load[1] == pytest.approx(1024 * MI * 0.70)
    bare = pod_load(make_pod("q").info(), EstimationArgs())
    assert bare[0] == pytest.approx(100 * 0.85)  # kube's scoring default for a pod without requests
    assert bare[2] == bare[3] == MI  # default bandwidth each way


def test_the_estimator_computes_each_distinct_load_once_and_tells_every_field_apart() -> None:
    est = Ledger(EstimationArgs(), FakeClock().wall, 60.0)
    base = make_pod("a").req(cpu="500m", memory="1Gi")
    same = est.load(make_pod("b").req(cpu="500m", memory="1Gi").info())
    assert est.load(base.info()) is same  # another pod of the same load: the same array
    others = [
        make_pod("c").req(cpu="600m", memory="1Gi"),
        make_pod("d").req(cpu="500m", memory="2Gi"),
        make_pod("e").req(cpu="500m", memory="1Gi").limit(cpu="2"),
        make_pod("f").req(cpu="500m", memory="1Gi").limit(memory="2Gi"),
        make_pod("g").req(cpu="500m", memory="1Gi").annotation("kubernetes.io/ingress-bandwidth", "10M"),
        make_pod("h").req(cpu="500m", memory="1Gi").annotation("kubernetes.io/egress-bandwidth", "10M"),
    ]
    for b in others:  # each field pod_load reads makes a load of its own
        pod = b.info()
        got = est.load(pod)
        assert got is not same and got.tolist() == pod_load(pod, EstimationArgs()).tolist()
    for i in range(600):  # more distinct loads than kept: still each pod's own
        pod = make_pod(f"x{i}").req(cpu=f"{i + 1}m").info()
        assert est.load(pod).tolist() == pod_load(pod, EstimationArgs()).tolist()


@pytest.mark.parametrize(
    ("ingress", "egress", "expected"),
    [("10M", "1G", (1.25e6, 1.25e8)), ("100k", None, (12500.0, MI)), ("junk", "-5M", (MI, MI))],
)
def test_bandwidth_annotations_are_bits_per_second(
    ingress: str, egress: str | None, expected: tuple[float, float]
) -> None:
    b = make_pod("p").annotation("kubernetes.io/ingress-bandwidth", ingress)
    if egress:
        b.annotation("kubernetes.io/egress-bandwidth", egress)
    assert pod_bandwidth(b.info(), MI) == expected


def setup(n: int = 3) -> tuple[FakeClock, MetricsHub, tuple[MetricSource, FakePrometheus], Snapshot]:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    src = hub.source(PrometheusArgs())
    src.require(NETWORK_RX, NETWORK_TX, CPU, MEMORY)
    snap = Snapshot.of([make_node(f"n{i}").info() for i in range(n)])
    return clock, hub, (src, fake), snap


def test_reservations_are_idempotent_per_uid_and_unreserve_restores() -> None:
    _, hub, (src, _), snap = setup()
    pod = make_pod("p").req(cpu="1").info()
    src.reserve(pod, "n1")
    src.reserve(pod, "n1")  # LoadAware, NetworkTraffic, LoadThreshold all reserve
    est = src.estimates(snap)
    assert est.cpu.tolist() == [0, 850, 0]
    src.reserve(pod, "n2")  # moved (a retry picked another node)
    assert src.estimates(snap).cpu.tolist() == [0, 0, 850]
    src.unreserve(pod)
    src.unreserve(pod)
    est = src.estimates(snap)
    assert not est.cpu.any() and not est.rx.any()
    assert len(src.ledger) == 0


def test_aligned_rows_update_incrementally() -> None:
    _, _, (src, _), snap = setup()
    src.estimates(snap)  # aligns
    rows_before = src.ledger._aligned(snap).rows
    for i in range(3):
        src.reserve(make_pod(f"p{i}").req(cpu="100m").info(), "n0")
    assert src.ledger._aligned(snap).rows is rows_before  # updated in place, not rebuilt
    assert src.estimates(snap).cpu[0] == pytest.approx(3 * 85)


def test_newer_samples_cover_estimates_per_resource_group() -> None:
    clock, hub, (src, fake), snap = setup()
    margin = src.args.estimation.cover_margin_seconds
    pod = make_pod("p").req(cpu="1", memory="1Gi").info()
    t0 = clock.wall()
    src.reserve(pod, "n0")
    # CPU sampled after the margin; memory and network sampled before it.
    fake.serve(src, CPU, {"n0": (0.1, t0 + margin + 1)})
    fake.serve(src, MEMORY, {"n0": (0.1, t0 + margin - 1)})
    fake.serve(src, NETWORK_RX, {"n0": (1.0, t0 + margin + 1)})
    fake.serve(src, NETWORK_TX, {"n0": (1.0, t0 + 1)})
    hub.poll_now()
    est = src.estimates(snap)
    assert est.cpu[0] == 0  # covered
    assert est.memory[0] > 0 and est.rx[0] > 0 and est.tx[0] > 0  # network waits for both directions
    fake.serve(src, MEMORY, {"n0": (0.1, t0 + margin + 2)})
    fake.serve(src, NETWORK_TX, {"n0": (1.0, t0 + margin + 2)})
    hub.poll_now()
    est = src.estimates(snap)
    assert not (est.cpu.any() or est.memory.any() or est.rx.any() or est.tx.any())
    assert len(src.ledger) == 0


def test_estimates_end_after_max_lifetime_without_samples() -> None:
    clock, _, (src, _), snap = setup()
    src.reserve(make_pod("p").req(cpu="1").info(), "n0")
    clock.step(119)
    assert src.estimates(snap).cpu[0] > 0
    clock.step(2)  # past 2 x maxSampleAge
    assert src.estimates(snap).cpu[0] == 0
    assert len(src.ledger) == 0


def test_estimates_of_a_removed_node_are_dropped() -> None:
    _, hub, (src, fake), snap = setup()
    src.reserve(make_pod("p").info(), "n2")
    snap.rebuild(snap.nodes[:2])
    hub.poll_now()  # a new table triggers the coverage pass
    est = src.estimates(snap)
    assert len(est.cpu) == 2 and len(src.ledger) == 0


def test_a_copy_of_the_snapshot_reads_its_own_alignment() -> None:
    # An explanation's or a rebalancer's snapshot copy is read without realigning the cycle's
    # rows: both stay current, each with its own change log.
    _, _, (src, _), snap = setup()
    src.estimates(snap)
    live = src.ledger._aligned(snap)
    copy = Snapshot.of([n.clone() for n in snap.nodes])
    src.reserve(make_pod("p").req(cpu="1").info(), "n1")
    assert src.estimates(copy).cpu.tolist() == [0, 850, 0]
    assert src.ledger._aligned(snap) is live and src.estimates(snap).cpu.tolist() == [0, 850, 0]
    gen, rows = src.ledger.changes(0, snap)
    src.unreserve(make_pod("q").info())  # nothing to take back: no change
    src.reserve(make_pod("r").req(cpu="1").info(), "n2")
    assert src.ledger.changes(gen, snap)[1] == [2] and src.ledger.changes(gen, copy)[1] is None


def test_a_fork_records_a_what_if_without_touching_the_ledger() -> None:
    clock, hub, (src, fake), snap = setup()
    for m in (CPU, MEMORY, NETWORK_RX, NETWORK_TX):
        fake.serve(src, m, {"n0": 0.1, "n1": 0.1, "n2": 0.1})
    hub.poll_now()
    clock.step(1)
    src.reserve(make_pod("p").req(cpu="1").info(), "n0")
    fork = src.ledger.fork()
    fork.depart(make_pod("x").req(cpu="2").node("n2").info(), clock.wall())  # a plan's eviction
    fork.add(make_pod("y").req(cpu="1").info(), "n1")
    what_if = Snapshot.of([n.clone() for n in snap.nodes])
    got = fork.rows(what_if, src.poller.table.version, lambda: src.view(snap)._coverage())
    assert got[:, 0].tolist() == [850, 850, -1700]
    assert src.estimates(snap).cpu.tolist() == [850, 0, 0] and len(src.ledger) == 1


def test_a_what_if_snapshot_reads_its_fork_through_every_view() -> None:
    clock, hub, (src, fake), snap = setup()
    for m in (CPU, MEMORY, NETWORK_RX, NETWORK_TX):
        fake.serve(src, m, {"n0": 0.1, "n1": 0.1, "n2": 0.1})
    hub.poll_now()
    what_if = Snapshot.of([n.clone() for n in snap.nodes])
    fork = src.what_if(what_if)
    assert src.what_if(what_if) is fork
    fork.add(make_pod("moved").req(cpu="1").info(), "n1")  # a plan's replacement
    assert src.view(what_if).ledger is fork and src.estimates(what_if).cpu.tolist() == [0, 850, 0]
    assert src.estimates(snap).cpu.tolist() == [0, 0, 0]  # the cycle's snapshot: the live ledger
    hub.poll_now()  # a new table: a new view on the what-if snapshot still reads the fork
    assert src.view(what_if).ledger is fork


def test_estimates_survive_a_relayout() -> None:
    _, _, (src, _), snap = setup()
    src.reserve(make_pod("p").req(cpu="1").info(), "n2")
    src.estimates(snap)
    snap.rebuild(list(reversed(snap.nodes)))
    assert np.flatnonzero(src.estimates(snap).cpu).tolist() == [0]


def test_changed_rows_are_logged_for_readers_and_a_reader_far_behind_recomputes_everything() -> None:
    _, _, (src, _), snap = setup()
    est = src.ledger
    src.estimates(snap)  # aligns
    start, _ = est.changes(0, snap)
    pod = make_pod("p").req(cpu="1").info()
    src.reserve(pod, "n2")
    gen, rows = est.changes(start, snap)
    assert rows == [2]
    assert est.changes(gen, snap)[1] == []
    for _ in range(3000):  # 6000 changes: more than the log keeps
        src.unreserve(pod)
        src.reserve(pod, "n1")
    assert est.changes(gen, snap)[1] is None


def test_settled_says_when_reading_the_rows_would_change_nothing() -> None:
    clock, hub, (src, _), snap = setup()
    est = src.ledger
    version = src.poller.table.version
    assert est.settled(version, snap, clock.wall()) is None  # never read: not aligned yet
    src.estimates(snap)  # aligns and syncs with the table
    gen = est.settled(version, snap, clock.wall())
    assert gen is not None and gen == est.changes(0, snap)[0]
    src.reserve(make_pod("p").req(cpu="1").info(), "n0")
    assert est.settled(version, snap, clock.wall()) == gen + 1  # a reservation: new generation
    lifetime = src.args.estimation.max_lifetime_seconds
    assert est.settled(version, snap, clock.wall() + lifetime) is not None  # not past it yet
    assert est.settled(version, snap, clock.wall() + lifetime + 1) is None  # the pod expires
    assert est.settled(version + 1, snap, clock.wall()) is None  # a new table: coverage pass
    other = Snapshot.of(list(snap.nodes))
    assert est.settled(version, other, clock.wall()) is None  # another layout: realign
