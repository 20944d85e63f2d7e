"""The PromQL the poller runs: built-in metric names, default queries, templating.

Every query is an instant query returning one series per node, evaluated once
per poll for all nodes.  Defaults follow node_exporter's metric names:
counters go through rate() (a counter's raw value says nothing about load),
virtual interfaces are excluded (traffic between pods on one node would be
counted twice and container veths report 10 Gb/s "speeds"), and results are
aggregated by the label the node mapping uses ($by).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Template

from netsched.metrics.args import PrometheusArgs

# Built-in metric names plugins `require()`; a custom plugin may add its own
# with `require_query(name, promql)`.
NETWORK_RX = "network_rx"  # bytes/s received by the node's physical interfaces
NETWORK_TX = "network_tx"  # bytes/s transmitted
LINK_SPEED = "link_speed"  # bytes/s the node's physical interfaces can carry in one direction
CPU = "cpu"  # fraction of the node's CPU time not idle, 0..1
MEMORY = "memory"  # fraction of the node's memory not available, 0..1
BUILTIN_METRICS = (NETWORK_RX, NETWORK_TX, LINK_SPEED, CPU, MEMORY)

# Loopback, container veths, CNI bridges and overlay tunnels: not the node's wire.
EXCLUDED_DEVICES = "lo|veth.*|cali.*|docker.*|cni.*|flannel.*|vxlan.*|tunl.*|kube-ipvs.*"

DEFAULT_QUERIES: dict[str, str] = {
    NETWORK_RX: (
        f'sum by ($by) (rate(node_network_receive_bytes_total{{device!~"{EXCLUDED_DEVICES}"}}[$window]))'
    ),
    NETWORK_TX: (
        f'sum by ($by) (rate(node_network_transmit_bytes_total{{device!~"{EXCLUDED_DEVICES}"}}[$window]))'
    ),
    LINK_SPEED: f'sum by ($by) (node_network_speed_bytes{{device!~"{EXCLUDED_DEVICES}"}} > 0)',
    CPU: '1 - avg by ($by) (rate(node_cpu_seconds_total{mode="idle"}[$window]))',
    MEMORY: "1 - sum by ($by) (node_memory_MemAvailable_bytes) / sum by ($by) (node_memory_MemTotal_bytes)",
}


@dataclass(frozen=True, slots=True)
class QueryKey:
    """One query the poller runs: the metric name (for labels and logs) and its PromQL.

    `key_label`: the series are keyed by this label instead of a node (the
    traffic graph's pair label); the self-check then maps none of them to nodes.
    """

    name: str
    promql: str
    key_label: str = ""


def render(template: str, args: PrometheusArgs) -> str:
    """Substitute $by and $window; any other `$` (a regex anchor) is left alone."""
    return Template(template).safe_substitute(by=args.node_mapping.group_label, window=args.rate_window)


def builtin_query(name: str, args: PrometheusArgs) -> str:
    """The PromQL for a built-in metric under these args (override or default)."""
    q = args.queries
    overrides = {
        NETWORK_RX: q.network_receive,
        NETWORK_TX: q.network_transmit,
        LINK_SPEED: q.link_speed,
        CPU: q.cpu,
        MEMORY: q.memory,
    }
    if name not in overrides:
        raise KeyError(
            f"{name!r} is not a built-in metric ({', '.join(BUILTIN_METRICS)}); use require_query()"
        )
    return render(overrides[name] or DEFAULT_QUERIES[name], args)
