"""A real Prometheus over HTTPS, with REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE set in the environment.

requests lets those variables replace a `verify` of True (psf/requests#3829);
the configured caFile and insecureSkipVerify must win over them, or every poll
fails with an SSL error and the scheduler stays in fallback.  With neither
configured, the environment's bundle is what requests trusts (as for any
requests user): both directions are checked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from netsched.metrics import MetricsHub, PrometheusArgs
from netsched.metrics.source import MetricSource
from netsched.observability.tls import serving_cert
from netsched.testing.prometheus import PrometheusServer, require_prometheus

pytestmark = pytest.mark.integration

QUERY = 'label_replace(vector(0.5), "node", "n1", "", "")'  # one series per "node" without any scrape


@pytest.fixture(scope="module")
def prom() -> Iterator[PrometheusServer]:
    binary = require_prometheus()
    with PrometheusServer([], binary=binary, tls=True) as p:
        yield p


@pytest.fixture
def other_ca(tmp_path: Path) -> str:
    """A CA bundle that does not sign the Prometheus certificate (a corporate bundle, say)."""
    return serving_cert(cert_dir=str(tmp_path / "other")).cert_file


def poll(args: PrometheusArgs) -> MetricSource:
    hub = MetricsHub(registry=CollectorRegistry())
    src = hub.source(args)
    src.require_query("probe", QUERY)
    hub.poll_now()
    hub.stop()
    return src


def errors(src: MetricSource) -> list[str]:
    return list(src.poller.table.errors.values())


@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_configured_ca_file_wins_over_the_environment(
    prom: PrometheusServer, other_ca: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, other_ca)
    src = poll(PrometheusArgs(prometheus_address=prom.url, ca_file=prom.ca_file))
    assert errors(src) == [] and not src.in_fallback
    series = src.poller.table.series[src.poller.keys()[0]]
    assert series.keys == ("n1",) and list(series.values) == [0.5]


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_insecure_skip_verify_wins_over_the_environment(
    prom: PrometheusServer, other_ca: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, other_ca)
    src = poll(PrometheusArgs(prometheus_address=prom.url, insecure_skip_verify=True))
    assert errors(src) == [] and not src.in_fallback


def test_without_tls_settings_the_environment_bundle_is_trusted(
    prom: PrometheusServer, other_ca: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", prom.ca_file)
    assert errors(poll(PrometheusArgs(prometheus_address=prom.url))) == []
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", other_ca)
    caplog.set_level(logging.WARNING, logger="netsched.metrics")
    src = poll(PrometheusArgs(prometheus_address=prom.url))
    assert errors(src) == ["unreachable"] and src.in_fallback
    assert "CERTIFICATE_VERIFY_FAILED" in caplog.text  # the fallback log line says why


def test_ca_file_and_bearer_token_file_together(
    prom: PrometheusServer,
    other_ca: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", other_ca)
    token = tmp_path / "token"
    token.write_text("tls-s3cret\n")
    caplog.set_level(logging.DEBUG)
    src = poll(
        PrometheusArgs(prometheus_address=prom.url, ca_file=prom.ca_file, bearer_token_file=str(token))
    )
    assert errors(src) == [] and not src.in_fallback
    assert "tls-s3cret" not in caplog.text
