"""The ledger: what a reading over a rate window holds of pods placed and gone, and the correction
that turns it into "load now" (netsched/metrics/ledger.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netsched.framework.snapshot import Snapshot
from netsched.metrics import CPU, MEMORY, NETWORK_RX, NETWORK_TX, PrometheusArgs
from netsched.metrics.ledger import held
from netsched.metrics.queries import POD_USAGE
from netsched.testing.builders import make_node, make_pod
from netsched.testing.clock import FakeClock
from netsched.testing.prometheus import fake_hub

INF = math.inf


@pytest.mark.parametrize(
    ("start", "end", "ts", "window", "want"),
    [
        (0.0, INF, 60.0, 60.0, 1.0),  # placed a whole window before the reading: all of it
        (30.0, INF, 60.0, 60.0, 0.5),  # placed half a window before: ramping in
        (60.0, INF, 60.0, 60.0, 0.0),  # placed at the reading
        (90.0, INF, 60.0, 60.0, 0.0),  # placed after it
        (-INF, 30.0, 60.0, 60.0, 0.5),  # gone half a window before: half still in it
        (-INF, 0.0, 60.0, 60.0, 0.0),  # gone a whole window before: out of it
        (-INF, 90.0, 60.0, 60.0, 1.0),  # gone after the reading: all of it
        (20.0, 40.0, 60.0, 60.0, 20.0 / 60.0),  # came and went inside the window
        (0.0, INF, 10.0, 0.0, 1.0),  # a gauge holds a running pod whole
        (20.0, INF, 10.0, 0.0, 0.0),  # ... once it has started
        (-INF, 5.0, 10.0, 0.0, 0.0),  # ... and nothing of a pod gone before it was read
        (0.0, INF, math.nan, 60.0, 0.0),  # no sample: nothing
    ],
)
def test_what_a_reading_holds(start: float, end: float, ts: float, window: float, want: float) -> None:
    assert held(start, end, ts, window) == pytest.approx(want)


def rig(per_pod: bool = False) -> tuple[FakeClock, object, object, Snapshot]:
    clock = FakeClock()
    hub, fake = fake_hub(clock)
    src = hub.source(PrometheusArgs(per_pod_usage=per_pod))  # rateWindow 1m, margin 60 s
    src.require(NETWORK_RX, NETWORK_TX, CPU, MEMORY)
    snap = Snapshot.of([make_node(f"n{i}").capacity(cpu="4", memory="8Gi").info() for i in range(2)])
    return clock, hub, (src, fake), snap


def serve(hub: object, src: object, fake: object, at: float) -> None:
    """A poll whose every sample is stamped `at`."""
    for m in (NETWORK_RX, NETWORK_TX, CPU, MEMORY):
        fake.serve(src, m, {"n0": (0.5, at), "n1": (0.5, at)})  # type: ignore[attr-defined]
    hub.poll_now()  # type: ignore[attr-defined]


def ramping_pod(
    *, known_nodes: bool = False
) -> tuple[FakeClock, object, tuple[object, object], Snapshot, float, object]:
    """A pod of 1 cpu reserved on n0 at t0, using 0.4 cores: its per-pod series read at 20 s
    (a third of a 1 m window held) and at 45 s (0.3), each with a poll of the nodes; the node
    viewed after the first poll; the caller views it after the second, or not."""
    clock, hub, (src, fake), snap = rig(per_pod=True)
    if known_nodes:
        hub.update_nodes(snap.nodes)  # type: ignore[attr-defined]
    t0 = clock.wall()
    pod = make_pod("p").req(cpu="1").info()
    src.reserve(pod, "n0")  # type: ignore[attr-defined]
    clock.step(20)
    fake.serve(src, POD_USAGE, {"default/p/cpu": (0.4 * 20 / 60, t0 + 20)}, label="netsched_pod")  # type: ignore[attr-defined]
    serve(hub, src, fake, t0 + 20)
    assert src.estimates(snap).cpu[0] == pytest.approx(850 * 40 / 60)  # type: ignore[attr-defined]
    clock.step(25)
    fake.serve(src, POD_USAGE, {"default/p/cpu": (0.3, t0 + 45)}, label="netsched_pod")  # type: ignore[attr-defined]
    serve(hub, src, fake, t0 + 45)
    return clock, hub, (src, fake), snap, t0, pod


def test_a_placed_pod_ramps_in_and_a_gone_one_ramps_out() -> None:
    clock, hub, (src, fake), snap = rig()
    t0 = clock.wall()
    pod = make_pod("p").req(cpu="1", memory="1Gi").node("n0").info()
    src.reserve(pod, "n0")
    serve(hub, src, fake, t0)  # read at the reservation: none of it
    assert src.estimates(snap).cpu[0] == pytest.approx(850)
    clock.step(30)
    serve(hub, src, fake, t0 + 30)  # half a window later: half of it is in the reading
    est = src.estimates(snap)
    assert est.cpu[0] == pytest.approx(425)
    assert est.memory[0] == pytest.approx(0.7 * 2**30)  # a gauge: whole until 60 s after
    clock.step(40)
    serve(hub, src, fake, t0 + 70)  # a window after: held whole, the entry ends
    assert src.estimates(snap).cpu[0] == 0 and len(src.ledger) == 0
    # It leaves a second later: the reading still holds all of it, and less as the window passes.
    clock.step(1)
    src.depart(pod)
    assert src.estimates(snap).cpu[0] == pytest.approx(-850)
    assert src.estimates(snap).memory[0] == pytest.approx(-0.7 * 2**30)
    clock.step(14)
    serve(hub, src, fake, t0 + 85)
    est = src.estimates(snap)
    assert est.cpu[0] == pytest.approx(-850 * 46 / 60)  # 46 s of the window still had it
    assert est.memory[0] == 0  # a gauge read after it left does not hold it
    clock.step(60)
    serve(hub, src, fake, t0 + 145)  # a window after it left
    assert src.estimates(snap).cpu[0] == 0 and len(src.ledger) == 0


def test_a_rollout_reads_as_the_new_pods_alone() -> None:
    # The old pod leaves and a new one of the same load arrives on the same node between two
    # polls: the node carries one pod, not two (before: the old one's rate and the new one's
    # estimate added up for a whole window).
    clock, hub, (src, fake), snap = rig()
    t0 = clock.wall()
    serve(hub, src, fake, t0)
    old = make_pod("old").req(cpu="1").node("n0").info()
    src.depart(old)
    src.reserve(make_pod("new").req(cpu="1").info(), "n0")
    assert src.estimates(snap).cpu[0] == pytest.approx(0.0)
    assert src.view(snap).usage(CPU, np.array([0])).utilisation[0] == pytest.approx(0.5)


def test_unreserve_forgets_and_a_second_departure_changes_nothing() -> None:
    clock, hub, (src, fake), snap = rig()
    serve(hub, src, fake, clock.wall())
    pod = make_pod("p").req(cpu="1").info()
    src.reserve(pod, "n1")
    src.unreserve(pod)
    assert len(src.ledger) == 0 and not src.estimates(snap).cpu.any()
    placed = make_pod("q").req(cpu="1").node("n1").info()
    src.depart(placed)
    src.depart(placed)  # terminating, then deleted: told once by the cache, harmless twice
    assert src.estimates(snap).cpu[1] == pytest.approx(-850)


def test_measured_per_pod_usage_replaces_the_estimate() -> None:
    clock, hub, (src, fake), snap = rig(per_pod=True)
    t0 = clock.wall()
    usage = {
        "default/p/cpu": (0.25, t0),  # cores
        "default/p/memory": (1e8, t0),
        "default/p/network_rx": (3e6, t0),
        "default/p/network_tx": (5e6, t0),
    }
    fake.serve(src, POD_USAGE, usage, label="netsched_pod")
    serve(hub, src, fake, t0)
    clock.step(1)
    pod = make_pod("p").req(cpu="1").node("n0").info()
    src.depart(pod)
    est = src.estimates(snap)
    assert est.cpu[0] == pytest.approx(-250) and est.memory[0] == pytest.approx(-1e8)
    assert (est.rx[0], est.tx[0]) == (pytest.approx(-3e6), pytest.approx(-5e6))
    # A pod whose network load is its own (annotated) keeps it: a pod's counters include its
    # traffic with peers on the same node, which never reaches the NIC.
    own = make_pod("p").req(cpu="1").annotation("kubernetes.io/egress-bandwidth", "8M").node("n1").info()
    src.depart(own)
    est = src.estimates(snap)
    assert est.cpu[1] == pytest.approx(-250) and est.tx[1] == pytest.approx(-1e6)


def test_a_just_started_pods_reading_is_taken_for_what_it_holds() -> None:
    # A pod reserved 45 s before a reading over a 1 m window: its per-pod rate() holds 3/4 of its
    # use (0.3 of 0.4 cores), as its node's does: the ledger takes it for 0.4 cores, of which
    # the node's reading misses a quarter (before: 0.3 taken as its whole use, a quarter of that
    # added). Read after less than half a window, the reading says too little: the estimate stands.
    clock, hub, (src, fake), snap, t0, pod = ramping_pod()
    assert src.estimates(snap).cpu[0] == pytest.approx(400 * 15 / 60)
    # It leaves: what it used leaves with it, not its ramping-out reading.
    clock.step(1)
    src.depart(make_pod("p").req(cpu="1").node("n0").set("metadata.uid", pod.uid).info())
    assert src.estimates(snap).cpu[0] == pytest.approx(-400 * 45 / 60)
    clock.step(14)
    fake.serve(src, POD_USAGE, {"default/p/cpu": (0.1, t0 + 60)}, label="netsched_pod")
    serve(hub, src, fake, t0 + 60)
    assert src.estimates(snap).cpu[0] == pytest.approx(-400 * 46 / 60)


def test_a_pod_gone_before_any_view_of_the_last_poll_takes_its_measured_share_out() -> None:
    # As above, but nothing reads the node between the poll at 45 s and the departure (an
    # eviction between two cycles): the ledger's coverage is still the poll at 20 s's, over
    # which the pod's reading held a third of it. The departure reads the node's latest
    # samples: the measured 0.4 cores leave, not the 0.85 estimate.
    clock, hub, (src, fake), snap, t0, pod = ramping_pod(known_nodes=True)
    clock.step(1)
    src.depart(make_pod("p").req(cpu="1").node("n0").set("metadata.uid", pod.uid).info())
    assert src.estimates(snap).cpu[0] == pytest.approx(-400 * 45 / 60)


def test_entries_end_after_their_lifetime_without_samples() -> None:
    clock, _, (src, _), snap = rig()
    src.depart(make_pod("p").req(cpu="1").node("n0").info())
    src.reserve(make_pod("q").req(cpu="1").info(), "n1")
    assert len(src.ledger) == 2
    clock.step(src.args.estimation.max_lifetime_seconds + 1)
    assert not src.estimates(snap).cpu.any() and len(src.ledger) == 0


def test_the_cache_tells_the_hub_when_a_placed_pod_leaves() -> None:
    # Terminating (deletionTimestamp set) counts as leaving; the DELETED that follows does not
    # count again; a pod first seen terminating (a relist) left at a time nobody can tell.
    from netsched.cache import ClusterCache

    clock, hub, (src, fake), snap = rig()
    serve(hub, src, fake, clock.wall())
    cache = ClusterCache(clock)
    cache.on_pod_departed(hub.pod_departed)  # type: ignore[attr-defined]
    for n in snap.nodes:
        cache.add_or_update_node(n)
    bound = make_pod("b").req(cpu="1").node("n0").info()
    cache.add_or_update_pod(bound)
    cache.add_or_update_pod(
        make_pod("b").req(cpu="1").node("n0").terminating().set("metadata.uid", bound.uid).info()
    )
    assert src.estimates(snap).cpu[0] == pytest.approx(-850)
    cache.remove_pod(bound.uid)
    assert src.estimates(snap).cpu[0] == pytest.approx(-850)
    cache.add_or_update_pod(make_pod("t").req(cpu="1").node("n1").terminating().info())
    assert src.estimates(snap).cpu[1] == 0
    gone = make_pod("d").req(cpu="2").node("n1").info()
    cache.add_or_update_pod(gone)
    cache.remove_pod(gone.uid)  # deleted outright (no grace)
    assert src.estimates(snap).cpu[1] == pytest.approx(-1700)
