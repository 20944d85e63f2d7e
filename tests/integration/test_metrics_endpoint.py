"""/metrics content negotiation and compression, over real HTTP and HTTPS, and a real Prometheus scraping it.

The Accept headers are the ones Prometheus sends on a scrape (scrape/scrape.go:
2.x asks for OpenMetrics 1.0.0 first; 3.x adds escaping=allow-utf-8), with
`Accept-Encoding: gzip`, which Prometheus sends unless compression is disabled.
The real Prometheus (the distribution's 2.x, started by the fixture) scrapes
netsched's endpoint over HTTPS: its metadata API names the counter families
without `_total`, which only its OpenMetrics parser does, so the scrape was
negotiated as OpenMetrics.
"""

from __future__ import annotations

import gzip
import http.client
import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from netsched.observability.metrics import SchedulerMetrics
from netsched.observability.server import EndpointReply, ObservabilityServer
from netsched.observability.tls import ServingCert, serving_cert
from netsched.testing.prometheus import PrometheusServer, require_prometheus
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

PROMETHEUS_2_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
PROMETHEUS_3_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,"
    "application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,"
    "text/plain;version=0.0.4;q=0.2,*/*;q=0.1"
)
TEXT_0_0_4 = "text/plain; version=0.0.4; charset=utf-8"


def is_openmetrics(content_type: str) -> bool:
    """OpenMetrics in a version Prometheus' Accept header lists: older prometheus_client releases
    (0.17, the floor) label their OpenMetrics 1.0 output version=0.0.1, newer ones version=1.0.0."""
    media, *params = (p.strip() for p in content_type.split(";"))
    return media == "application/openmetrics-text" and bool({"version=1.0.0", "version=0.0.1"} & set(params))


@pytest.fixture
def metrics() -> SchedulerMetrics:
    m = SchedulerMetrics(CollectorRegistry())
    m.schedule_attempts.labels(result="scheduled", profile="netsched").inc(3)
    m.leader.set(1)
    return m


@pytest.fixture
def cert(tmp_path: Path) -> Iterator[ServingCert]:
    pair = serving_cert(cert_dir=str(tmp_path / "certs"), bind_address="127.0.0.1")
    yield pair
    pair.close()


@pytest.fixture(params=["http", "https"])
def server(
    request: pytest.FixtureRequest, metrics: SchedulerMetrics, cert: ServingCert
) -> Iterator[ObservabilityServer]:
    tls = cert.context() if request.param == "https" else None
    with ObservabilityServer("127.0.0.1", 0, registry=metrics.registry, tls=tls) as srv:
        yield srv


def scrape(
    server: ObservabilityServer, cert: ServingCert, headers: dict[str, str]
) -> tuple[http.client.HTTPResponse, bytes]:
    """GET /metrics with these headers (HTTPS verifying our certificate); the response and its raw body."""
    if server.tls is not None:
        ctx = ssl.create_default_context(cafile=cert.cert_file)
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            "localhost", server.port, context=ctx, timeout=10
        )
    else:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/metrics", headers=headers)
        resp = conn.getresponse()
        return resp, resp.read()
    finally:
        conn.close()


