"""Scheduler configurations that many tests and benchmarks run as they are.

A test whose point is elsewhere (logging flags, event writes, serving) wants the plainest
scheduler: one profile named netsched with kube's default plugins and no leader election, so
nothing waits for a lease. Written here once; a test that needs other plugins builds its own
profile (or appends a `plugins:` block to this one, as the load-aware tests do).  Tests that
wait for pods retried after a backoff take the variant with kube's backoff cut to a second.
"""

from __future__ import annotations

from typing import Final

_HEADER = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
"""
_PROFILE = """\
profiles:
- schedulerName: netsched
"""

# kube's default plugins in one profile named netsched; leader election off.
NETSCHED_PROFILE: Final = _HEADER + _PROFILE

# The same with a 1 s pod backoff (initial and max, kube's are 1 s and 10 s): a pod the test
# makes schedulable again (a node added, a victim gone) is retried within a second.
NETSCHED_PROFILE_FAST_BACKOFF: Final = (
    _HEADER
    + """\
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
"""
    + _PROFILE
)

# A profile's `plugins:` block: Coscheduling at every point it implements and as
# the queue sort in place of kube's (all profiles share one queue, so one QueueSort).
COSCHEDULING_PLUGINS: Final = """\
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
"""

# A profile's `pluginConfig:` opening for network load over a real Prometheus (a str.format
# template: `url`, `window`): NetworkTraffic polling every second with its `prometheus:` block
# anchored as &prom for entries appended after it, and LoadThreshold judging the network only.
NETWORK_LOAD_ARGS: Final = """\
  pluginConfig:
  - name: NetworkTraffic
    args:
      prometheus: &prom
        prometheusAddress: {url}
        pollIntervalSeconds: 1
        timeoutSeconds: 0.5
        maxSampleAgeSeconds: 4
        rateWindow: {window}
  - name: LoadThreshold
    args:
      prometheus: *prom
      networkUtilizationPercent: 80
      cpuUtilizationPercent: 0
      memoryUtilizationPercent: 0
"""
