"""The command line as an operator meets it: --help, --version, kube-scheduler's logging flags."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netsched.cli import SUBCOMMANDS, parse_args, parsers
from netsched.flags import HelpFormatter, show_default
from netsched.logutil import ModulePattern
from netsched.version import KUBE_BASELINE

ROOT = Path(__file__).resolve().parents[2]
PARSERS = parsers()


def _flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def _blocks(help_text: str) -> dict[str, str]:
    """Each flag's help entry (its line and the lines after it), whitespace collapsed, by first flag."""
    out: dict[str, str] = {}
    current = ""
    for line in help_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("-"):
            current = stripped.split()[0].rstrip(",")
            out[current] = stripped
        elif stripped and current:
            out[current] += " " + stripped
        else:
            current = ""
    return out


def test_parsers_cover_every_subcommand() -> None:
    assert set(PARSERS) == {"netsched", *(f"netsched {name}" for name in SUBCOMMANDS)}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_flag_has_help(name: str) -> None:
    missing = [a.option_strings or [a.dest] for a in _flags(PARSERS[name]) if not (a.help or "").strip()]
    assert not missing, f"{name}: no help text for {missing}"


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_help_shows_every_non_zero_default(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per flag: nothing wrapped
    parser = PARSERS[name]
    assert parser.formatter_class is HelpFormatter
    blocks = _blocks(parser.format_help())
    for action in _flags(parser):
        shown = show_default(action)
        if shown and "(default" not in (action.help or ""):
            assert blocks[action.option_strings[0]].endswith(shown), blocks[action.option_strings[0]]


def test_help_shows_defaults_as_pflag_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    lines = _blocks(PARSERS["netsched"].format_help())
    assert lines["--secure-port"].endswith("(default 10259)")
    assert lines["--bind-address"].endswith('(default "0.0.0.0")')
    assert lines["--config-reload-interval"].endswith("(default 2s)")
    assert lines["--authentication-token-webhook-cache-ttl"].endswith("(default 10s)")
    assert lines["--authorization-always-allow-paths"].endswith("(default /healthz,/readyz,/livez)")
    assert lines["--logging-format"].endswith('(default "text")')
    assert lines["--leader-elect-lease-duration"].endswith("(default 15s)")
    assert "--secure-port int" in lines["--secure-port"]
    assert "--config-reload-interval duration" in lines["--config-reload-interval"]
    # Zero values show no default, as pflag.
    assert "(default" not in lines["--master"] and "(default" not in lines["--dry-run"]


def test_defaults_given_as_text_are_converted() -> None:
    o = parse_args([])
    assert o.config_reload_interval == 2.0
    assert o.authentication_token_webhook_cache_ttl == 10.0
    assert o.authorization_always_allow_paths == ["/healthz", "/readyz", "/livez"]
    assert o.vmodule == () and o.log_flush_frequency is None


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--version", "--config", "ignored.yaml"])
    assert exit_.value.code == 0
    expected = f"netsched v{importlib.metadata.version('netsched')} (follows kube-scheduler {KUBE_BASELINE})"
    assert capsys.readouterr().out == expected + "\n"
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--version=raw"])
    assert exit_.value.code == 0
    raw = capsys.readouterr().out.splitlines()
    assert raw[0] == expected and f"kubeSchedulerBaseline: {KUBE_BASELINE}" in raw
    assert any(line.startswith("python: ") for line in raw)
    # --version=false is a no-op, as in kube.
    assert parse_args(["--version=false"]).secure_port == 10259
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--version=v1.2.3"])
    assert exit_.value.code == 2
    assert "--version=v1.2.3: expected true, false or raw" in capsys.readouterr().err


def test_version_in_a_real_process() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "netsched.cli", "--version"],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("netsched v") and KUBE_BASELINE in res.stdout


def test_kube_baseline_is_the_one_docs_state() -> None:
    doc = (ROOT / "docs" / "KUBE_VERSION.md").read_text(encoding="utf-8")
    assert f"**Baseline: kube-scheduler {KUBE_BASELINE}.**" in doc


# kubeadm's kube-scheduler static pod, with the logging flags operators add to it.
KUBE_SCHEDULER_MANIFEST = [
    "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--bind-address=127.0.0.1",
    "--kubeconfig=/etc/kubernetes/scheduler.conf",
    "--leader-elect=true",
    "--v=2",
    "--vmodule=schedule_one=4,binder*=5",
    "--log-flush-frequency=5s",
]


def test_a_kube_scheduler_manifest_with_logging_flags_parses() -> None:
    o = parse_args(KUBE_SCHEDULER_MANIFEST)
    assert o.vmodule == (ModulePattern("schedule_one", 4), ModulePattern("binder*", 5))
    assert o.log_flush_frequency == 5.0 and o.verbosity == 2


@pytest.mark.parametrize(
    ("flag", "error"),
    [
        (
            "--vmodule=binder",
            "argument --vmodule: syntax error in 'binder': expect comma-separated list of pattern=N",
        ),
        ("--vmodule=binder=-1", "negative level"),
        ("--log-flush-frequency=often", "expected a duration such as 15s"),
    ],
)
def test_bad_logging_flags_exit_2_naming_the_flag(
    flag: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args([flag])
    assert exit_.value.code == 2
    assert error in capsys.readouterr().err


def test_the_usage_line_names_every_subcommand() -> None:
    usage = PARSERS["netsched"].format_usage()
    assert usage.startswith("usage: netsched [flags]")
    for name in SUBCOMMANDS:
        assert f"netsched {name} " in usage, usage


@pytest.mark.parametrize("name", ["netsched demo", "netsched simulate"])
def test_seed_says_its_default(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    assert "default" in _blocks(PARSERS[name].format_help())["--seed"]
