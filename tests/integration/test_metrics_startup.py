"""Start-up: the first metrics poll runs beside the first scheduling cycles, never before them.

Prometheus here accepts every query and never answers (until the test ends), so the first
poll is still in flight for the whole test.  The scheduler must bind a pod meanwhile, under
the stale policy (fallback: scores by requests, LoadThreshold failOpen passes every node),
and start_background must not have waited for the poll (it used to, up to 10 s, and then
logged "First metrics poll still running").
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from netsched.app import SchedulerApp
from netsched.demo import LOAD_AWARE_PLUGINS
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.prometheus import FaultyPrometheus
from netsched.testing.wait import wait_until

# A poll interval long enough that the hanging first poll outlives the test on any machine.
CONFIG = (
    NETSCHED_PROFILE
    + LOAD_AWARE_PLUGINS
    + """\
  pluginConfig:
  - name: NetworkTraffic
    args: {{prometheus: &prom {{prometheusAddress: "{url}", pollIntervalSeconds: 600, timeoutSeconds: 500}}}}
  - name: LoadAware
    args: {{prometheus: *prom}}
  - name: LoadThreshold
    args: {{prometheus: *prom}}
"""
)


def test_first_bind_does_not_wait_for_the_first_metrics_poll(
    server: FakeAPIServer, scheduler_app: Callable[..., SchedulerApp], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="netsched.metrics")
    with FaultyPrometheus("hang") as prom:
        for name in ("n1", "n2"):
            server.create("nodes", make_node(name).capacity(cpu="4", memory="8Gi").obj())
        server.create("pods", make_pod("p").scheduler("netsched").req(cpu="100m").obj())
        app = scheduler_app(CONFIG.format(url=prom.url))
        assert app.start_informers(sync_timeout=10)
        app.start_background()
        source = app.hub.sources[0]
        assert not source.polled
        app.start_scheduling()
        node = wait_until(lambda: server.get("pods", "p")["spec"].get("nodeName"), 30, "pod p to be bound")
        assert node in ("n1", "n2")
        wait_until(lambda: prom.queries >= 1, 30, "the first poll to reach Prometheus")
        assert not source.polled and source.in_fallback  # bound while the first poll hangs
        assert "First metrics poll still running" not in caplog.text
