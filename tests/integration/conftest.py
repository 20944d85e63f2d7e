"""Fixtures the integration tests share: the fake API server and netsched's parts over it.

- `server`: a FakeAPIServer on a free port, with the watch timing the scheduler tests want
  (5 s server-side watch timeout, a bookmark every 0.5 s). A module that needs another server
  (TLS, objects created before the test, other timings) defines its own `server`; the fixtures
  below then build on that one.
- `kubeconfig`: a kubeconfig file for `server`.
- `client` / `api`: netsched's KubeClient (retrying fast: 10-50 ms backoff) and KubeAPI over it.
- `scheduler_app(config, start=False, kubeconfig=None, **options)`: a SchedulerApp over `server`
  (as `kubeconfig`'s user when given, e.g. a service account's token) with the client
  settings of a busy scheduler (qps 500, burst 1000, 24 connections), plain-HTTP endpoints on a
  free port and 5 s watches unless `options` (AppOptions fields) say otherwise; `start=True`
  also syncs the informers and starts the background loops and scheduling. Every app made is
  shut down after the test (shutdown is idempotent: a test may shut one down itself).
- `prometheus(targets, **kw)`: the distribution's Prometheus (PrometheusServer kw) scraping
  `targets`, started; skips without the binary (fails under CI); closed after the test (after
  the apps that poll it when a fixture names `prometheus` before `scheduler_app`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from netsched.app import AppOptions, SchedulerApp, build_registry
from netsched.config import load_config
from netsched.kube import KubeAPI, KubeClient, RetrySettings, build_api_client
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.prometheus import PrometheusServer, require_prometheus

FAST_RETRY = RetrySettings(backoff=0.01, max_backoff=0.05)


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(watch_timeout=5.0, bookmark_interval=0.5) as srv:
        yield srv


@pytest.fixture
def kubeconfig(server: FakeAPIServer, tmp_path: Path) -> Path:
    return server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[KubeClient]:
    c = build_api_client(str(kubeconfig), retry=FAST_RETRY)
    yield c
    c.close()


@pytest.fixture
def api(client: KubeClient) -> KubeAPI:
    return KubeAPI(client)


SchedulerAppFactory = Callable[..., SchedulerApp]


@pytest.fixture
def scheduler_app(kubeconfig: Path) -> Iterator[SchedulerAppFactory]:
    apps: list[SchedulerApp] = []

    def make(
        config: str, *, start: bool = False, kubeconfig: Path = kubeconfig, **options: Any
    ) -> SchedulerApp:
        registry = build_registry()
        app = SchedulerApp(
            load_config(config, registry),
            registry,
            KubeAPI(build_api_client(str(kubeconfig), qps=500, burst=1000, pool_size=24)),
            options=AppOptions(**{"metrics_bind_address": "127.0.0.1:0", "watch_timeout": 5, **options}),
        )
        apps.append(app)
        if start:
            assert app.start_informers(sync_timeout=10)
            app.start_background()
            app.start_scheduling()
        return app

    yield make
    for app in apps:
        app.shutdown(timeout=5)


PrometheusFactory = Callable[..., PrometheusServer]


@pytest.fixture
def prometheus() -> Iterator[PrometheusFactory]:
    binary = require_prometheus()
    servers: list[PrometheusServer] = []

    def start(targets: list[str], **kw: Any) -> PrometheusServer:
        prom = PrometheusServer(targets, binary=binary, **kw)
        servers.append(prom)
        prom.start()
        return prom

    yield start
    for prom in servers:
        prom.close()
