"""Scheduler configurations that many tests and benchmarks run as they are.

A test whose point is elsewhere (logging flags, event writes, serving) wants the plainest
scheduler: one profile named netsched with kube's default plugins and no leader election, so
nothing waits for a lease. Written here once; a test that needs other plugins builds its own
profile (or appends a `plugins:` block to this one, as the load-aware tests do).
"""

from __future__ import annotations

from typing import Final

# kube's default plugins in one profile named netsched; leader election off.
NETSCHED_PROFILE: Final = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: netsched
"""
