"""A scheduler that rebalances, over HTTP: its profile, and the node readings a fake Prometheus
serves it.

The Rebalancer's tests over the fake API server (its RBAC, leader-only rounds, its debug page)
share one setting: a profile that places pods by link load (NetworkTraffic, LoadThreshold) and
rebalances them on the network trigger alone (the CPU trigger off, so a pod's estimated CPU
can never make a node hot by itself), every metric source polling a FakePrometheusServer each
second with a 2 s rate window and a 2 s cover margin (a pod placed is wholly in the readings 2 s
later, so the ledger's estimate of a new pod does not linger).  `NodeReadings` is what that fake answers:
every node's link at 1 Gbit/s and its transmit as a fraction of it; the test moves the load.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from netsched.fakemetrics.prometheus import FakePrometheus
from netsched.metrics import LINK_SPEED, NETWORK_RX, NETWORK_TX, MetricSource

GBIT: Final = 125_000_000.0  # bytes/s

# The profile's plugins, as entries of a multiPoint `enabled:` list (6 spaces deep).
REBALANCING_PLUGINS: Final = """\
      - {name: NetworkTraffic, weight: 3}
      - {name: LoadThreshold}
      - {name: Rebalancer}
"""

_PLUGIN_CONFIG = """\
  - name: NetworkTraffic
    args:
      prometheus: &prom
        prometheusAddress: {url}
        pollIntervalSeconds: 1
        timeoutSeconds: 0.5
        maxSampleAgeSeconds: 5
        rateWindow: 2s
        estimation: {{coverMarginSeconds: 2}}
        perPodUsage: false
  - name: LoadThreshold
    args:
      networkUtilizationPercent: 80
      cpuUtilizationPercent: 0
      memoryUtilizationPercent: 0
      prometheus: *prom
  - name: Rebalancer
    args:
      dryRun: false
      cpu: {{highPercent: 0}}
      traffic: {{minReduction: 0}}
{rebalancer}      prometheus: *prom
"""

_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
{election}
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
profiles:
- schedulerName: netsched
  plugins:
    multiPoint:
      enabled:
{plugins}  pluginConfig:
{plugin_config}"""

_NO_ELECTION = "  leaderElect: false"
# deploy/'s lease, with durations short enough for a test to see a handover.
_ELECTION = """\
  leaderElect: true
  leaseDuration: 3s
  renewDeadline: 2s
  retryPeriod: 500ms
  resourceName: netsched
  resourceNamespace: netsched-system"""


def rebalancing_plugin_config(url: str, **rebalancer: Any) -> str:
    """The profile's `pluginConfig:` entries (2 spaces deep): metric sources polling `url`, and
    `rebalancer` as more Rebalancer args (camelCase names, JSON values)."""
    extra = "".join(f"      {key}: {json.dumps(value)}\n" for key, value in rebalancer.items())
    return _PLUGIN_CONFIG.format(url=url, rebalancer=extra)


def rebalancing_config(url: str, *, election: bool = False, **rebalancer: Any) -> str:
    """The whole KubeSchedulerConfiguration: one profile, netsched, with leader election on
    deploy/'s lease or off."""
    return _CONFIG.format(
        election=_ELECTION if election else _NO_ELECTION,
        plugins=REBALANCING_PLUGINS,
        plugin_config=rebalancing_plugin_config(url, **rebalancer),
    )


class NodeReadings:
    """The node readings a FakePrometheus answers `source`'s network queries with (the only
    ones the profile asks for): each node's link at 1 Gbit/s, nothing received, `transmit` (a
    fraction of the link) sent; each sample stamped at query time (always fresh)."""

    def __init__(
        self,
        fake: FakePrometheus,
        source: MetricSource,
        nodes: Iterable[str],
        *,
        transmit: float = 0.1,
    ) -> None:
        self._fake = fake
        self._source = source
        self.transmit = dict.fromkeys(nodes, transmit)
        self.serve()

    def set(self, transmit: dict[str, float]) -> None:
        """New transmit fractions for some nodes, served from the next poll on."""
        unknown = set(transmit) - set(self.transmit)
        if unknown:
            raise KeyError(f"not a node of these readings: {sorted(unknown)}")
        self.transmit.update(transmit)
        self.serve()

    def serve(self) -> None:
        names = list(self.transmit)
        serve = self._fake.serve
        serve(self._source, LINK_SPEED, dict.fromkeys(names, GBIT))
        serve(self._source, NETWORK_RX, dict.fromkeys(names, 0.0))
        serve(self._source, NETWORK_TX, {n: f * GBIT for n, f in self.transmit.items()})
