"""Loading, defaulting, validating and writing KubeSchedulerConfiguration.

No real plugins exist at this layer, so the registry below is made of empty
classes with the names and extension points of kube's in-tree plugins, plus
two of our own: NetLoad (filter + score, with args) and FairSort (a second
queue sort, with args).  Expected values are kube's (v1 defaults.go,
default_plugins.go, framework multiPoint expansion).
"""

from __future__ import annotations

import logging
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from netsched import framework as fw
from netsched.config import (
    DEFAULT_PLUGINS,
    EXTENSION_POINTS,
    ConfigError,
    PluginRef,
    SchedulerConfig,
    default_lease_name,
    dump_config,
    load_config,
    read_config_file,
    validate_config,
    write_config,
)
from netsched.framework.fields import Fields


@dataclass(slots=True)
class NetLoadArgs(fw.PluginArgs):
    max_age_seconds: float = 60.0
    mode: str = "FailOpen"

    @classmethod
    def decode(cls, fields: Fields) -> NetLoadArgs:
        out = cls(
            max_age_seconds=fields.float("maxAgeSeconds", 60.0, min=1.0),
            mode=fields.str("mode", "FailOpen", choices=("FailOpen", "FailClosed")),
        )
        fields.finish()
        return out

    def encode(self) -> dict[str, Any]:
        return {"maxAgeSeconds": self.max_age_seconds, "mode": self.mode}


@dataclass(slots=True)
class FairSortArgs(fw.PluginArgs):
    tie_break: str = "Timestamp"

    @classmethod
    def decode(cls, fields: Fields) -> FairSortArgs:
        out = cls(tie_break=fields.str("tieBreak", "Timestamp"))
        fields.finish()
        return out

    def encode(self) -> dict[str, Any]:
        return {"tieBreak": self.tie_break}


def _plugin(name: str, *bases: type[fw.Plugin], args: type[fw.PluginArgs] | None = None) -> type[fw.Plugin]:
    return type(name, bases, {"name": name, "Args": args})


_PFS = (fw.PreFilterPlugin, fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin)
PLUGINS = [
    _plugin("SchedulingGates", fw.PreEnqueuePlugin),
    _plugin("PrioritySort", fw.QueueSortPlugin),
    _plugin("NodeUnschedulable", fw.FilterPlugin),
    _plugin("NodeName", fw.FilterPlugin),
    _plugin("TaintToleration", fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin),
    _plugin("NodeAffinity", *_PFS),
    _plugin("NodePorts", fw.PreFilterPlugin, fw.FilterPlugin),
    _plugin("NodeResourcesFit", *_PFS),
    _plugin("PodTopologySpread", *_PFS),
    _plugin("InterPodAffinity", *_PFS),
    _plugin("DefaultPreemption", fw.PostFilterPlugin),
    _plugin("NodeResourcesBalancedAllocation", fw.PreScorePlugin, fw.ScorePlugin),
    _plugin("ImageLocality", fw.ScorePlugin),
    _plugin("DefaultBinder", fw.BindPlugin),
    _plugin("NetLoad", fw.FilterPlugin, fw.ScorePlugin, args=NetLoadArgs),
    _plugin("FairSort", fw.QueueSortPlugin, args=FairSortArgs),
]
REGISTRY: dict[str, type[fw.Plugin]] = {p.name: p for p in PLUGINS}
REGISTERED = ", ".join(f'"{n}"' for n in sorted(REGISTRY))

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def load(body: str, **kw: Any) -> SchedulerConfig:
    return load_config(HEAD + textwrap.dedent(body), REGISTRY, **kw)


def errors(body: str, *, head: str = HEAD) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        load_config(head + textwrap.dedent(body), REGISTRY)
    return [str(e) for e in exc.value.errors]


def points(cfg: SchedulerConfig, i: int = 0) -> dict[str, list[str]]:
    return {p: cfg.profiles[i].names(p) for p in EXTENSION_POINTS if cfg.profiles[i].names(p)}


