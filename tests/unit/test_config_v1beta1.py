"""v1beta1 configs load with a deprecation warning; one test per difference from v1."""

from __future__ import annotations

import logging

import pytest

from netsched.app import build_registry
from netsched.config import ConfigError, load_config


@pytest.fixture(autouse=True)
def _netsched_logs(caplog: pytest.LogCaptureFixture) -> None:
    # Other tests (simulate, demo) raise the root level; these assert on netsched's warnings.
    caplog.set_level(logging.INFO, logger="netsched")


REGISTRY = build_registry()
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n"


def load(body: str):  # type: ignore[no-untyped-def]
    return load_config(HEAD + body, REGISTRY)


def test_loads_with_a_deprecation_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="netsched"):
        cfg = load("profiles:\n- schedulerName: s\n")
    assert "Deprecated KubeSchedulerConfiguration version" in caplog.text
    assert cfg.profiles[0].scheduler_name == "s"


def test_v1beta1_default_score_weights() -> None:
    w = load("profiles:\n- schedulerName: s\n").profiles[0].score_weights()
    assert (w["NodeAffinity"], w["InterPodAffinity"], w["TaintToleration"]) == (1, 1, 1)
    assert w["PodTopologySpread"] == 2 and w["NodeResourcesFit"] == 1


@pytest.mark.parametrize(
    "old, kind",
    [("NodeResourcesLeastAllocated", "LeastAllocated"), ("NodeResourcesMostAllocated", "MostAllocated")],
)
def test_allocated_plugins_become_a_fit_scoring_strategy(old: str, kind: str) -> None:
    cfg = load(f"""\
profiles:
- schedulerName: s
  plugins:
    score:
      disabled:
      - name: NodeResourcesLeastAllocated
      enabled:
      - name: {old}
        weight: 5
  pluginConfig:
  - name: {old}
    args:
      resources:
      - name: cpu
        weight: 3
      - name: memory
        weight: 1
""")
    p = cfg.profiles[0]
    assert p.score_weights()["NodeResourcesFit"] == 5
    args = p.args("NodeResourcesFit")
    assert args.scoring_type == kind  # type: ignore[union-attr]
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 3), ("memory", 1)]  # type: ignore[union-attr]


def test_requested_to_capacity_ratio_keeps_its_shape() -> None:
    cfg = load("""\
profiles:
- schedulerName: s
  plugins:
    score:
      enabled:
      - name: RequestedToCapacityRatio
        weight: 2
  pluginConfig:
  - name: RequestedToCapacityRatio
    args:
      shape:
      - utilization: 0
        score: 0
      - utilization: 100
        score: 10
      resources:
      - name: cpu
        weight: 1
""")
    args = cfg.profiles[0].args("NodeResourcesFit")
    assert args.scoring_type == "RequestedToCapacityRatio"  # type: ignore[union-attr]
    assert [(s.utilization, s.score) for s in args.shape] == [(0, 0), (100, 10)]  # type: ignore[union-attr]


def test_two_strategies_in_one_profile_are_refused() -> None:
    with pytest.raises(ConfigError) as e:
        load("""\
profiles:
- schedulerName: s
  plugins:
    score:
      enabled:
      - name: NodeResourcesLeastAllocated
      - name: NodeResourcesMostAllocated
""")
    assert "profiles[0].plugins.score.enabled[1].name" in str(e.value)


def test_pod_topology_spread_default_constraints_mean_list_defaulting() -> None:
    cfg = load("""\
profiles:
- schedulerName: s
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
""")
    assert cfg.profiles[0].args("PodTopologySpread").defaulting_type == "List"  # type: ignore[union-attr]


def test_removed_plugins(caplog: pytest.LogCaptureFixture) -> None:
    cfg = load("""\
profiles:
- schedulerName: s
  plugins:
    score:
      enabled:
      - name: NodePreferAvoidPods
        weight: 10000
""")
    assert "NodePreferAvoidPods" not in cfg.profiles[0].score_weights()
    assert "no-op since kube 1.22" in caplog.text
    with pytest.raises(ConfigError) as e:
        load("profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: NodeLabel\n")
    assert "profiles[0].plugins.filter.enabled[0].name" in str(e.value) and "v1beta2" in str(e.value)


def test_bind_address_fields_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    cfg = load("healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10251\n")
    assert cfg.profiles and "field=healthzBindAddress" in caplog.text


def test_multi_point_is_not_v1beta1() -> None:
    with pytest.raises(ConfigError, match=r"profiles\[0\]\.plugins\.multiPoint"):
        load("profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n")
