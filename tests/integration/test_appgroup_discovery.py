"""TrafficAffinity's AppGroup reader as deploy/ runs it, on an API server with and without the CRD.

deploy/ is applied as written (its profile enables TrafficAffinity; deploy/optional/appgroup is
not applied unless a test says so) and every request is authorized from its RBAC for
netsched's service account, as a real API server does (FakeAPIServer.authorize_requests):

- no AppGroup API served (the CRD is not installed): netsched asks discovery, lists nothing
  (no 403 for a least-privilege audit to read as a missing grant) and says so once at -v 2;
- the CRD installed but not deploy/optional/appgroup: the list's 403 is a warning that names it;
- both: the AppGroups reach the object store TrafficAffinity reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netsched import logutil
from netsched.app import SchedulerApp
from netsched.kube import KubeClient
from netsched.kube.resources import APPGROUPS
from netsched.testing.fakeapi import FakeAPIServer, RecordedRequest
from netsched.testing.kubectl import apply, create_token
from netsched.testing.kustomize import find_object, load_kustomization
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
LIST_APPGROUPS = RecordedRequest("list", APPGROUPS.group, "appgroups", "", "")
SERVICE_ACCOUNT = "system:serviceaccount:netsched-system:netsched"
SHOP = {
    "apiVersion": APPGROUPS.api_version,
    "kind": "AppGroup",
    "metadata": {"name": "shop", "namespace": "default"},
    "spec": {"workloads": [{"workload": {"selector": "p-api", "name": "api"}, "dependencies": []}]},
}


@pytest.fixture
def as_netsched(server: FakeAPIServer, client: KubeClient, tmp_path: Path) -> Path:
    """deploy/ applied by an admin, then RBAC on: a kubeconfig with netsched's service-account token."""
    for obj in load_kustomization(DEPLOY):
        apply(client, obj)
    token = create_token(client, "netsched-system", "netsched")
    server.authorize_requests()
    return server.write_kubeconfig(tmp_path / "netsched-kubeconfig", token=token)


def deploy_config() -> str:
    config_map = find_object(DEPLOY, "ConfigMap", "netsched-config")
    text: str = config_map["data"]["config.yaml"]
    assert "- name: TrafficAffinity" in text  # what this file is about: deploy/'s profile reads AppGroups
    return text


def start(scheduler_app: Callable[..., SchedulerApp], kubeconfig: Path) -> SchedulerApp:
    app = scheduler_app(deploy_config(), kubeconfig=kubeconfig)
    assert app.start_informers(sync_timeout=10)
    return app


def appgroup_verbs(server: FakeAPIServer) -> set[str]:
    """What the API server was asked of AppGroups (list, watch)."""
    return {r.verb for r in server.requests if r.resource == "appgroups"}


def about_appgroups(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if "resource=appgroups" in r.getMessage()]


def test_no_appgroup_api_is_skipped_quietly_after_asking_discovery(
    server: FakeAPIServer,
    as_netsched: Path,
    scheduler_app: Callable[..., SchedulerApp],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logutil.V2)
    app = start(scheduler_app, as_netsched)
    assert about_appgroups(caplog) == [
        (
            logutil.V2,
            "API not served, running without the resource resource=appgroups "
            "reason=the API server serves no appgroup.diktyo.x-k8s.io/v1alpha1",
        )
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("netsched")]
    assert appgroup_verbs(server) == set()  # never listed nor watched
    assert app.synced


def test_a_403_on_the_served_api_is_a_warning_that_names_deploy_optional_appgroup(
    server: FakeAPIServer,
    as_netsched: Path,
    scheduler_app: Callable[..., SchedulerApp],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logutil.V2)
    server.create_crd(APPGROUPS.key)
    app = start(scheduler_app, as_netsched)
    ((level, line),) = about_appgroups(caplog)
    assert level == logging.WARNING
    assert line.startswith(
        "Resource forbidden, running without it resource=appgroups "
        "hint=kubectl apply -k deploy/optional/appgroup err=403 Forbidden: "
        f'appgroups.appgroup.diktyo.x-k8s.io is forbidden: User "{SERVICE_ACCOUNT}" cannot list'
    ), line
    assert LIST_APPGROUPS in server.requests
    assert app.synced  # running without it, as an optional kind


def test_with_the_crd_and_deploy_optional_appgroup_the_appgroups_are_read(
    server: FakeAPIServer,
    client: KubeClient,
    as_netsched: Path,
    scheduler_app: Callable[..., SchedulerApp],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logutil.V2)
    server.create_crd(APPGROUPS.key)
    server.authorize_requests(False)  # the admin applies it (its client has no token)
    for obj in load_kustomization(DEPLOY / "optional" / "appgroup"):
        apply(client, obj)
    server.authorize_requests()
    server.create(APPGROUPS.key, SHOP)
    app = start(scheduler_app, as_netsched)
    stored: Any = app.objects.get(APPGROUPS.key, "default", "shop")
    assert stored is not None and stored["spec"] == SHOP["spec"]
    assert about_appgroups(caplog) == []

    # The reflector is synced once its list is in; its watch request follows on its own thread.
    wait_until(lambda: "watch" in appgroup_verbs(server), what="the AppGroups' watch")
    assert appgroup_verbs(server) == {"list", "watch"}
