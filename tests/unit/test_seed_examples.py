"""The seed articles' configs and plugins work as written (issue 13).

examples/{hello_world_plugin,node_filter,example_plugin}.py each start with one
command and their seed YAML; examples/sample_scheduler.yaml is the articles'
filter profile (CheckPodCountLimit, CheckPodLimitResources,
CheckCSIStorageCapacity, LvmVolumeCapacity).  The seed files are v1beta1, as
the articles write them; until v1beta1 loading lands these tests read them as
v1beta2 through `seed_text`.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

import netsched
from netsched.app import build_registry
from netsched.config import load_config
from netsched.framework import CycleState, FilterPlugin, NodeInfo, PodInfo, Status
from netsched.framework.runtime import Framework, FrameworkBuildError
from netsched.framework.search import FitError
from netsched.framework.snapshot import Snapshot
from netsched.plugins.lvm_volume_capacity import REFUSAL
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_framework, fake_services, plugin_of, schedule_pod
from netsched.testing.prometheus import fake_hub

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MB = 1e6


def seed_text(name: str) -> str:
    text = (EXAMPLES / name).read_text()
    assert "apiVersion: kubescheduler.config.k8s.io/v1beta1" in text  # shipped as the articles write it
    return text  # loaded as written: v1beta1 is converted with a deprecation warning


def load_example(stem: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"seed_{stem}", EXAMPLES / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("stem", "cls"),
    [
        ("hello_world_plugin", "HelloWorldPlugin"),
        ("node_filter", "NodeFilter"),
        ("example_plugin", "Example"),
    ],
)
def test_each_example_starts_with_one_command_and_its_seed(stem: str, cls: str, tmp_path: Path) -> None:
    # The example's own entry point: netsched.main(netsched.with_plugin(Plugin)) with --config.
    cfg = tmp_path / "seed.yaml"
    cfg.write_text(seed_text(f"{stem}.yaml"))
    out = tmp_path / "written.yaml"
    plugin = getattr(load_example(stem), cls)
    rc = netsched.main(
        netsched.with_plugin(plugin), argv=["--config", str(cfg), "--write-config-to", str(out)]
    )
    assert rc == 0
    written = yaml.safe_load(out.read_text())
    points = written["profiles"][0]["plugins"]
    assert any(e["name"] == plugin.name for block in points.values() for e in block.get("enabled") or [])


# ---------------------------------------------------------------- HelloWorldPlugin


def test_hello_world_profile_scores_only_by_bandwidth_inversely() -> None:
    plugin = load_example("hello_world_plugin").HelloWorldPlugin
    registry = build_registry([plugin])
    profile = load_config(seed_text("hello_world_plugin.yaml"), registry).profiles[0]
    assert [r.name for r in profile.plugins["score"]] == ["HelloWorldPlugin"]  # disabled: "*" leaves it alone
    args = profile.args("HelloWorldPlugin")
    assert (args.xxx, args.yyy, args.zzz) == ("xxx", "123", 3)  # type: ignore[attr-defined]
    hub, fake = fake_hub()
    fwk = Framework(profile, registry, fake_services(metrics=hub))
    fake.serve(plugin_of(fwk, plugin).source, plugin.name, {"n0": 40 * MB, "n1": 10 * MB, "n2": 80 * MB})
    hub.poll_now()
    out = schedule_pod(make_pod("p"), [make_node(n) for n in ("n0", "n1", "n2")], framework=fwk)
    assert out.node == "n1"
    assert {n: s for n, (s, _) in out.scores["HelloWorldPlugin"].items()} == {"n0": 50, "n1": 88, "n2": 0}


def test_hello_world_args_are_checked_with_paths() -> None:
    plugin = load_example("hello_world_plugin").HelloWorldPlugin
    text = seed_text("hello_world_plugin.yaml").replace("zzz: 3", "zzz: three")
    with pytest.raises(
        Exception, match=r"pluginConfig\[0\]\.args\.zzz: Invalid value: \"three\": must be an integer"
    ):
        load_config(text, build_registry([plugin]))


# ---------------------------------------------------------------- nodeFilter and example


def test_node_filter_logs_allocatable_and_passes(caplog: pytest.LogCaptureFixture) -> None:
    plugin = load_example("node_filter").NodeFilter
    registry = build_registry([plugin])
    profile = load_config(seed_text("node_filter.yaml"), registry).profiles[0]
    assert "nodeFilter" in [r.name for r in profile.plugins["filter"]]
    fwk = Framework(profile, registry, fake_services())
    with caplog.at_level(logging.INFO, logger="node_filter"):
        out = schedule_pod(
            make_pod("p"), [make_node("a").capacity(cpu="2", memory="1Gi"), make_node("b")], framework=fwk
        )
    assert out.node in ("a", "b")
    logged = [r.getMessage() for r in caplog.records if r.name == "node_filter"]
    assert f"Node allocatable pod=default/p node=a cpu=2000m memory={1024**3}" in logged
    assert any("node=b" in m for m in logged)


def test_example_plugin_runs_at_pre_filter_filter_and_pre_bind(caplog: pytest.LogCaptureFixture) -> None:
    plugin = load_example("example_plugin").Example
    registry = build_registry([plugin])
    profile = load_config(seed_text("example_plugin.yaml"), registry).profiles[0]
    for point in ("preFilter", "filter", "preBind"):
        assert "example" in [r.name for r in profile.plugins[point]], point
    fwk = Framework(profile, registry, fake_services())
    nodes = [make_node("a")]
    with caplog.at_level(logging.INFO, logger="example_plugin"):
        out = schedule_pod(make_pod("p"), nodes, framework=fwk)
    assert out.node == "a"
    ex = plugin_of(fwk, plugin)
    fwk.set_snapshot(Snapshot.of(node_infos(list(nodes))))
    assert ex.pre_bind(CycleState(), make_pod("p").info(), "a").ok
    gone = ex.pre_bind(CycleState(), make_pod("p").info(), "vanished")
    assert not gone.ok and "node 'vanished' is not in the snapshot" in " ".join(gone.reasons)
    logged = [r.getMessage() for r in caplog.records if r.name == "example_plugin"]
    assert "PreFilter pod=default/p" in logged and "Filter pod=default/p node=a" in logged


# ---------------------------------------------------------------- the seed filter profile


class CSIStorageCapacityStandIn(FilterPlugin):  # CheckCSIStorageCapacity lands with issue 11
    name = "CheckCSIStorageCapacity"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


class MyLvmVolumeCapacity(FilterPlugin):
    """What a user adds out of tree: here, every node has room."""

    name = "LvmVolumeCapacity"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


def seed_profile(*extra: Any) -> tuple[Any, Any]:
    stand_in = [] if "CheckCSIStorageCapacity" in build_registry() else [CSIStorageCapacityStandIn]
    registry = build_registry([*stand_in, *extra])
    return load_config(seed_text("sample_scheduler.yaml"), registry).profiles[0], registry


def test_seed_profile_loads_with_its_args() -> None:
    profile, _ = seed_profile()
    filters = [r.name for r in profile.plugins["filter"]]
    assert filters[-4:] == [
        "CheckPodCountLimit",
        "CheckPodLimitResources",
        "CheckCSIStorageCapacity",
        "LvmVolumeCapacity",
    ]
    assert "DefaultPreemption" not in [r.name for r in profile.plugins.get("postFilter", [])]
    assert profile.args("CheckPodCountLimit").pod_count_limit == 2
    assert profile.args("CheckPodLimitResources").limit_ratio == (("cpu", 0.7), ("memory", 0.7))


def test_seed_profile_refuses_lvm_volume_capacity_saying_how_to_add_it() -> None:
    profile, registry = seed_profile()
    with pytest.raises(FrameworkBuildError) as e:
        Framework(profile, registry, fake_services())
    assert "plugin 'LvmVolumeCapacity' failed to initialise: " + REFUSAL in str(e.value)
    assert "is not included in netsched" in REFUSAL and "netsched.with_plugin(LvmVolumeCapacity)" in REFUSAL


def test_seed_profile_with_an_out_of_tree_lvm_plugin_schedules() -> None:
    profile, registry = seed_profile(MyLvmVolumeCapacity)  # replaces the in-tree refusal
    fwk = Framework(profile, registry, fake_services())
    nodes = [
        make_node("full").capacity(cpu="4", memory="8Gi"),
        make_node("tight").capacity(cpu="4", memory="8Gi"),
    ]
    nodes.append(make_node("free").capacity(cpu="4", memory="8Gi"))
    existing = [make_pod(f"f{i}").node("full") for i in range(2)]  # podCountLimit 2: full
    existing.append(make_pod("t").limit(cpu="2", memory="1Gi").node("tight"))  # 2 of 2.8 cpu limit used
    out = schedule_pod(make_pod("p").limit(cpu="1", memory="1Gi"), nodes, framework=fwk, existing=existing)
    assert out.node == "free"
    with pytest.raises(FitError) as e:
        schedule_pod(
            make_pod("big").req(cpu="500m").limit(cpu="1"), nodes[:2], framework=fwk, existing=existing
        )
    msg = str(e.value)
    assert "node(s) reached the pod count limit" in msg and "Insufficient cpu limit headroom" in msg


def test_seed_plugins_alone_through_build_framework() -> None:
    from netsched.plugins.check_pod_count_limit import CheckPodCountLimit, CheckPodCountLimitArgs

    fwk = build_framework([CheckPodCountLimit], args={"CheckPodCountLimit": CheckPodCountLimitArgs(1)})
    out = schedule_pod(
        make_pod("p"), [make_node("a"), make_node("b")], framework=fwk, existing=[make_pod("e").node("a")]
    )
    assert out.node == "b"
