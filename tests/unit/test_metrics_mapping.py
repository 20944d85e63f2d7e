"""Series -> node mapping: label and instance modes, address priority, alignment."""

from __future__ import annotations

import numpy as np
import pytest

from netsched.metrics import NodeMappingArgs, NodeRef
from netsched.metrics.mapping import NodeResolver, align, node_ref, series_key, strip_port
from netsched.testing.builders import make_node


@pytest.mark.parametrize(
    ("instance", "host"),
    [
        ("10.0.0.1:9100", "10.0.0.1"),
        ("node-a:9100", "node-a"),
        ("node-a", "node-a"),
        ("[fd00::1]:9100", "fd00::1"),
        ("fd00::1", "fd00::1"),  # bare IPv6: no port to strip
        ("host:notaport", "host:notaport"),
    ],
)
def test_strip_port(instance: str, host: str) -> None:
    assert strip_port(instance) == host


def test_series_key_by_label_and_instance() -> None:
    labels = {"node": "n1", "instance": "10.0.0.1:9100"}
    assert series_key(labels, NodeMappingArgs()) == "n1"
    assert series_key(labels, NodeMappingArgs(label="kubernetes_node")) == ""
    assert series_key(labels, NodeMappingArgs(by="instance")) == "10.0.0.1"
    assert series_key(labels, NodeMappingArgs(by="instance", instance_port_strip=False)) == "10.0.0.1:9100"
    assert series_key({}, NodeMappingArgs(by="instance")) == ""


def test_resolver_prefers_names_then_internal_ip_then_hostname() -> None:
    nodes = [
        NodeRef("a", (("Hostname", "shared"), ("InternalIP", "10.0.0.1"))),
        NodeRef("b", (("InternalIP", "shared"), ("ExternalIP", "1.2.3.4"))),
        NodeRef("c", (("InternalIP", "a"),)),  # an address equal to another node's name
    ]
    r = NodeResolver(nodes)
    rows = r.rows(["a", "b", "10.0.0.1", "shared", "1.2.3.4", "nope", ""]).tolist()
    assert rows == [0, 1, 0, 1, 1, -1, -1]


def test_node_ref_from_node_info_and_tuple() -> None:
    info = make_node("n1").address("InternalIP", "10.1.1.1").not_ready().info()
    ref = node_ref(info)
    assert ref.name == "n1" and ("InternalIP", "10.1.1.1") in ref.addresses and not ref.ready
    t = node_ref(("n2", [("InternalIP", "10.1.1.2")], {"zone": "z"}))
    assert t == NodeRef("n2", (("InternalIP", "10.1.1.2"),), {"zone": "z"})


def test_align_scatters_keeps_max_of_duplicates_and_drops_unmapped() -> None:
    rows = np.array([2, -1, 0, 2])
    vals = np.array([1.0, 9.0, 3.0, 5.0])
    ts = np.array([10.0, 11.0, 12.0, 13.0])
    v, t = align(rows, vals, ts, 4)
    assert v[0] == 3.0 and v[2] == 5.0
    assert np.isnan(v[1]) and np.isnan(v[3]) and np.isnan(t[1])
    assert t[0] == 12.0
