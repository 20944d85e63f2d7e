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

# Per-pod usage (cAdvisor, in every kube-prometheus): what a pod that leaves takes with it, and
# what a pod that just started really uses (netsched/metrics/ledger.py).  One query per poll for
# every pod and kind, its series keyed by POD_LABEL: "namespace/name/kind".
POD_USAGE = "pod_usage"
POD_LABEL = "netsched_pod"
USAGE_LABEL = "netsched_usage"
POD_CPU = "cpu"  # cores
POD_MEMORY = "memory"  # bytes (working set)
POD_NETWORK_RX = "network_rx"  # bytes/s received by the pod's interfaces
POD_NETWORK_TX = "network_tx"  # bytes/s transmitted
POD_KINDS = (POD_CPU, POD_MEMORY, POD_NETWORK_RX, POD_NETWORK_TX)
# The node metrics a per-pod usage corrects (a source requiring one of them polls POD_USAGE).
CORRECTED_METRICS = (CPU, MEMORY, NETWORK_RX, NETWORK_TX)

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

# Series with `namespace` and `pod` labels (summed over a pod's containers; "POD" is the
# pause container, "" the pod's cgroup, which the container series add up to).
_CONTAINERS = 'container!="", container!="POD"'
DEFAULT_POD_QUERIES: dict[str, str] = {
    POD_CPU: f"sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{{{_CONTAINERS}}}[$window]))",
    POD_MEMORY: f"sum by (namespace, pod) (container_memory_working_set_bytes{{{_CONTAINERS}}})",
    # The pod's network namespace is counted once, on the pod's cgroup or pause container.
    POD_NETWORK_RX: 'sum by (namespace, pod) (rate(container_network_receive_bytes_total{interface!="lo"}[$window]))',
    POD_NETWORK_TX: 'sum by (namespace, pod) (rate(container_network_transmit_bytes_total{interface!="lo"}[$window]))',
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
    # An empty answer is not a problem (per-pod usage: estimates stand in where Prometheus has none).
    optional: bool = False


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


def pod_usage_query(args: PrometheusArgs) -> str:
    """The one per-pod query: each kind's PromQL (override or default) tagged with its kind, keyed
    by POD_LABEL ("namespace/name/kind")."""
    q = args.queries
    overrides = {
        POD_CPU: q.pod_cpu,
        POD_MEMORY: q.pod_memory,
        POD_NETWORK_RX: q.pod_network_receive,
        POD_NETWORK_TX: q.pod_network_transmit,
    }
    parts = " or ".join(
        f'label_replace({render(overrides[k] or DEFAULT_POD_QUERIES[k], args)}, "{USAGE_LABEL}", "{k}", "", "")'
        for k in POD_KINDS
    )
    return f'label_join({parts}, "{POD_LABEL}", "/", "namespace", "pod", "{USAGE_LABEL}")'