# ---------------------------------------------------------------- defaults


def test_empty_file_gives_kube_defaults() -> None:
    cfg = load_config("", REGISTRY)
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (16, None)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (True, 15.0, 10.0, 2.0)
    assert (le.resource_lock, le.resource_namespace, le.resource_name) == (
        "leases",
        "kube-system",
        "netsched",
    )
    cc = cfg.client_connection
    assert (cc.kubeconfig, cc.qps, cc.burst, cc.content_type) == ("", 50.0, 100, "application/json")
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    assert load("") == cfg == load("profiles: []\n")


def test_default_plugins_expand_like_kube() -> None:
    cfg = load_config("", REGISTRY)
    pfs = ["NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"]
    assert points(cfg) == {
        "preEnqueue": ["SchedulingGates"],
        "queueSort": ["PrioritySort"],
        "preFilter": [
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
        ],
        "filter": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", *pfs[1:]],
        "postFilter": ["DefaultPreemption"],
        "preScore": ["TaintToleration", *pfs, "NodeResourcesBalancedAllocation"],
        "score": ["TaintToleration", *pfs, "NodeResourcesBalancedAllocation", "ImageLocality"],
        "bind": ["DefaultBinder"],
    }
    assert cfg.profiles[0].score_weights() == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert cfg.profiles[0].plugin_config == {}  # no default plugin here takes args


def test_default_list_is_kubes() -> None:
    assert [(r.name, r.weight) for r in DEFAULT_PLUGINS if r.weight] == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    # kube v1.31 default_plugins.go, in order.
    assert [r.name for r in DEFAULT_PLUGINS] == [
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
    ]


def test_unregistered_defaults_are_skipped_but_explicit_unknown_names_are_errors() -> None:
    small = {n: c for n, c in REGISTRY.items() if n not in ("ImageLocality", "NodePorts")}
    cfg = load_config("", small)
    assert "ImageLocality" not in cfg.profiles[0].names("score")
    with pytest.raises(ConfigError) as exc:
        load_config(
            HEAD + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n", small
        )
    assert [str(e) for e in exc.value.errors] == [
        'profiles[0].plugins.score.enabled[0].name: Unsupported value: "ImageLocality": supported values: '
        + ", ".join(f'"{n}"' for n in sorted(small))
    ]


def test_custom_default_list_and_scheduler_name() -> None:
    cfg = load_config(
        "",
        REGISTRY,
        default_plugins=[PluginRef("FairSort"), PluginRef("NetLoad", 4), PluginRef("DefaultBinder")],
        default_scheduler_name="netsched",
    )
    assert points(cfg) == {
        "queueSort": ["FairSort"],
        "filter": ["NetLoad"],
        "score": ["NetLoad"],
        "bind": ["DefaultBinder"],
    }
    assert cfg.profiles[0].score_weights() == {"NetLoad": 4}
    assert cfg.profiles[0].plugin_config == {"FairSort": FairSortArgs(), "NetLoad": NetLoadArgs()}
    assert cfg.profiles[0].scheduler_name == cfg.leader_election.resource_name == "netsched"


# ---------------------------------------------------------------- multiPoint and per-point blocks


def test_multipoint_enable_adds_to_every_point_the_plugin_implements() -> None:
    cfg = load(
        """
        profiles:
        - schedulerName: netsched
          plugins:
            multiPoint:
              enabled:
              - name: NetLoad
                weight: 5
        """
    )
    p = cfg.profiles[0]
    assert p.names("filter")[-1] == "NetLoad" and p.names("score")[-1] == "NetLoad"
    assert "NetLoad" not in p.names("preScore")
    assert p.score_weights()["NetLoad"] == 5
    assert p.plugin_config["NetLoad"] == NetLoadArgs()  # defaulted args for an enabled plugin


