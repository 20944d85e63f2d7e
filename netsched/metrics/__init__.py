"""netsched's metrics pipeline: the only code that talks to Prometheus.

One MetricsHub per process polls Prometheus in the background (one instant
query per metric per poll for all nodes) and keeps a per-node cache that
plugins read as NumPy arrays aligned with the snapshot, so a scheduling cycle
never waits on the network.  On top of the cache: node mapping with a
self-check, staleness rules (maxSampleAgeSeconds + failOpen/failClosed), a
fallback to request-based scoring while Prometheus is down, and a ledger of
pods placed and gone with their times that corrects each reading for what its
rate window misses of them (ledger.py).

    hub = MetricsHub(registry=registry, clock=clock)      # app.py
    src = handle.metrics.source(args.prometheus)          # a plugin constructor
    src.require(NETWORK_RX, NETWORK_TX, LINK_SPEED)
    rx, age = src.values(NETWORK_RX, snapshot)            # a scoring cycle

Layers: args (config), queries (PromQL), client (prometheus-api-client and
retries) over transport (reply size cap and deadline), cache (immutable
tables), mapping (series -> nodes), poller (one per connection), estimation and ledger,
selfcheck, instruments (own metrics), source (plugin view), hub.
"""

from netsched.metrics.args import (
    FAIL_CLOSED,
    FAIL_OPEN,
    EstimationArgs,
    NodeMappingArgs,
    PrometheusArgs,
    QueriesArgs,
)
from netsched.metrics.client import QueryClient, QueryError
from netsched.metrics.estimation import Estimates, pod_bandwidth, pod_load
from netsched.metrics.hub import MetricsHub
from netsched.metrics.mapping import NodeRef
from netsched.metrics.queries import (
    BUILTIN_METRICS,
    CPU,
    DEFAULT_QUERIES,
    LINK_SPEED,
    MEMORY,
    NETWORK_RX,
    NETWORK_TX,
    QueryKey,
)
from netsched.metrics.selfcheck import MetricCheck, SelfCheckReport
from netsched.metrics.source import MetricSource

__all__ = [
    "BUILTIN_METRICS",
    "CPU",
    "DEFAULT_QUERIES",
    "FAIL_CLOSED",
    "FAIL_OPEN",
    "LINK_SPEED",
    "MEMORY",
    "NETWORK_RX",
    "NETWORK_TX",
    "EstimationArgs",
    "Estimates",
    "MetricCheck",
    "MetricSource",
    "MetricsHub",
    "NodeMappingArgs",
    "NodeRef",
    "PrometheusArgs",
    "QueriesArgs",
    "QueryClient",
    "QueryError",
    "QueryKey",
    "SelfCheckReport",
    "pod_bandwidth",
    "pod_load",
]
