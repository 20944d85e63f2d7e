"""The cache: parsing (NaN/Inf/negative), successor tables, atomic swap under concurrent reads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from netsched.framework.snapshot import Snapshot
from netsched.metrics import CPU, MEMORY, NETWORK_RX, NodeMappingArgs, PrometheusArgs, QueryKey
from netsched.metrics.cache import BadResponse, MetricsTable, Series, parse_vector
from netsched.testing.builders import make_node
from netsched.testing.prometheus import fake_hub


def vector(*samples: tuple[str, str]) -> list[dict[str, object]]:
    return [{"metric": {"node": k}, "value": [100.0, v]} for k, v in samples]


def test_parse_drops_and_counts_bad_values() -> None:
    s = parse_vector(
        vector(("a", "1.5"), ("b", "NaN"), ("c", "+Inf"), ("d", "-Inf"), ("e", "-3"), ("f", "-0.001")),
        NodeMappingArgs(),
    )
    assert s.keys == ("a", "f")
    assert s.values.tolist() == [1.5, 0.0]  # rate() jitter just below zero is clamped, not dropped
    assert s.total == 6
    assert s.dropped == {"nan": 1, "inf": 2, "negative": 1}


@pytest.mark.parametrize(
    "result", [[1700000000, "1"], "x", [{"metric": {}, "value": ["x"]}], [{"metric": {}}]]
)
def test_parse_rejects_non_vectors(result: object) -> None:
    with pytest.raises(BadResponse):
        parse_vector(result, NodeMappingArgs())


def test_successor_keeps_last_result_of_a_failed_query() -> None:
    k1, k2 = QueryKey("a", "qa"), QueryKey("b", "qb")
    s1 = parse_vector(vector(("n", "1")), NodeMappingArgs())
    t1 = MetricsTable.initial().successor(10.0, {k1: s1, k2: s1}, {}, [k1, k2], True)
    s2 = parse_vector(vector(("n", "2")), NodeMappingArgs())
    t2 = t1.successor(20.0, {k1: s2}, {k2: "bad_query"}, [k1, k2], True)
    assert t2.version == t1.version + 1
    assert t2.series[k1] is s2 and t2.series[k2] is s1  # still there, ageing
    assert t2.errors == {k2: "bad_query"}
    assert t1.series[k1] is s1  # the old table is untouched


def _snapshot(n: int) -> Snapshot:
    return Snapshot.of([make_node(f"n{i}").info() for i in range(n)])


def test_readers_never_see_half_a_poll() -> None:
    """Every poll writes the same value to all metrics; a reader must always see them equal."""
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(NETWORK_RX, CPU, MEMORY)
    snap = _snapshot(50)
    names = [n.name for n in snap.nodes]
    stop = threading.Event()
    torn: list[tuple[float, ...]] = []
    reads = 0

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            table = src.poller.table  # one reference per read, as plugins do
            seen = {float(s.values[0]) for s in table.series.values() if len(s.values)}
            if len(seen) > 1:
                torn.append(tuple(seen))
            reads += 1

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(200):
            for m in (NETWORK_RX, CPU, MEMORY):
                fake.serve(src, m, dict.fromkeys(names, float(i)))
            hub.poll_now()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert torn == [] and reads > 0
    vals, _ = src.values(CPU, snap)
    assert np.all(vals == 199.0)


def test_values_cached_per_table_version_and_layout() -> None:
    hub, fake = fake_hub()
    src = hub.source(PrometheusArgs())
    src.require(CPU)
    snap = _snapshot(3)
    fake.serve(src, CPU, {"n0": 0.1, "n2": 0.3})
    hub.poll_now()
    v1, _ = src.values(CPU, snap)
    v2, _ = src.values(CPU, snap)
    assert v1 is v2  # same table, same layout: no work
    assert not v1.flags.writeable
    assert v1[0] == 0.1 and np.isnan(v1[1]) and v1[2] == 0.3
    hub.poll_now()
    v3, _ = src.values(CPU, snap)
    assert v3 is not v1 and np.array_equal(v3, v1, equal_nan=True)
    snap.rebuild(list(reversed(snap.nodes)))  # new layout: rows follow the nodes
    v4, _ = src.values(CPU, snap)
    assert v4[0] == 0.3 and v4[2] == 0.1


def test_series_empty_is_empty() -> None:
    s = Series.empty()
    assert s.total == 0 and len(s.values) == 0
