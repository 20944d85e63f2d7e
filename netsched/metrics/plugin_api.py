"""What a metric plugin builds on, from one import: `from netsched.metrics.plugin_api import ...`.

The face of the metrics pipeline for plugins, as `netsched.framework` is the
face of the scheduling framework: a plugin imports these two and nothing
deeper, so the layers behind them (poller, cache, mapping, estimation) can
change without touching a plugin.  What is here:

- the `prometheus:` args block (PrometheusArgs, and MetricArgs for a plugin that
  needs only it) and the names of the built-in metrics (CPU, MEMORY, NETWORK_RX,
  NETWORK_TX, LINK_SPEED);
- the plugin bases: MetricScorePlugin (scores every candidate at once in Score from
  the cache, reserves pods with the estimator) and QueryScorePlugin (a user's plugin
  fed by one PromQL query);
- the plugin's view of the cache (MetricSource, from `source_for(handle, ...)`) and
  the one read API over it: `source.view(snapshot)`, a LoadView derived once per
  sample and node layout and shared by every plugin (per-row values, freshness,
  estimates, `network(idx)` / `usage(res, idx)` over the rows a cycle looks at,
  `derived()` for readings that are not node columns); the shared formulas on
  top of it (network_load, resource_usage, cold_link_scores and its rounded form
  cold_link_int_scores, fill_stale, ratio, to_int_scores, over FloatArray
  columns), so every metric plugin reads a node's
  load the same way; METRICS_EVENTS, the events that can change a metric
  plugin's verdict;
- the estimator's view of one pod (pod_load, and the CPU_COL / MEMORY_COL /
  RX_COL / TX_COL of what it returns, also the columns of LoadView.estimates()), and
  BANDWIDTH_HINT, the cycle-state key where a plugin leaves a BandwidthHint for the pod's
  network estimate at Reserve;
- the traffic graph between workloads (TrafficArgs, the `traffic:` block; TrafficGraph,
  read fresh with traffic_graph(source, snapshot): built from the TRAFFIC_PAIRS series
  once per LoadView, through its derived() cache);

The app's side of the pipeline (MetricsHub, the client, the self-check) is
`netsched.metrics`; plugins never construct it, they reach it through the Handle.
"""

from netsched.framework.snapshot import FloatArray
from netsched.metrics.args import PrometheusArgs
from netsched.metrics.estimation import (
    BANDWIDTH_HINT,
    CPU_COL,
    MEMORY_COL,
    RX_COL,
    TX_COL,
    BandwidthHint,
    annotated,
    pod_load,
)
from netsched.metrics.queries import CPU, LINK_SPEED, MEMORY, NETWORK_RX, NETWORK_TX
from netsched.metrics.scoring import (
    MetricArgs,
    MetricScorePlugin,
    QueryScorePlugin,
    RowScores,
    SourceReservation,
)
from netsched.metrics.source import MetricSource
from netsched.metrics.traffic import (
    PAIR_LABEL,
    TRAFFIC_PAIRS,
    PodFlows,
    TrafficArgs,
    TrafficGraph,
    leaving,
    leaving_rows,
    pod_flows,
)
from netsched.metrics.utilisation import (
    METRICS_EVENTS,
    cold_link_int_scores,
    cold_link_scores,
    fill_stale,
    network_load,
    resource_usage,
    source_for,
    to_int_scores,
    traffic_graph,
)
from netsched.metrics.view import LoadView, NetworkLoad, RepeatedLoads, Usage, ratio

__all__ = [
    "BANDWIDTH_HINT",
    "BandwidthHint",
    "annotated",
    "CPU",
    "CPU_COL",
    "LINK_SPEED",
    "MEMORY",
    "MEMORY_COL",
    "METRICS_EVENTS",
    "NETWORK_RX",
    "NETWORK_TX",
    "RX_COL",
    "TX_COL",
    "FloatArray",
    "LoadView",
    "MetricArgs",
    "MetricScorePlugin",
    "MetricSource",
    "PAIR_LABEL",
    "PodFlows",
    "TRAFFIC_PAIRS",
    "TrafficArgs",
    "TrafficGraph",
    "NetworkLoad",
    "PrometheusArgs",
    "QueryScorePlugin",
    "RepeatedLoads",
    "RowScores",
    "SourceReservation",
    "Usage",
    "cold_link_int_scores",
    "cold_link_scores",
    "fill_stale",
    "leaving",
    "leaving_rows",
    "network_load",
    "pod_flows",
    "pod_load",
    "ratio",
    "resource_usage",
    "source_for",
    "to_int_scores",
    "traffic_graph",
]
