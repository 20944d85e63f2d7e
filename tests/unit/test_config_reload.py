"""ConfigReloader: what changes a reload, what it refuses, and how the file may be replaced."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from netsched.app import build_registry
from netsched.config import SchedulerConfig, load_config
from netsched.config.reload import (
    INVALID,
    RESTART_REQUIRED,
    SUCCESS,
    UNCHANGED,
    ConfigReloader,
    restart_required_fields,
)
from netsched.observability.metrics import SchedulerMetrics


@pytest.fixture(autouse=True)
def _netsched_logs(caplog: pytest.LogCaptureFixture) -> None:
    # Other tests (simulate, demo) raise the root level; these assert on netsched's warnings.
    caplog.set_level(logging.INFO, logger="netsched")


REGISTRY = build_registry()


def config(weight: int = 1, name: str = "netsched", lease: str = "15s", extra: str = "") -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaseDuration: {lease}
percentageOfNodesToScore: 50
profiles:
- schedulerName: {name}
  plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: {weight}
{extra}"""


class Rig:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.applied: list[SchedulerConfig] = []
        self.metrics = SchedulerMetrics(CollectorRegistry())
        self.reloader = ConfigReloader(
            str(path),
            load_config(path, REGISTRY),
            lambda text: load_config(text, REGISTRY),
            self.applied.append,
            metrics=self.metrics,
        )

    def count(self, result: str) -> float:
        value = self.metrics.registry.get_sample_value("netsched_config_reloads_total", {"result": result})
        return value or 0.0

    def active_hashes(self) -> list[str]:
        return [
            s.labels["hash"]
            for m in self.metrics.registry.collect()
            if m.name == "netsched_config_info"
            for s in m.samples
        ]


def write(path: Path, text: str) -> None:
    path.write_text(text)
    # Same-second writes must still look different to stat (mtime_ns is enough on most
    # filesystems, but a coarse one could hide it): bump the mtime explicitly.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    path = tmp_path / "config.yaml"
    path.write_text(config())
    return Rig(path)


def test_a_weight_change_is_applied_and_counted(rig: Rig) -> None:
    first = rig.active_hashes()
    assert len(first) == 1 and rig.reloader.check() is None  # nothing changed yet
    write(rig.path, config(weight=7))
    result = rig.reloader.check()
    assert result is not None and result.result == SUCCESS
    assert rig.applied[-1].profiles[0].score_weights()["ImageLocality"] == 7
    assert rig.count(SUCCESS) == 1
    assert rig.active_hashes() == [result.digest] != first  # the old hash series is gone
    assert rig.reloader.check() is None  # seen


def test_touch_without_content_change_is_not_a_reload(rig: Rig) -> None:
    write(rig.path, config())
    assert rig.reloader.check() is None
    assert rig.reloader.reload().result == UNCHANGED  # SIGHUP on an unchanged file
    assert rig.applied == []


def test_restart_only_changes_are_refused_naming_each_field(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    write(rig.path, config(weight=3, lease="20s", name="other"))
    result = rig.reloader.check()
    assert result is not None and result.result == RESTART_REQUIRED
    # The lease name follows the first profile's name when not set: it changes too.
    assert result.problems == (
        "profiles (netsched -> other)",
        "leaderElection.leaseDuration",
        "leaderElection.resourceName",
    )
    assert "leaderElection.leaseDuration" in caplog.text and rig.applied == []
    assert rig.count(RESTART_REQUIRED) == 1
    assert rig.reloader.current.profiles[0].score_weights()["ImageLocality"] == 1  # still whole


def test_restart_required_fields_cover_queue_sort_and_client_connection() -> None:
    old = load_config(config(), REGISTRY)
    sort = "    queueSort:\n      enabled:\n      - name: PrioritySort\n      disabled:\n      - name: '*'\n"
    assert restart_required_fields(old, load_config(config(extra=sort), REGISTRY)) == []
    new = load_config(config() + "clientConnection:\n  qps: 5\nparallelism: 4\n", REGISTRY)
    assert restart_required_fields(old, new) == ["clientConnection.qps", "parallelism"]


def test_an_invalid_file_is_refused_with_every_error(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    bad = config(weight=3).replace("percentageOfNodesToScore: 50", "percentageOfNodesToScore: 500")
    bad += "parallelism: 0\n"
    write(rig.path, bad)
    result = rig.reloader.check()
    assert result is not None and result.result == INVALID
    assert any("percentageOfNodesToScore" in p for p in result.problems)
    assert any("parallelism" in p for p in result.problems)
    assert "percentageOfNodesToScore" in caplog.text and "parallelism" in caplog.text
    assert rig.applied == [] and rig.count(INVALID) == 1


def test_a_half_written_file_is_refused_then_the_finished_one_applies(rig: Rig) -> None:
    full = config(weight=9)
    write(rig.path, full[: full.index("  plugins:") + 20])  # cut mid-document
    result = rig.reloader.check()
    assert result is not None and result.result == INVALID
    write(rig.path, full)
    result = rig.reloader.check()
    assert result is not None and result.result == SUCCESS
    assert rig.applied[-1].profiles[0].score_weights()["ImageLocality"] == 9


def test_configmap_symlink_swap_is_seen(tmp_path: Path) -> None:
    """kubelet's atomic update: config.yaml -> ..data/config.yaml; ..data -> ..<timestamp>/."""
    mount = tmp_path / "etc-netsched"
    mount.mkdir()
    v1 = mount / "..2024_01_01_00_00_00.000000001"
    v1.mkdir()
    (v1 / "config.yaml").write_text(config(weight=1))
    (mount / "..data").symlink_to(v1.name)
    (mount / "config.yaml").symlink_to("..data/config.yaml")
    rig = Rig(mount / "config.yaml")
    # The kubelet writes the new version beside the old, then renames a new ..data link over it.
    v2 = mount / "..2024_01_01_00_01_00.000000002"
    v2.mkdir()
    (v2 / "config.yaml").write_text(config(weight=5))
    (mount / "..data_tmp").symlink_to(v2.name)
    os.replace(mount / "..data_tmp", mount / "..data")
    result = rig.reloader.check()
    assert result is not None and result.result == SUCCESS
    assert rig.applied[-1].profiles[0].score_weights()["ImageLocality"] == 5


def test_a_build_failure_on_apply_keeps_the_running_config(rig: Rig) -> None:
    from netsched.config import ConfigError
    from netsched.framework.fields import FieldError

    def refuse(_cfg: SchedulerConfig) -> None:
        raise ConfigError([FieldError("profiles", "Invalid value", "plugin X refused its args")])

    reloader = ConfigReloader(str(rig.path), rig.reloader.current, lambda t: load_config(t, REGISTRY), refuse)
    write(rig.path, config(weight=4))
    result = reloader.check()
    assert result is not None and result.result == INVALID and "refused its args" in result.problems[0]
    assert reloader.current.profiles[0].score_weights()["ImageLocality"] == 1


@pytest.mark.parametrize("text", ["", "# emptied\n"])
def test_an_emptied_file_is_refused_not_read_as_the_defaults(rig: Rig, text: str) -> None:
    write(rig.path, text)
    result = rig.reloader.check()
    assert result is not None and result.result == INVALID
    assert result.problems == (
        f"{rig.path}: Empty file: it holds no KubeSchedulerConfiguration "
        "(kube-scheduler: \"Object 'Kind' is missing\")",
    )
    assert rig.applied == []