def test_multipoint_reenabling_a_default_keeps_its_place_and_takes_the_new_weight() -> None:
    cfg = load(
        "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - {name: TaintToleration, weight: 10}\n"
    )
    p = cfg.profiles[0]
    assert p.names("score")[0] == "TaintToleration" and p.score_weights()["TaintToleration"] == 10
    assert [r.name for r in p.plugin_sets["multiPoint"].enabled] == [
        r.name for r in DEFAULT_PLUGINS if r.name in REGISTRY
    ]
    # Without a weight the entry replaces the default one wholesale: weight 1, as in kube.
    cfg = load("profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: TaintToleration\n")
    assert cfg.profiles[0].score_weights()["TaintToleration"] == 1


def test_multipoint_disabled_star_drops_all_defaults() -> None:
    cfg = load(
        """
        profiles:
        - plugins:
            multiPoint:
              enabled: [{name: FairSort}, {name: NetLoad}, {name: DefaultBinder}]
              disabled: [{name: "*"}]
        """
    )
    assert points(cfg) == {
        "queueSort": ["FairSort"],
        "filter": ["NetLoad"],
        "score": ["NetLoad"],
        "bind": ["DefaultBinder"],
    }
    assert cfg.profiles[0].score_weights() == {"NetLoad": 1}


def test_disabled_star_at_one_point_keeps_only_that_points_own_list() -> None:
    cfg = load(
        """
        profiles:
        - plugins:
            score:
              enabled: [{name: NetLoad, weight: 4}, {name: ImageLocality}]
              disabled: [{name: "*"}]
        """
    )
    p = cfg.profiles[0]
    assert p.score_weights() == {"NetLoad": 4, "ImageLocality": 1}
    assert "TaintToleration" in p.names("preScore") and "NodeAffinity" in p.names("filter")
    assert "NetLoad" not in p.names("filter")  # enabled at score only


def test_per_point_weight_overrides_multipoint_and_moves_to_the_front() -> None:
    cfg = load(
        """
        profiles:
        - plugins:
            score:
              enabled:
              - name: NodeAffinity
                weight: 9
              - name: NetLoad
                weight: 7
        """
    )
    p = cfg.profiles[0]
    assert p.names("score") == [
        "NodeAffinity",  # overridden: the point's own order first
        "TaintToleration",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "NetLoad",  # the point's other plugins last
    ]
    assert p.score_weights()["NodeAffinity"] == 9 and p.score_weights()["NetLoad"] == 7
    assert p.names("filter") == load("").profiles[0].names("filter")


def test_per_point_entry_without_weight_means_weight_one_like_kube() -> None:
    cfg = load("profiles:\n- plugins:\n    score:\n      enabled:\n      - name: TaintToleration\n")
    assert cfg.profiles[0].score_weights()["TaintToleration"] == 1
    assert cfg.profiles[0].names("score").count("TaintToleration") == 1


def test_disabled_at_one_point_removes_only_that_point() -> None:
    cfg = load("profiles:\n- plugins:\n    filter:\n      disabled:\n      - name: NodePorts\n")
    p = cfg.profiles[0]
    assert "NodePorts" not in p.names("filter") and "NodePorts" in p.names("preFilter")


def test_plugin_config_kept_for_plugins_not_enabled_and_kind_accepted() -> None:
    cfg = load(
        """
        profiles:
        - pluginConfig:
          - name: NetLoad
            args:
              apiVersion: kubescheduler.config.k8s.io/v1
              kind: NetLoadArgs
              maxAgeSeconds: 30
              mode: FailClosed
        """
    )
    assert "NetLoad" not in cfg.profiles[0].names("score")
    assert cfg.profiles[0].plugin_config == {"NetLoad": NetLoadArgs(30.0, "FailClosed")}


# ---------------------------------------------------------------- errors


