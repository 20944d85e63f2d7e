"""The first run from an operator's machine: README's commands, as written, against the fake API server.

Every bash block of the README's "Run it against a cluster" section is marked "tested" and runs
in bash in a directory laid out like the checkout after the set-up command (`.venv/bin/netsched`
and `.venv/bin/python` being this checkout's, `deploy/` its own) with HOME holding the fake
server's kubeconfig at ~/.kube/config (and no $KUBECONFIG), and no `netsched` on PATH: a block
that calls a bare `netsched`, or the system python3 (which has no PyYAML), fails. A block that
starts netsched must schedule a pod; the others must succeed. The only addition:
`--secure-port=0`, so parallel test runs on one machine do not fight over 10259. And the
mistakes that used to end the first run: --kubeconfig with --config (ignored, as kube-scheduler
does: the error names clientConnection.kubeconfig), a ConfigMap manifest or an empty file as
--config.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from netsched.testing.builders import make_node, make_pod
from netsched.testing.fakeapi import FakeAPIServer
from netsched.testing.wait import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- tested: tests/integration/test_out_of_cluster_run.py runs this block as written -->"


def section_blocks() -> list[str]:
    """Every bash block of the README's out-of-cluster section, each of them marked tested."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Run it against a cluster\n", 1)[1].split("\n## ", 1)[0]
    every = re.findall(r"([^\n]*)\n```bash\n(.*?)```", section, re.S)
    assert len(every) == 3, "README.md's out-of-cluster commands are not where this test looks"
    assert all(before == MARKER for before, _ in every), "a block of the section is not marked tested"
    return [block for _, block in every]


def starts_netsched(block: str) -> bool:
    return "netsched --" in block


def operator(tmp_path: Path, server: FakeAPIServer) -> dict[str, str]:
    """The environment: a HOME with ~/.kube/config, no `netsched` on PATH, no KUBECONFIG."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    server.write_kubeconfig(home / ".kube" / "config")
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "VIRTUAL_ENV")}
    # The test's own venv may be on PATH: keep only directories without a netsched in them.
    path = [d for d in env["PATH"].split(os.pathsep) if d and not (Path(d) / "netsched").exists()]
    # The system's python has no PyYAML (it is in .venv only): a block that calls it fails here
    # whether or not this machine's python3 happens to have it.
    system = tmp_path / "system-bin"
    system.mkdir()
    for name in ("python", "python3"):
        (system / name).write_text("#!/bin/sh\necho 'the system python: no PyYAML here' >&2\nexit 1\n")
        (system / name).chmod(0o755)
    env.update(HOME=str(home), PATH=os.pathsep.join([str(system), *path]), PYTHONPATH=str(REPO))
    return env


def checkout(tmp_path: Path) -> Path:
    """A directory laid out like the checkout after the set-up command: .venv/bin/netsched and
    .venv/bin/python (this checkout's, the first with --secure-port=0) and deploy/."""
    work = tmp_path / "work"
    venv_bin = work / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    shims = {
        "netsched": f'exec {sys.executable} -m netsched.cli "$@" --secure-port=0',
        "python": f'exec {sys.executable} "$@"',
    }
    for name, line in shims.items():
        (venv_bin / name).write_text(f"#!/bin/sh\n{line}\n")
        (venv_bin / name).chmod(0o755)
    (work / "deploy").symlink_to(REPO / "deploy")
    return work


BLOCKS = section_blocks()
RUNS = [b for b in BLOCKS if starts_netsched(b)]


def test_every_block_of_the_section_is_run_here() -> None:
    assert len(RUNS) == 2 and len(BLOCKS) == 3


def test_the_readme_extracts_the_configmaps_config_as_written(tmp_path: Path, server: FakeAPIServer) -> None:
    (block,) = [b for b in BLOCKS if not starts_netsched(b)]
    work = checkout(tmp_path)
    env = operator(tmp_path, server)
    done = subprocess.run(
        ["bash", "-e", "-c", block], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    manifest = yaml.safe_load((REPO / "deploy" / "configmap.yaml").read_text(encoding="utf-8"))
    assert (work / "netsched-deploy.yaml").read_text(encoding="utf-8") == manifest["data"]["config.yaml"]
    # And what it wrote is a config file --config takes (the kubeconfig still to be added).
    check = run_cli(work, env, "--config", "netsched-deploy.yaml", "--write-config-to", "out.yaml")
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("block", RUNS, ids=["config-file", "kubeconfig-flag"])
def test_the_readme_commands_schedule_a_pod_from_outside_the_cluster(
    tmp_path: Path, server: FakeAPIServer, block: str
) -> None:
    work = checkout(tmp_path)
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


def test_kubeconfig_with_config_names_where_the_kubeconfig_goes(
    tmp_path: Path, server: FakeAPIServer, kubeconfig: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
    )
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
    tmp_path: Path, server: FakeAPIServer, content: str | None, expected: str
) -> None:
    config = tmp_path / "config.yaml"
    if content is None:
        config.write_text((REPO / "deploy" / "configmap.yaml").read_text(encoding="utf-8"))
    else:
        config.write_text(content)
    done = run_cli(tmp_path, operator(tmp_path, server), "--config", str(config))
    assert done.returncode == 1
    assert expected in done.stderr, done.stderr
