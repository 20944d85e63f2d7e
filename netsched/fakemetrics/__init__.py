"""Synthetic node metrics for a scheduler without a cluster's monitoring.

A node_exporter look-alike whose load is set per node (`SyntheticExporter`),
the distribution's Prometheus scraping it on 127.0.0.1 (`PrometheusServer`),
or an in-process fake answering the same queries (`FakePrometheus`, over HTTP
with `FakePrometheusServer`).  Not a test-only thing: `netsched demo` runs the
load-aware profile against them.  Tests reach them through netsched.testing
(exporter, prometheus).
"""

from netsched.fakemetrics.exporter import FakeNode, SyntheticExporter, fake_nodes
from netsched.fakemetrics.prometheus import (
    FakePrometheus,
    FakePrometheusServer,
    PrometheusServer,
    free_port,
    prometheus_binary,
)

__all__ = [
    "FakeNode",
    "FakePrometheus",
    "FakePrometheusServer",
    "PrometheusServer",
    "SyntheticExporter",
    "fake_nodes",
    "free_port",
    "prometheus_binary",
]