def test_every_problem_is_reported_at_once_with_its_path() -> None:
    got = errors(
        """
        parallelism: 0
        percentageOfNodesToScore: 150
        podMaxBackoffSeconds: 0
        foo: 1
        leaderElection:
          renewDeadline: 20s
          retryPeriod: -1s
          resourceLock: endpoints
        clientConnection:
          burst: -1
        profiles:
        - schedulerName: netsched
          plugins:
            score:
              enabled:
              - name: NetLoad
                weight: -2
              - name: Foo
            preFilter:
              enabled:
              - name: ImageLocality
            filter:
              enabled: [{name: NodeName}, {name: NodeName}]
          pluginConfig:
          - name: NetLoad
            args: {maxAgeSeconds: 0, mode: Sometimes, extra: 1}
          - name: NetLoad
          - name: Bar
          - name: NodeName
            args: {x: 1}
        """
    )
    expected = [
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: -2: must be greater than or equal to 0",
        f'profiles[0].plugins.score.enabled[1].name: Unsupported value: "Foo": supported values: {REGISTERED}',
        'profiles[0].plugins.preFilter.enabled[0].name: Invalid value: "ImageLocality": plugin does not extend preFilter',
        'profiles[0].plugins.filter.enabled[1].name: Duplicate value: "NodeName"',
        "profiles[0].pluginConfig[0].args.maxAgeSeconds: Invalid value: 0.0: must be greater than or equal to 1.0",
        'profiles[0].pluginConfig[0].args.mode: Unsupported value: "Sometimes": supported values: "FailOpen", "FailClosed"',
        "profiles[0].pluginConfig[0].args.extra: Unknown field: not a field of this object (typo?)",
        'profiles[0].pluginConfig[1]: Duplicate value: "NetLoad"',
        f'profiles[0].pluginConfig[2].name: Unsupported value: "Bar": supported values: {REGISTERED}',
        "profiles[0].pluginConfig[3].args: Forbidden: plugin NodeName takes no args",
        "foo: Unknown field: not a field of this object (typo?)",
        "clientConnection.burst: Invalid value: -1: must be non-negative",
        'leaderElection.retryPeriod: Invalid value: "-1s": must be greater than zero',
        'leaderElection.leaseDuration: Invalid value: "20s": LeaseDuration must be greater than RenewDeadline',
        'leaderElection.resourceLock: Unsupported value: "endpoints": supported values: "leases"',
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
        "percentageOfNodesToScore: Invalid value: 150: not in valid range [0-100]",
        "podMaxBackoffSeconds: Invalid value: 0: must be greater than or equal to PodInitialBackoffSeconds",
    ]
    assert sorted(got) == sorted(expected)


def test_plugin_reference_errors() -> None:
    assert errors(
        """
        profiles:
        - percentageOfNodesToScore: -1
          plugins:
            multiPoint:
              enabled: [{name: NetLoad}, {name: NetLoad}, {weight: 2}]
            score:
              enabled: [{name: ImageLocality, weight: 2147483648}]
          pluginConfig:
          - name: NetLoad
            args: {kind: FairSortArgs, apiVersion: v2}
          - {args: {}}
        """
    ) == [
        "profiles[0].plugins.multiPoint.enabled[2].name: Required value",
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: 2147483648: "
        "must be less than or equal to 2147483647",
        'profiles[0].plugins.multiPoint.enabled[1].name: Duplicate value: "NetLoad"',
        'profiles[0].pluginConfig[0].args.apiVersion: Unsupported value: "v2": supported values: '
        '"kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta2", '
        '"kubescheduler.config.k8s.io/v1beta3"',
        'profiles[0].pluginConfig[0].args.kind: Unsupported value: "FairSortArgs": supported values: "NetLoadArgs"',
        "profiles[0].pluginConfig[1].name: Required value",
        "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
    ]


def test_wrong_types_are_reported_not_raised() -> None:
    assert errors(
        """
        parallelism: "16"
        leaderElection: {leaderElect: "yes please"}
        profiles:
        - plugins: {score: [NetLoad]}
          pluginConfig: {name: NetLoad}
        """
    ) == [
        'parallelism: Invalid value: "16": must be an integer',
        'leaderElection.leaderElect: Invalid value: "yes please": must be true or false',
        'profiles[0].plugins.score: Invalid value: "list": must be a mapping',
        'profiles[0].pluginConfig: Invalid value: "dict": must be a list',
    ]


