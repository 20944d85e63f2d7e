"""kube-scheduler's command lines, as users copy them from articles, parse; precedence as in kube."""

from __future__ import annotations

import logging

import pytest

from netsched.app import build_registry
from netsched.cli import parse_args
from netsched.options import apply_flags, load


@pytest.fixture(autouse=True)
def _netsched_logs(caplog: pytest.LogCaptureFixture) -> None:
    # Other tests (simulate, demo) raise the root level; these assert on netsched's warnings.
    caplog.set_level(logging.INFO, logger="netsched")


ARTICLE_1 = [
    "--kube-api-qps=200",
    "--kube-api-burst=300",
    "--leader-elect=false",
    "--profiling=false",
    "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--kubeconfig=/etc/kubernetes/scheduler.conf",
    "--config=/etc/kubernetes/scheduler-config.yaml",
    "--v=5",
]
ARTICLE_2 = [
    "--leader-elect=true",
    "--leader-elect-lease-duration=15s",
    "--leader-elect-renew-deadline=10s",
    "--leader-elect-retry-period=2s",
    "--leader-elect-resource-lock=leases",
    "--leader-elect-resource-name=netsched",
    "--leader-elect-resource-namespace=netsched-system",
    "--secure-port=10259",
    "--bind-address=127.0.0.1",
    "--tls-cert-file=/certs/tls.crt",
    "--tls-private-key-file=/certs/tls.key",
    "--tls-min-version=VersionTLS13",
    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
    "--kube-api-content-type=application/vnd.kubernetes.protobuf",
    "--master=https://10.0.0.1:6443",
    "--logging-format=json",
    "--feature-gates=SchedulerQueueingHints=true,MadeUpGate=false",
    "--port=0",
    "-v=2",
]


def test_article_command_lines_parse() -> None:
    o = parse_args(ARTICLE_1)
    assert (o.kube_api_qps, o.kube_api_burst, o.leader_elect, o.profiling) == (200.0, 300, False, False)
    assert o.authentication_kubeconfig == o.authorization_kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert o.verbosity == 5 and o.config.endswith("scheduler-config.yaml")
    o = parse_args(ARTICLE_2)
    assert (o.leader_elect_lease_duration, o.leader_elect_renew_deadline, o.leader_elect_retry_period) == (
        15.0,
        10.0,
        2.0,
    )
    assert o.secure_port == 10259 and o.bind_address == "127.0.0.1" and o.tls_min_version == "VersionTLS13"
    assert o.authorization_always_allow_paths == ["/healthz", "/readyz", "/livez", "/metrics"]
    assert o.feature_gates == {"SchedulerQueueingHints": True, "MadeUpGate": False}
    assert o.port == 0 and o.verbosity == 2 and o.logging_format == "json"


def test_defaults_are_kube_schedulers() -> None:
    o = parse_args([])
    assert o.secure_port == 10259 and o.bind_address == "0.0.0.0"
    assert o.authorization_always_allow_paths == ["/healthz", "/readyz", "/livez"]
    assert o.authentication_token_webhook_cache_ttl == 10.0
    assert (
        o.authorization_webhook_cache_authorized_ttl == o.authorization_webhook_cache_unauthorized_ttl == 10.0
    )
    assert o.metrics_bind_address == ""  # plain HTTP only when asked for


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--no-such-flag"], "unrecognized arguments"),
        (["--port=10251"], "only --port=0"),
        (["--leader-elect-lease-duration=15"], "duration"),
        (["--feature-gates=Broken"], "NAME=true|false"),
        (["--tls-cert-file=/c.crt"], "together"),
        (["--leader-elect=maybe"], "true or false"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_without_config_every_flag_applies() -> None:
    cfg = load("", build_registry())
    ignored = apply_flags(cfg, parse_args([*ARTICLE_1[:-2], "--leader-elect-lease-duration=30s"]))
    assert ignored == []
    assert (cfg.client_connection.qps, cfg.client_connection.burst) == (200.0, 300)
    assert cfg.client_connection.kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert cfg.enable_profiling is False and cfg.enable_contention_profiling is False
    assert cfg.leader_election.leader_elect is False and cfg.leader_election.lease_duration == 30.0


def test_with_config_deprecated_flags_are_ignored_leader_election_flags_win(tmp_path: object) -> None:
    cfg = load("", build_registry())
    before = (cfg.client_connection.qps, cfg.client_connection.kubeconfig, cfg.enable_profiling)
    opts = parse_args([*ARTICLE_1, "--leader-elect-resource-name=mine"])
    ignored = apply_flags(cfg, opts)
    assert ignored == ["--kubeconfig", "--kube-api-qps", "--kube-api-burst", "--profiling"]
    assert (cfg.client_connection.qps, cfg.client_connection.kubeconfig, cfg.enable_profiling) == before
    assert cfg.leader_election.leader_elect is False  # --leader-elect is honoured with --config
    assert cfg.leader_election.resource_name == "mine"


def test_ignored_flags_and_unknown_gates_are_warned(caplog: pytest.LogCaptureFixture) -> None:
    from netsched.options import warn_about_flags

    cfg = load("", build_registry())
    opts = parse_args(
        [*ARTICLE_1, "--feature-gates=MadeUpGate=true,SchedulerQueueingHints=false", "--port=0"]
    )
    with caplog.at_level(logging.INFO, logger="netsched"):
        warn_about_flags(opts, cfg, apply_flags(cfg, opts))
    text = caplog.text
    assert "flag=--kubeconfig" in text and "flag=--kube-api-qps" in text
    assert "Unknown feature gate; ignored gate=MadeUpGate" in text
    assert "gate=SchedulerQueueingHints" in text and "--port is deprecated" in text


def test_the_queueing_hints_gate_is_applied_not_only_accepted(caplog: pytest.LogCaptureFixture) -> None:
    from netsched.options import warn_about_flags

    cfg = load("", build_registry())
    opts = parse_args(["--feature-gates=SchedulerQueueingHints=false"])
    with caplog.at_level(logging.INFO, logger="netsched"):
        warn_about_flags(opts, cfg, apply_flags(cfg, opts))
    assert "Feature gate applied gate=SchedulerQueueingHints value=False" in caplog.text


def test_log_flush_frequency_is_reported_once_as_without_effect(caplog: pytest.LogCaptureFixture) -> None:
    from netsched.options import warn_about_flags

    cfg = load("", build_registry())
    opts = parse_args(["--log-flush-frequency=5s"])
    with caplog.at_level(logging.INFO, logger="netsched"):
        warn_about_flags(opts, cfg, apply_flags(cfg, opts))
    flush = [r for r in caplog.records if r.getMessage().startswith("--log-flush-frequency has no effect")]
    assert len(flush) == 1 and flush[0].args == ("5s",)
    caplog.clear()
    opts = parse_args([])
    with caplog.at_level(logging.INFO, logger="netsched"):
        warn_about_flags(opts, cfg, apply_flags(cfg, opts))
    assert not caplog.records
