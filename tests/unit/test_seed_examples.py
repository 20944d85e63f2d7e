"""The seed articles' configs and plugins work as written (issue 13).

examples/{hello_world_plugin,node_filter,example_plugin}.py each start with one
command and their seed YAML; examples/sample_scheduler.yaml is the articles'
filter profile (CheckCSIStorageCapacity at preFilter and filter,
CheckPodCountLimit, CheckPodLimitResources, LvmVolumeCapacity) and
examples/sample_scheduler_deployment.yaml its three-replica deployment (v1beta3,
leader election on the Lease custom-scheduler).  The seed files are v1beta1, as
the articles write them, loaded as written.  tests/integration/test_seed_profile_http.py
runs them with the real command against the fake API server.
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
from netsched.cli import parse_args
from netsched.config import load_config
from netsched.framework import CycleState, FilterPlugin, NodeInfo, PodInfo, Status
from netsched.framework.runtime import Framework
from netsched.framework.search import FitError
from netsched.framework.snapshot import Snapshot
from netsched.plugins.lvm_volume_capacity import TOPOLVM_PROVISIONERS
from netsched.testing.builders import make_node, make_pod, node_infos
from netsched.testing.framework import build_framework, fake_services, plugin_of, schedule_pod
from netsched.testing.prometheus import fake_hub
from netsched.testing.volumes import pvc, storage_class, volume_objects

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


class MyLvmVolumeCapacity(FilterPlugin):
    """What a user adds out of tree: here, every node has room."""

    name = "LvmVolumeCapacity"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


def seed_profile(*extra: Any, text: str | None = None) -> tuple[Any, Any]:
    registry = build_registry(list(extra))
    return load_config(text or seed_text("sample_scheduler.yaml"), registry).profiles[0], registry


def test_seed_profile_loads_with_its_args() -> None:
    profile, _ = seed_profile()
    assert "CheckCSIStorageCapacity" in [r.name for r in profile.plugins["preFilter"]]
    filters = [r.name for r in profile.plugins["filter"]]
    assert filters[-4:] == [
        "CheckPodCountLimit",
        "CheckPodLimitResources",
        "CheckCSIStorageCapacity",
        "LvmVolumeCapacity",
    ]
    assert "VolumeBinding" in filters  # v1beta1 keeps the default set next to the seed's filters
    assert "DefaultPreemption" not in [r.name for r in profile.plugins.get("postFilter", [])]
    assert profile.args("CheckPodCountLimit").pod_count_limit == 2
    assert profile.args("CheckPodLimitResources").limit_ratio == (("cpu", 0.7), ("memory", 0.7))
    assert profile.args("LvmVolumeCapacity").provisioners == TOPOLVM_PROVISIONERS


SSD = storage_class("ssd", provisioner="topolvm.io", parameters={"topolvm.io/device-class": "ssd"})


def lvm_node(name: str, free_gi: int | None) -> Any:
    node = make_node(name).capacity(cpu="4", memory="8Gi")
    return node if free_gi is None else node.annotation("capacity.topolvm.io/ssd", str(free_gi << 30))


def test_seed_profile_builds_and_every_filter_holds() -> None:
    profile, registry = seed_profile()
    objs = volume_objects(pvcs=[pvc("data", storage_class="ssd", size="20Gi")], classes=[SSD])
    fwk = Framework(profile, registry, fake_services(objects=objs))
    nodes = [lvm_node("small", 5), lvm_node("big", 50), lvm_node("full", 50), lvm_node("bare", None)]
    existing = [make_pod(f"f{i}").node("full") for i in range(2)]  # podCountLimit 2
    out = schedule_pod(make_pod("db").pvc("data"), nodes, framework=fwk, existing=existing)
    assert out.node == "big"
    with pytest.raises(FitError) as e:
        schedule_pod(
            make_pod("db").pvc("data"), [nodes[0], nodes[2], nodes[3]], framework=fwk, existing=existing
        )
    msg = str(e.value)
    assert "1 node(s) reached the pod count limit" in msg
    assert 'did not have enough free space in LVM device class "ssd": the pod needs 20Gi' in msg
    assert "(15Gi short)" in msg and "no capacity.topolvm.io/ssd annotation" in msg
    with pytest.raises(FitError) as e:  # 3 cpu of limits > 0.7 x 4
        schedule_pod(make_pod("greedy").limit(cpu="3"), nodes[:2], framework=fwk)
    assert "2 Insufficient cpu limit headroom" in str(e.value)


def test_seed_profile_with_an_out_of_tree_lvm_plugin_schedules() -> None:
    profile, registry = seed_profile(MyLvmVolumeCapacity)  # replaces the in-tree plugin
    fwk = Framework(profile, registry, fake_services())
    assert isinstance(fwk.plugins["LvmVolumeCapacity"], MyLvmVolumeCapacity)
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


# ---------------------------------------------------------------- the seed deployment


def deployment_docs() -> dict[str, Any]:
    docs = list(yaml.safe_load_all((EXAMPLES / "sample_scheduler_deployment.yaml").read_text()))
    return {d["kind"]: d for d in docs}


def test_seed_deployment_runs_three_replicas_with_the_v1beta3_profile_and_its_lease() -> None:
    docs = deployment_docs()
    deployment, config_map = docs["Deployment"], docs["ConfigMap"]
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    opts = parse_args(container["args"])
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    (key, text), *_ = config_map["data"].items()
    assert opts.config == f"{mount['mountPath']}/{key}" and opts.verbosity == 3
    assert "apiVersion: kubescheduler.config.k8s.io/v1beta3" in text
    cfg = load_config(text, build_registry())
    le = cfg.leader_election
    assert (le.leader_elect, le.resource_name, le.resource_namespace) == (
        True,
        "custom-scheduler",
        "kube-system",
    )
    profile = cfg.profiles[0]
    seed, _ = seed_profile()
    assert profile.scheduler_name == seed.scheduler_name == "sample-scheduler"
    for point in ("preFilter", "filter", "postFilter"):
        assert [r.name for r in profile.plugins.get(point, [])] == [
            r.name for r in seed.plugins.get(point, [])
        ]
    Framework(profile, build_registry(), fake_services())  # builds: every plugin is real
    # The lease RBAC names exactly that lease; the service account is the pod's.
    role = docs["Role"]
    assert role["metadata"]["namespace"] == "kube-system"
    assert any(r.get("resourceNames") == ["custom-scheduler"] for r in role["rules"])
    assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]


def test_seed_plugins_alone_through_build_framework() -> None:
    from netsched.plugins.check_pod_count_limit import CheckPodCountLimit, CheckPodCountLimitArgs

    fwk = build_framework([CheckPodCountLimit], args={"CheckPodCountLimit": CheckPodCountLimitArgs(1)})
    out = schedule_pod(
        make_pod("p"), [make_node("a"), make_node("b")], framework=fwk, existing=[make_pod("e").node("a")]
    )
    assert out.node == "b"