def test_disabling_an_unregistered_plugin_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="netsched.config"):
        cfg = load("profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: VolumeBinding}]\n")
    assert cfg.profiles[0].names("score") == load("").profiles[0].names("score")
    assert "plugin=VolumeBinding" in caplog.records[0].getMessage()


def test_validate_config_can_run_again_after_overrides() -> None:
    cfg = load("leaderElection: {leaderElect: false, resourceLock: endpoints}\n")
    assert not validate_config(cfg)
    cfg.leader_election.leader_elect = True
    cfg.profiles[0].plugins["score"][0] = PluginRef("TaintToleration", 0)
    assert [str(e) for e in validate_config(cfg)] == [
        'leaderElection.resourceLock: Unsupported value: "endpoints": supported values: "leases"',
        "profiles[0].plugins.score: Invalid value: 0: weight of TaintToleration must be in [1, 2147483647]",
    ]


def test_unknown_fields_anywhere_are_errors_with_their_path() -> None:
    assert errors(
        """
        leaderElection: {leaderElekt: true}
        profiles:
        - schedulerName: a
          plugins:
            score:
              enabeld: []
            sore: {}
            multiPoint:
              enabled: [{name: NetLoad, wieght: 2}]
          pluginConfig: [{name: NetLoad, arg: {}}]
        """
    ) == [
        "leaderElection.leaderElekt: Unknown field: not a field of this object (typo?)",
        "profiles[0].plugins.multiPoint.enabled[0].wieght: Unknown field: not a field of this object (typo?)",
        "profiles[0].plugins.score.enabeld: Unknown field: not a field of this object (typo?)",
        "profiles[0].plugins.sore: Unknown field: not a field of this object (typo?)",
        "profiles[0].pluginConfig[0].arg: Unknown field: not a field of this object (typo?)",
    ]


def test_durations_must_be_go_duration_strings() -> None:
    assert errors("leaderElection: {leaseDuration: 15, renewDeadline: 10 s}\n") == [
        'leaderElection.leaseDuration: Invalid value: 15: must be a duration string such as "15s"',
        "leaderElection.renewDeadline: Invalid value: \"10 s\": invalid duration '10 s'",
    ]
    cfg = load("leaderElection: {leaseDuration: 1m30s, renewDeadline: 1m, retryPeriod: 500ms}\n")
    le = cfg.leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (90.0, 60.0, 0.5)


def test_leader_election_off_skips_its_checks_like_kube() -> None:
    cfg = load("leaderElection: {leaderElect: false, renewDeadline: 1h, resourceLock: endpoints}\n")
    assert not cfg.leader_election.leader_elect


def test_duplicate_and_missing_scheduler_names() -> None:
    assert errors("profiles:\n- schedulerName: a\n- schedulerName: a\n- {}\n") == [
        'profiles[1].schedulerName: Duplicate value: "a"',
        "profiles[2].schedulerName: Required value",
    ]


def test_queue_sort_must_match_across_profiles() -> None:
    two = """
        profiles:
        - schedulerName: a
        - schedulerName: b
          plugins:
            queueSort:
              enabled: [{name: FairSort}]
              disabled: [{name: "*"}]
        """
    assert errors(two) == [
        'profiles[1].plugins.queueSort: Invalid value: "FairSort": must be the same for all profiles '
        '(profiles[0] uses "PrioritySort")'
    ]


def test_queue_sort_args_must_match_across_profiles() -> None:
    fair = "plugins: {queueSort: {enabled: [{name: FairSort}], disabled: [{name: '*'}]}}"
    body = f"""
        profiles:
        - schedulerName: a
          {fair}
        - schedulerName: b
          {fair}
          pluginConfig: [{{name: FairSort, args: {{tieBreak: Name}}}}]
        """
    assert errors(body) == [
        'profiles[1].pluginConfig: Invalid value: "FairSort": queue sort plugin args must be the same for all profiles'
    ]
    same = body.replace("pluginConfig: [{name: FairSort, args: {tieBreak: Name}}]", "")
    assert [p.names("queueSort") for p in load(same).profiles] == [["FairSort"], ["FairSort"]]