def samples(families: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


ATTEMPTS = ("scheduler_schedule_attempts_total", (("profile", "netsched"), ("result", "scheduled")))


@pytest.mark.parametrize(
    "accept", [PROMETHEUS_2_ACCEPT, PROMETHEUS_3_ACCEPT], ids=["prometheus2", "prometheus3"]
)
def test_a_prometheus_scrape_gets_gzipped_openmetrics(
    server: ObservabilityServer, cert: ServingCert, accept: str
) -> None:
    resp, raw = scrape(server, cert, {"Accept": accept, "Accept-Encoding": "gzip"})
    assert resp.status == 200
    assert is_openmetrics(resp.getheader("Content-Type", ""))
    assert resp.getheader("Content-Encoding") == "gzip"
    assert "Accept-Encoding" in resp.getheader("Vary", "")
    assert int(resp.getheader("Content-Length", "-1")) == len(raw)
    body = gzip.decompress(raw).decode()
    assert body.endswith("# EOF\n")
    assert samples(parse_openmetrics(body))[ATTEMPTS] == 3


def test_without_accept_it_is_the_text_format_uncompressed(
    server: ObservabilityServer, cert: ServingCert
) -> None:
    resp, raw = scrape(server, cert, {})
    assert resp.status == 200 and resp.getheader("Content-Type") == TEXT_0_0_4
    assert resp.getheader("Content-Encoding") is None
    body = raw.decode()
    assert "# EOF" not in body and samples(parse_text(body))[ATTEMPTS] == 3


@pytest.mark.parametrize(
    ("headers", "openmetrics", "gzipped"),
    [
        ({"Accept": "text/plain;version=0.0.4", "Accept-Encoding": "gzip, deflate"}, False, True),
        ({"Accept": "application/openmetrics-text", "Accept-Encoding": "identity"}, True, False),
        ({"Accept": "*/*", "Accept-Encoding": "br;q=1.0, GZIP;q=0.5"}, False, True),
    ],
)
def test_negotiation_follows_the_headers(
    server: ObservabilityServer, cert: ServingCert, headers: dict[str, str], openmetrics: bool, gzipped: bool
) -> None:
    resp, raw = scrape(server, cert, headers)
    assert resp.status == 200
    assert is_openmetrics(resp.getheader("Content-Type", "")) == openmetrics
    assert (resp.getheader("Content-Encoding") == "gzip") == gzipped
    body = (gzip.decompress(raw) if gzipped else raw).decode()
    assert samples((parse_openmetrics if openmetrics else parse_text)(body))[ATTEMPTS] == 3


def test_real_prometheus_scrapes_openmetrics_over_https(metrics: SchedulerMetrics, cert: ServingCert) -> None:
    require_prometheus()
    served: list[tuple[str | None, str | None, EndpointReply]] = []
    with ObservabilityServer("127.0.0.1", 0, registry=metrics.registry, tls=cert.context()) as srv:
        plain_metrics = srv.metrics

        def recording(accept: str | None, accept_encoding: str | None) -> EndpointReply:
            reply = plain_metrics(accept, accept_encoding)
            served.append((accept, accept_encoding, reply))
            return reply

        srv.metrics = recording  # type: ignore[method-assign]
        prom = PrometheusServer([f"127.0.0.1:{srv.port}"])
        # The fixture's scrape config is plain HTTP: this one scrapes HTTPS, trusting our certificate.
        prom.config_file.write_text(
            json.dumps(
                {
                    "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
                    "scrape_configs": [
                        {
                            "job_name": "netsched",
                            "scheme": "https",
                            "tls_config": {"ca_file": cert.cert_file, "server_name": "localhost"},
                            "static_configs": [{"targets": [f"127.0.0.1:{srv.port}"]}],
                        }
                    ],
                }
            )
        )
        with prom:
            value = prom.wait_for('scheduler_schedule_attempts_total{job="netsched",result="scheduled"}')
            assert value[0]["value"][1] == "3"
            assert prom.wait_for('up{job="netsched"}')[0]["value"][1] == "1"
            families = wait_until(lambda: _metadata(prom), timeout=10, what="target metadata")
    # Prometheus asked for OpenMetrics, gzipped, and got it.
    accept, accept_encoding, reply = served[0]
    assert accept is not None and accept.startswith("application/openmetrics-text;version=1.0.0")
    assert accept_encoding is not None and "gzip" in accept_encoding
    assert is_openmetrics(reply.content_type) and ("Content-Encoding", "gzip") in reply.headers
    # Its OpenMetrics parser took the counter family's name without _total: the text parser keeps it.
    assert families.get("scheduler_schedule_attempts") == "counter"
    assert "scheduler_schedule_attempts_total" not in families


def _metadata(prom: PrometheusServer) -> dict[str, str]:
    with urllib.request.urlopen(f"{prom.url}/api/v1/targets/metadata", timeout=5) as r:
        data = json.load(r)["data"]
    return {m["metric"]: m["type"] for m in data}
