"""PrometheusArgs: defaults, validation with field paths, sharing keys."""

from __future__ import annotations

from typing import Any

import pytest

from netsched.framework.fields import ErrorList, Fields
from netsched.metrics import DEFAULT_QUERIES, FAIL_OPEN, PrometheusArgs
from netsched.metrics.args import redact
from netsched.metrics.queries import CPU, NETWORK_RX, builtin_query, render


def decode(raw: Any) -> tuple[PrometheusArgs, list[str]]:
    errs = ErrorList()
    args = PrometheusArgs.decode(Fields(raw, "args.prometheus", errs))
    return args, [str(e) for e in errs]


def test_defaults() -> None:
    args, errs = decode({})
    assert errs == []
    assert args == PrometheusArgs()
    assert args.prometheus_address == "http://prometheus-k8s.monitoring.svc:9090"
    assert args.timeout_seconds == 5
    assert args.poll_interval_seconds == 15
    assert args.max_sample_age_seconds == 60
    assert args.stale_policy == FAIL_OPEN
    assert args.node_mapping.by == "label" and args.node_mapping.label == "node"
    assert args.rate_window == "1m"
    assert args.estimation.cpu_factor == 0.85 and args.estimation.memory_factor == 0.70
    assert args.estimation.default_bandwidth_bytes == 1024 * 1024
    assert args.estimation.max_lifetime_seconds == 120


def test_max_age_defaults_to_four_poll_intervals() -> None:
    args, errs = decode({"pollIntervalSeconds": 5})
    assert errs == []
    assert args.max_sample_age_seconds == 20
    assert args.timeout_seconds == 2.5  # half the interval when shorter than 5 s
    assert args.estimation.max_lifetime_seconds == 80  # margin 60 (the 1m window) + max age 20 > 2 x 20


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"prometheusAddress": "prom:9090"},
            'args.prometheus.prometheusAddress: Invalid value: "prom:9090": must start',
        ),
        ({"prometheusAddress": "http://p/?q=1"}, "must not have a query string"),
        (
            {"timeoutSeconds": 20},
            "args.prometheus.timeoutSeconds: Invalid value: 20.0: must be less than pollIntervalSeconds (15)",
        ),
        (
            {"pollIntervalSeconds": 0.5},
            "args.prometheus.pollIntervalSeconds: Invalid value: 0.5: must be greater than or equal to 1",
        ),
        (
            {"maxSampleAgeSeconds": 10},
            "args.prometheus.maxSampleAgeSeconds: Invalid value: 10.0: must be at least pollIntervalSeconds (15)",
        ),
        (
            {"stalePolicy": "open"},
            'args.prometheus.stalePolicy: Unsupported value: "open": supported values: "failOpen", "failClosed"',
        ),
        ({"nodeMapping": {"by": "ip"}}, 'args.prometheus.nodeMapping.by: Unsupported value: "ip"'),
        (
            {"nodeMapping": {"label": "kubernetes.io/hostname"}},
            "args.prometheus.nodeMapping.label: Invalid value",
        ),
        ({"nodeMapping": {"lable": "node"}}, "args.prometheus.nodeMapping.lable: Unknown field"),
        ({"queries": {"cpu": "  "}}, "args.prometheus.queries.cpu: Invalid value"),
        ({"queries": {"gpu": "x"}}, "args.prometheus.queries.gpu: Unknown field"),
        (
            {"rateWindow": "1 minute"},
            'args.prometheus.rateWindow: Invalid value: "1 minute": must be a Prometheus duration',
        ),
        ({"estimation": {"cpuFactor": -1}}, "args.prometheus.estimation.cpuFactor: Invalid value: -1.0"),
        (
            {"estimation": {"coverMarginSeconds": 60, "maxLifetimeSeconds": 50}},
            "args.prometheus.estimation.maxLifetimeSeconds: Invalid value: 50.0: must be greater than coverMarginSeconds (60)",
        ),
        (  # a lifetime no default margin fits: the message says the margin was defaulted
            {"estimation": {"maxLifetimeSeconds": 20}},
            "args.prometheus.estimation.maxLifetimeSeconds: Invalid value: 20.0: must be greater than "
            "coverMarginSeconds (defaulted to 30; set coverMarginSeconds lower)",
        ),
        (
            {"insecureSkipVerify": True, "caFile": "/ca.pem"},
            "args.prometheus.insecureSkipVerify: Invalid value: true",
        ),
        ({"bearerToken": "secret"}, "args.prometheus.bearerToken: Unknown field"),
        (
            {"maxResponseBytes": 100},
            "args.prometheus.maxResponseBytes: Invalid value: 100: must be greater than or equal to 1024",
        ),
        ({"maxResponseBytes": "64Mi"}, 'args.prometheus.maxResponseBytes: Invalid value: "64Mi"'),
    ],
)
def test_errors_name_the_field(raw: dict[str, Any], expected: str) -> None:
    args, errs = decode(raw)
    assert any(expected in e for e in errs), errs
    assert isinstance(args, PrometheusArgs)  # still usable


