"""The first run from an operator's machine: README's commands, as written, against the fake API server.

Each README block marked "tested" runs in bash in an empty directory with HOME holding the fake
server's kubeconfig at ~/.kube/config (and no $KUBECONFIG), `netsched` being the command from
this checkout; the block must schedule a pod. The only addition: `--secure-port=0`, so parallel
test runs on one machine do not fight over 10259. And the mistakes that used to end the first
run: --kubeconfig with --config (ignored, as kube-scheduler does: the error names
clientConnection.kubeconfig), a ConfigMap manifest or an empty file as --config.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- tested: tests/integration/test_out_of_cluster_run.py runs this block as written -->"


def readme_blocks() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(re.escape(MARKER) + r"\n```bash\n(.*?)```", readme, re.S)
    assert len(blocks) == 2, "README.md's tested out-of-cluster commands are not where this test looks"
    return blocks


def operator(tmp_path: Path, server: FakeAPIServer) -> dict[str, str]:
    """The environment: a HOME with ~/.kube/config, `netsched` on PATH, no KUBECONFIG."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    server.write_kubeconfig(home / ".kube" / "config")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "netsched"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m netsched.cli "$@" --secure-port=0\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(REPO))
    return env


@pytest.mark.parametrize("block", readme_blocks(), ids=["config-file", "kubeconfig-flag"])
def test_the_readme_commands_schedule_a_pod_from_outside_the_cluster(tmp_path: Path, block: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with FakeAPIServer() as server:
        env = operator(tmp_path, server)
        server.create("nodes", make_node("n0").capacity(cpu="4").obj())
        server.create("pods", make_pod("first").scheduler("netsched").req(cpu="1").obj())
        # A session of its own: the SIGTERM goes to bash and netsched, which this test started.
        proc = subprocess.Popen(
            ["bash", "-e", "-c", block],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            wait_until(
                lambda: proc.poll() is not None or server.get("pods", "first")["spec"].get("nodeName"),
                timeout=60,
                what="the pod bound",
            )
            assert proc.poll() is None, proc.communicate()[0]
            assert server.get("pods", "first")["spec"]["nodeName"] == "n0"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
        assert "Flag ignored" not in out


def run_cli(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netsched.cli", *args, "--secure-port=0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_kubeconfig_with_config_names_where_the_kubeconfig_goes(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
    )
    with FakeAPIServer() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        env = operator(tmp_path, server)
        (Path(env["HOME"]) / ".kube" / "config").unlink()  # nothing at the default path either
        done = run_cli(tmp_path, env, "--config", str(config), "--kubeconfig", str(kubeconfig))
    assert done.returncode == 1
    assert 'flag="--kubeconfig" field="clientConnection.kubeconfig"' in done.stderr  # the warning
    assert "--kubeconfig was ignored because --config is given" in done.stderr
    assert "clientConnection.kubeconfig in the --config file" in done.stderr
    assert "pass --kubeconfig or" not in done.stderr  # the flag it just ignored


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "Empty file: it holds no KubeSchedulerConfiguration"),
        ("# all commented out\n", "Empty file: it holds no KubeSchedulerConfiguration"),
        (None, 'kind: Invalid value: "ConfigMap": this is a ConfigMap manifest'),
    ],
    ids=["empty", "comments-only", "configmap-manifest"],
)
def test_a_config_that_is_not_one_is_refused_saying_what_it_is(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    config = tmp_path / "config.yaml"
    if content is None:
        config.write_text((REPO / "deploy" / "configmap.yaml").read_text(encoding="utf-8"))
    else:
        config.write_text(content)
    with FakeAPIServer() as server:
        done = run_cli(tmp_path, operator(tmp_path, server), "--config", str(config))
    assert done.returncode == 1
    assert expected in done.stderr, done.stderr
