"""Hot reload in a running scheduler: new weights from the next cycle, same queue, cache and leadership."""

from __future__ import annotations

from pathlib import Path

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.config.reload import RESTART_REQUIRED, SUCCESS, ConfigReloader
from netsched.kube import KubeAPI, build_api_client
from netsched.testing.builders import make_node, make_pod
from netsched.testing.configs import NETSCHED_PROFILE
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration


def config(weight: int, percentage: int = 50, parallelism: int = 16) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
parallelism: {parallelism}
percentageOfNodesToScore: {percentage}
profiles:
- schedulerName: netsched
  plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: {weight}
"""


def app_and_reloader(kubeconfig: Path, path: Path) -> tuple[SchedulerApp, ConfigReloader]:
    """A scheduler over the fake API server from the config file at `path`, and the reloader
    that re-reads it (as the process's file watcher does)."""
    registry = build_registry()
    cfg = load_config(path, registry)
    app = SchedulerApp(
        cfg, registry, KubeAPI(build_api_client(str(kubeconfig))), options=AppOptions(watch_timeout=5)
    )
    reloader = ConfigReloader(
        str(path), cfg, lambda t: load_config(t, registry), app.apply_config, metrics=app.metrics
    )
    return app, reloader


def test_weights_and_percentage_apply_without_a_restart(
    server: FakeAPIServer, kubeconfig: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(config(1))
    server.create("nodes", make_node("n0").capacity(cpu="4").obj())
    app, reloader = app_and_reloader(kubeconfig, path)
    try:
        assert app.start_informers(sync_timeout=10)
        app.start_background()
        app.start_scheduling()
        queue, cache, old = app.queue, app.cache, app.scheduler.frameworks["netsched"]
        path.write_text(config(6, percentage=30))
        result = reloader.reload("test")
        assert result.result == SUCCESS
        wait_until(lambda: app.scheduler.frameworks["netsched"] is not old, what="frameworks swapped")
        fwk = app.scheduler.frameworks["netsched"]
        assert fwk.weights["ImageLocality"] == 6 and fwk.percentage_of_nodes_to_score == 30
        assert app.queue is queue and app.cache is cache and app.leading
        # Still scheduling, with the new frameworks.
        server.create("pods", make_pod("after").scheduler("netsched").req(cpu="1").obj())
        wait_until(lambda: server.get("pods", "after")["spec"].get("nodeName") == "n0", what="bound")
        # A restart-only change is refused and nothing is swapped.
        path.write_text(config(2, parallelism=4))
        assert reloader.reload("test").result == RESTART_REQUIRED
        assert app.scheduler.frameworks["netsched"] is fwk
        sample = app.metrics_registry.get_sample_value
        assert sample("netsched_config_reloads_total", {"result": "success"}) == 1
        assert sample("netsched_config_info", {"hash": reloader.digest}) == 1
    finally:
        app.shutdown(timeout=5)


def metrics_config(address: str) -> str:
    return (
        NETSCHED_PROFILE
        + f"""\
  plugins:
    score:
      enabled:
      - name: NetworkTraffic
        weight: 1
  pluginConfig:
  - name: NetworkTraffic
    args:
      prometheus:
        prometheusAddress: {address}
"""
    )


def test_a_new_prometheus_address_replaces_the_old_poller(kubeconfig: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(metrics_config("http://127.0.0.1:1"))
    app, reloader = app_and_reloader(kubeconfig, path)
    try:
        assert [p.conn.address for p in app.hub.pollers] == ["http://127.0.0.1:1"]
        path.write_text(metrics_config("http://127.0.0.1:2"))
        assert reloader.reload("test").result == SUCCESS
        # Only the new address is polled from now on: the old poller was stopped, not leaked.
        assert [p.conn.address for p in app.hub.pollers] == ["http://127.0.0.1:2"]
    finally:
        app.shutdown(timeout=5)