def test_all_errors_reported_at_once() -> None:
    _, errs = decode({"timeoutSeconds": "5s", "stalePolicy": "x", "rateWindow": "", "nodeMapping": {"by": 3}})
    assert len(errs) == 4


def test_encode_round_trips() -> None:
    raw = {
        "prometheusAddress": "https://prom.example:9091",
        "bearerTokenFile": "/var/run/token",
        "caFile": "/ca.pem",
        "pollIntervalSeconds": 10,
        "maxSampleAgeSeconds": 45,
        "stalePolicy": "failClosed",
        "nodeMapping": {"by": "instance", "instancePortStrip": False},
        "queries": {"cpu": "avg by ($by) (x)"},
        "rateWindow": "2m",
        "estimation": {"defaultBandwidthBytes": 0},
        "maxResponseBytes": 1 << 20,
    }
    args, errs = decode(raw)
    assert errs == []
    again, errs = decode(args.encode())
    assert errs == [] and again == args


def test_equal_args_are_one_key_and_connection_ignores_scoring_fields() -> None:
    a, _ = decode({"prometheusAddress": "http://p:9090"})
    b, _ = decode({"prometheusAddress": "http://p:9090/"})
    c, _ = decode({"prometheusAddress": "http://p:9090", "stalePolicy": "failClosed", "rateWindow": "30s"})
    assert a == b and hash(a) == hash(b)
    assert a != c and a.connection == c.connection
    d, _ = decode({"prometheusAddress": "http://p:9090", "nodeMapping": {"by": "instance"}})
    assert d.connection != a.connection


def test_queries_render_by_and_window() -> None:
    args, _ = decode({"nodeMapping": {"by": "instance"}, "rateWindow": "30s"})
    q = builtin_query(NETWORK_RX, args)
    assert q.startswith("sum by (instance) (rate(node_network_receive_bytes_total{device!~")
    assert "[30s]" in q and "$" not in q
    custom, _ = decode({"queries": {"cpu": 'avg by ($by) (x{job=~"node$"}[$window])'}})
    assert builtin_query(CPU, custom) == 'avg by (node) (x{job=~"node$"}[1m])'  # a regex $ survives
    assert render(DEFAULT_QUERIES[CPU], args) == builtin_query(CPU, args)
    with pytest.raises(KeyError, match="require_query"):
        builtin_query("gpu", args)


def test_redact_drops_credentials() -> None:
    assert redact("https://user:pw@prom:9090/x") == "https://prom:9090/x"
    assert redact("http://prom:9090") == "http://prom:9090"


def test_response_size_cap_defaults_and_is_per_connection() -> None:
    args, errs = decode({})
    assert errs == [] and args.max_response_bytes == 16 * 1024 * 1024
    small, errs = decode({"maxResponseBytes": 4096})
    assert errs == [] and small.connection.max_response_bytes == 4096
    assert small.connection != args.connection  # a different cap is a different poller


@pytest.mark.parametrize(
    ("raw", "margin"),
    [
        ({}, 60.0),  # the default 1m window: a sample must lie a whole window after the reservation
        ({"rateWindow": "2m30s"}, 150.0),
        ({"rateWindow": "10s"}, 30.0),  # never shorter than pod start
        ({"rateWindow": "5m", "estimation": {"coverMarginSeconds": 20}}, 20.0),  # explicit wins
        # An explicit lifetime caps the default at lifetime - maxSampleAge (60), never below 30:
        # configs valid before the margin followed rateWindow stay valid (before: an error).
        ({"rateWindow": "5m", "estimation": {"maxLifetimeSeconds": 200}}, 140.0),
        ({"rateWindow": "5m", "estimation": {"maxLifetimeSeconds": 50}}, 30.0),
        ({"estimation": {"maxLifetimeSeconds": 500}}, 60.0),  # room for the whole window
    ],
)
def test_cover_margin_follows_the_rate_window(raw: dict[str, Any], margin: float) -> None:
    args, errs = decode(raw)
    assert errs == []
    assert args.estimation.cover_margin_seconds == margin
    assert args.estimation.max_lifetime_seconds > margin