def test_exactly_one_queue_sort_and_at_least_one_bind() -> None:
    assert errors(
        """
        profiles:
        - plugins:
            queueSort: {enabled: [{name: FairSort}]}
            bind: {disabled: [{name: DefaultBinder}]}
        - schedulerName: b
          plugins:
            queueSort: {disabled: [{name: "*"}]}
        """
    ) == [
        "profiles[0].schedulerName: Required value",
        'profiles[0].plugins.queueSort: Invalid value: 2: only one queue sort plugin can be enabled (got "PrioritySort", "FairSort")',
        "profiles[0].plugins.bind: Required value: at least one bind plugin is needed",
        "profiles[1].plugins.queueSort: Required value: at least one queue sort plugin is needed",
    ]


def test_version_and_kind() -> None:
    assert errors("parallelism: 2\n", head="apiVersion: v1\nkind: Pod\n") == [
        'apiVersion: Unsupported value: "v1": supported values: "kubescheduler.config.k8s.io/v1", '
        '"kubescheduler.config.k8s.io/v1beta2", "kubescheduler.config.k8s.io/v1beta3"',
        'kind: Unsupported value: "Pod": supported values: "KubeSchedulerConfiguration"',
    ]
    assert errors("parallelism: 2\n", head="") == [
        'apiVersion: Required value: must be "kubescheduler.config.k8s.io/v1"',
        'kind: Required value: must be "KubeSchedulerConfiguration"',
    ]


def test_deprecated_versions_load_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    for version in ("v1beta2", "v1beta3"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="netsched.config"):
            head = HEAD.replace("/v1\n", f"/{version}\n")
            cfg = load_config(head + "parallelism: 4\n", REGISTRY)
        assert cfg.parallelism == 4
        assert [r.levelname for r in caplog.records] == ["WARNING"]
        assert f"kubescheduler.config.k8s.io/{version}" in caplog.records[0].getMessage()
    caplog.clear()
    load("parallelism: 4\n")
    assert not caplog.records


def test_yaml_errors_carry_line_and_column() -> None:
    assert errors("parallelism: 2\nprofiles:\n  - schedulerName: a\n   plugins: {}\n") == [
        "<string>:6:4: Invalid YAML: while parsing a block collection; "
        "expected <block end>, but found '<block mapping start>'"
    ]
    assert errors("parallelism: 2\nparallelism: 3\n") == [
        "<string>:4:1: Invalid YAML: while constructing a mapping; found duplicate key 'parallelism'"
    ]


def test_non_mapping_document_is_an_error() -> None:
    with pytest.raises(ConfigError) as exc:
        load_config("[1, 2]", REGISTRY)
    assert [str(e) for e in exc.value.errors] == ['<root>: Invalid value: "list": must be a mapping']


def test_files_are_read_and_missing_files_reported(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(HEAD + "parallelism: 3\n")
    assert load_config(path, REGISTRY).parallelism == 3
    assert load_config(str(path), REGISTRY).parallelism == 3
    with pytest.raises(ConfigError) as exc:
        load_config(str(tmp_path / "nope.yaml"), REGISTRY)
    assert str(exc.value.errors[0]) == f"{tmp_path / 'nope.yaml'}: Unreadable file: No such file or directory"


# ---------------------------------------------------------------- lease name


def test_lease_name_rule(caplog: pytest.LogCaptureFixture) -> None:
    assert default_lease_name("default-scheduler") == "netsched"
    assert default_lease_name("") == "netsched"
    assert default_lease_name("gpu-sched") == "gpu-sched"
    assert load(
        "profiles: [{schedulerName: gpu-sched}, {schedulerName: b}]\n"
    ).leader_election.resource_name == ("gpu-sched")
    assert load("leaderElection: {resourceName: mine}\n").leader_election.resource_name == "mine"
    with caplog.at_level(logging.WARNING, logger="netsched.config"):
        cfg = load("leaderElection: {resourceName: kube-scheduler}\n")
    assert cfg.leader_election.resource_name == "kube-scheduler"
    assert "contend" in caplog.records[0].getMessage()


# ---------------------------------------------------------------- writing


ROUND_TRIP = """
percentageOfNodesToScore: 40
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 30
leaderElection:
  leaseDuration: 1m30s
  renewDeadline: 45s
  retryPeriod: 250ms
clientConnection: {kubeconfig: /etc/kube.conf, qps: 20, burst: 40}
profiles:
- schedulerName: netsched
  percentageOfNodesToScore: 0
  plugins:
    multiPoint:
      enabled: [{name: NetLoad, weight: 5}, {name: TaintToleration}]
      disabled: [{name: ImageLocality}]
    score:
      enabled: [{name: NodeAffinity, weight: 9}]
    filter:
      disabled: [{name: NodePorts}]
  pluginConfig:
  - name: NetLoad
    args: {maxAgeSeconds: 30}
- schedulerName: second
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: ImageLocality, weight: 3}]
"""


def test_write_then_load_gives_an_equal_config(tmp_path: Path) -> None:
    cfg = load(ROUND_TRIP)
    path = tmp_path / "out.yaml"
    write_config(cfg, path)
    again = load_config(path, REGISTRY)
    assert again == cfg
    assert dump_config(again) == path.read_text()
    default = load_config("", REGISTRY)
    assert load_config(dump_config(default), REGISTRY) == default


def test_written_form_is_kubes() -> None:
    text = dump_config(load(ROUND_TRIP))
    assert text.startswith(HEAD)
    for line in (
        "  leaseDuration: 1m30s\n",
        "  retryPeriod: 250ms\n",
        "  resourceName: netsched\n",
        # a re-enabled default without weight: written with the weight it really gets
        "      - name: TaintToleration\n        weight: 1\n      - name: NodeAffinity\n        weight: 2\n",
        "      disabled:\n      - name: ImageLocality\n",
        "  - name: NetLoad\n    args:\n      maxAgeSeconds: 30.0\n      mode: FailOpen\n",
    ):
        assert line in text
    assert "percentageOfNodesToScore: 40\n" in text and "  percentageOfNodesToScore: 0\n" in text


@pytest.mark.parametrize("text", ["", "\n", "# commented out\n", "---\n"])
def test_an_empty_file_is_refused_saying_it_is_empty(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(path, REGISTRY)
    assert [str(err) for err in e.value.errors] == [
        f"{path}: Empty file: it holds no KubeSchedulerConfiguration (kube-scheduler: \"Object 'Kind' is missing\")"
    ]
    # YAML text, not a file, still gives the defaults (the simulator and tests rely on it).
    assert load_config("", REGISTRY).profiles


def test_a_files_text_changed_before_loading_is_judged_as_the_file() -> None:
    # netsched demo reads --config's file, fills in its Prometheus, then loads the text.
    with pytest.raises(ConfigError) as e:
        load_config("\n", REGISTRY, file="mine.yaml")
    assert [str(err) for err in e.value.errors] == [
        "mine.yaml: Empty file: it holds no KubeSchedulerConfiguration (kube-scheduler: \"Object 'Kind' is missing\")"
    ]
    with pytest.raises(ConfigError) as e:
        read_config_file("/nonexistent/mine.yaml")
    assert [str(err) for err in e.value.errors] == [
        "/nonexistent/mine.yaml: Unreadable file: No such file or directory"
    ]


def test_a_configmap_manifest_is_refused_asking_for_its_config_yaml() -> None:
    deploy = Path(__file__).resolve().parents[2] / "deploy" / "configmap.yaml"
    with pytest.raises(ConfigError) as e:
        load_config(deploy, REGISTRY)
    (err,) = e.value.errors
    assert str(err).startswith('kind: Invalid value: "ConfigMap": this is a ConfigMap manifest')
    assert "extract its data's config.yaml" in str(err)
