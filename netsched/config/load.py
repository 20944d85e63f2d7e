"""Reading a KubeSchedulerConfiguration file: YAML -> decoded, defaulted, validated config.

One pass collects every problem (syntax, unknown fields, bad plugin names,
plugin args, rule violations), each with its field path, and raises them
together as one ConfigError: an operator fixes a file in one round trip.
Decoding is strict like kube's: a key netsched does not know is an error,
never silently ignored.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from netsched.config import v1beta1
from netsched.config.defaults import (
    DEFAULT_PLUGINS,
    default_lease_name,
    default_plugin_sets,
    merge_plugin_sets,
)
from netsched.config.duration import DurationError, parse_duration
from netsched.config.errors import ConfigError
from netsched.config.resolve import Registry, check_plugin_sets, enabled_names, expand, with_default_weights
from netsched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    DEPRECATED_API_VERSIONS,
    KIND,
    KUBE_LEASE_NAME,
    MAX_WEIGHT,
    PLUGIN_SET_KEYS,
    ClientConnection,
    LeaderElectionConfig,
    PluginRef,
    PluginSet,
    Profile,
    SchedulerConfig,
)
from netsched.config.validate import validate_config
from netsched.framework.fields import ErrorList, FieldError, Fields, join

if TYPE_CHECKING:
    from netsched.framework.extension_points import PluginArgs

_log = logging.getLogger(__name__)

SUPPORTED_API_VERSIONS = (API_VERSION, *DEPRECATED_API_VERSIONS)


def load_config(
    source: str | os.PathLike[str],
    registry: Registry,
    *,
    default_plugins: Sequence[PluginRef] | None = None,
    default_scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    file: str = "",
) -> SchedulerConfig:
    """The defaulted, validated config from a file path or YAML text.

    `source` is a path when it is a PathLike, or a one-line string that does
    not look like YAML; anything else is YAML text ("" gives the defaults).
    `file`: the text is that file's (read with read_config_file and changed, as
    `netsched demo` fills in its Prometheus): it is judged as the file would be.
    `default_plugins` replaces DEFAULT_PLUGINS; defaults missing from
    `registry` are skipped.  `default_scheduler_name` names the profile of a
    file with a single unnamed profile (kube: "default-scheduler").
    Raises ConfigError carrying every problem found.
    """
    label, text = (file, str(source)) if file else _read(source)
    raw = parse_yaml(text, label)
    if label != "<string>":
        refuse_empty(raw, label)
    errs = ErrorList()
    defaults = DEFAULT_PLUGINS if default_plugins is None else tuple(default_plugins)
    cfg = decode_config(
        raw, registry, errs, default_plugins=defaults, default_scheduler_name=default_scheduler_name
    )
    if cfg is not None:
        errs.extend(validate_config(cfg))
    if errs or cfg is None:
        raise ConfigError(errs)
    return cfg


# ---------------------------------------------------------------- source and YAML


def refuse_empty(raw: Any, label: str) -> None:
    """An empty file (nothing, or only comments) is refused, as kube-scheduler refuses it ("Object
    'Kind' is missing"): the built-in defaults come only from giving no --config, never from a file
    that was emptied or mounted wrong. YAML text ("") still gives the defaults."""
    if raw is None:
        detail = "it holds no KubeSchedulerConfiguration (kube-scheduler: \"Object 'Kind' is missing\")"
        raise ConfigError([FieldError(label, "Empty file", detail)])


def _read(source: str | os.PathLike[str]) -> tuple[str, str]:
    if isinstance(source, str) and not _looks_like_path(source):
        return "<string>", source
    path = os.fspath(source)
    return path, read_config_file(path)


def read_config_file(path: str) -> str:
    """The file's text; ConfigError naming the file when it cannot be read (as --config)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError([FieldError(path, "Unreadable file", detail)]) from e


def _looks_like_path(s: str) -> bool:
    t = s.strip()
    return bool(t) and "\n" not in t and ": " not in t and not t.endswith(":") and t[0] not in "{[#"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key repeated in one mapping (kube's strict decoding does)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str, label: str = "<string>") -> Any:
    """The YAML document; ConfigError with line:column on a syntax error or duplicate key."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: no arbitrary objects
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{label}:{mark.line + 1}:{mark.column + 1}" if mark else label
        detail = "; ".join(s for s in (e.context, e.problem) if s)
        raise ConfigError([FieldError(where, "Invalid YAML", detail)]) from e
    except yaml.YAMLError as e:
        raise ConfigError([FieldError(label, "Invalid YAML", str(e))]) from e


# ---------------------------------------------------------------- decoding


def decode_config(
    raw: Any,
    registry: Registry,
    errs: ErrorList,
    *,
    default_plugins: Sequence[PluginRef] = DEFAULT_PLUGINS,
    default_scheduler_name: str = DEFAULT_SCHEDULER_NAME,
) -> SchedulerConfig | None:
    """Decode and default (no validation).  None when the document is not this kind at all."""
    if isinstance(raw, Mapping) and raw.get("apiVersion") == v1beta1.V1BETA1:
        _log.warning(
            "Deprecated KubeSchedulerConfiguration version, converted to v1 (see netsched/config/v1beta1.py) "
            "apiVersion=%s",
            v1beta1.V1BETA1,
        )
        raw = v1beta1.convert(raw, errs)
        default_plugins = v1beta1.default_plugins(tuple(default_plugins))
    if isinstance(raw, Mapping) and raw.get("kind") == "ConfigMap":
        errs.invalid("kind", "ConfigMap", _CONFIGMAP_HINT)
        return None
    f = Fields(raw, "", errs)
    if raw is not None and (not isinstance(raw, Mapping) or not _check_type(f)):
        return None  # not a mapping, or a Pod manifest or the like: field errors would be noise
    cfg = SchedulerConfig()
    cfg.parallelism = f.int("parallelism", cfg.parallelism)
    cfg.percentage_of_nodes_to_score = _optional_int(f, "percentageOfNodesToScore") or None
    cfg.pod_initial_backoff_seconds = f.int("podInitialBackoffSeconds", cfg.pod_initial_backoff_seconds)
    cfg.pod_max_backoff_seconds = f.int("podMaxBackoffSeconds", cfg.pod_max_backoff_seconds)
    cfg.enable_profiling = f.bool("enableProfiling", cfg.enable_profiling)
    # kube turns contention profiling on by default only when profiling is on.
    cfg.enable_contention_profiling = f.bool("enableContentionProfiling", cfg.enable_profiling)
    cfg.delay_cache_until_active = f.bool("delayCacheUntilActive", cfg.delay_cache_until_active)
    cfg.leader_election = _leader_election(f.sub("leaderElection"))
    cfg.client_connection = _client_connection(f.sub("clientConnection"))
    if f.list("extenders"):
        errs.forbidden("extenders", "scheduler extenders are not supported by netsched; write a plugin")
    # (list[Fields] annotations: Fields' method names shadow the builtins inside fields.py for mypy.)
    items: list[Fields] = f.items("profiles") or [Fields({}, "profiles[0]", errs)]
    defaults = default_plugin_sets(default_plugins, registry)
    for pf in items:
        name = default_scheduler_name if len(items) == 1 else ""
        cfg.profiles.append(_profile(pf, registry, defaults, name))
    f.finish()
    _default_lease_name(cfg)
    return cfg


# deploy/configmap.yaml wraps the configuration in a ConfigMap; the pod mounts its config.yaml.
_CONFIGMAP_HINT = (
    "this is a ConfigMap manifest; --config takes the KubeSchedulerConfiguration inside it: "
    "extract its data's config.yaml into a file of its own (README.md, Run it against a cluster)"
)


def _check_type(f: Fields) -> bool:
    api = _one_of(f, "apiVersion", SUPPORTED_API_VERSIONS)
    kind = _one_of(f, "kind", (KIND,))
    if api in DEPRECATED_API_VERSIONS:
        _log.warning("Deprecated KubeSchedulerConfiguration version, read as v1 apiVersion=%s", api)
    return bool(api and kind)


def _one_of(f: Fields, key: str, supported: Sequence[str]) -> str:
    """The value when supported, else "" after recording why."""
    value = f.str(key, "")
    if not value:
        f.errs.required(key, f'must be "{supported[0]}"')
    elif value not in supported:
        f.errs.unsupported(key, value, supported)
    return value if value in supported else ""


def _optional_int(f: Fields, key: str) -> int | None:
    return None if f.any(key) is None else f.int(key, 0)


def _duration(f: Fields, key: str, default: float) -> float:
    """A Go duration string; kube treats an unset or zero duration as "use the default"."""
    value = f.any(key)
    if value is None:
        return default
    path = join(f.path, key)
    if not isinstance(value, str):
        f.errs.invalid(path, value, 'must be a duration string such as "15s"')
        return default
    try:
        return parse_duration(value) or default
    except DurationError as e:
        f.errs.invalid(path, value, str(e))
        return default


def _leader_election(f: Fields) -> LeaderElectionConfig:
    # Empty strings and zero durations mean "default", as in kube's defaulting.
    d = LeaderElectionConfig()
    le = LeaderElectionConfig(
        leader_elect=f.bool("leaderElect", d.leader_elect),
        lease_duration=_duration(f, "leaseDuration", d.lease_duration),
        renew_deadline=_duration(f, "renewDeadline", d.renew_deadline),
        retry_period=_duration(f, "retryPeriod", d.retry_period),
        resource_lock=f.str("resourceLock", "") or d.resource_lock,
        resource_name=f.str("resourceName", ""),
        resource_namespace=f.str("resourceNamespace", "") or d.resource_namespace,
    )
    f.finish()
    return le


def _client_connection(f: Fields) -> ClientConnection:
    # kube's scheduler defaulting treats qps 0 and burst 0 as unset.
    d = ClientConnection()
    cc = ClientConnection(
        kubeconfig=f.str("kubeconfig", d.kubeconfig),
        accept_content_types=f.str("acceptContentTypes", d.accept_content_types),
        content_type=f.str("contentType", "") or d.content_type,
        qps=f.float("qps", 0.0) or d.qps,
        burst=f.int("burst", 0) or d.burst,
    )
    f.finish()
    return cc


def _default_lease_name(cfg: SchedulerConfig) -> None:
    le = cfg.leader_election
    if not le.resource_name:
        le.resource_name = default_lease_name(cfg.profiles[0].scheduler_name)
    elif le.resource_name == KUBE_LEASE_NAME and le.leader_elect:
        _log.warning(
            "Lease name is the default scheduler's; netsched and kube-scheduler will contend for it "
            "resourceNamespace=%s resourceName=%s",
            le.resource_namespace,
            le.resource_name,
        )


# ---------------------------------------------------------------- profiles


def _profile(f: Fields, registry: Registry, defaults: Mapping[str, PluginSet], default_name: str) -> Profile:
    p = Profile(
        scheduler_name=f.str("schedulerName", default_name),
        percentage_of_nodes_to_score=_optional_int(f, "percentageOfNodesToScore"),
    )
    plugins_path = join(f.path, "plugins")
    custom = _plugin_sets(f.sub("plugins"))
    check_plugin_sets(custom, registry, plugins_path, f.errs)
    p.plugin_sets = with_default_weights(merge_plugin_sets(defaults, custom), registry)
    p.plugins = expand(p.plugin_sets, registry)
    p.plugin_config = _plugin_config(f, registry)
    for name in enabled_names(p.plugin_sets):
        args_cls = registry[name].Args if name in registry else None
        if args_cls is not None and name not in p.plugin_config:
            p.plugin_config[name] = args_cls.default()
    f.finish()
    return p


def _plugin_sets(f: Fields) -> dict[str, PluginSet]:
    out: dict[str, PluginSet] = {}
    for key in PLUGIN_SET_KEYS:
        s = f.sub(key)
        enabled_items: list[Fields] = s.items("enabled")
        disabled_items: list[Fields] = s.items("disabled")
        enabled = [PluginRef(_name(e), e.int("weight", 0, min=0, max=MAX_WEIGHT)) for e in enabled_items]
        disabled = [_name(e, weight_ok=True) for e in disabled_items]
        for e in (*enabled_items, *disabled_items):
            e.finish()
        s.finish()
        out[key] = PluginSet(enabled, [n for n in disabled if n])
    f.finish()
    return out


def _name(f: Fields, *, weight_ok: bool = False) -> str:
    if weight_ok:
        f.any("weight")  # kube's Plugin type has a weight; it means nothing under disabled
    if not f.has("name"):
        f.any("name")
        f.errs.required(join(f.path, "name"))
        return ""
    return f.str("name", "")


def _plugin_config(f: Fields, registry: Registry) -> dict[str, PluginArgs]:
    out: dict[str, PluginArgs] = {}
    seen: set[str] = set()
    supported = sorted(registry)
    items: list[Fields] = f.items("pluginConfig")
    for item in items:
        name = _name(item)
        raw_args = item.any("args")
        item.finish()
        if not name:
            continue
        if name not in registry:
            item.errs.unsupported(join(item.path, "name"), name, supported)
            continue
        duplicate = name in seen
        if duplicate:
            item.errs.duplicate(item.path, name)
        seen.add(name)
        args = _decode_args(name, registry, raw_args, join(item.path, "args"), item.errs)
        if args is not None and not duplicate:
            out[name] = args
    return out


def _decode_args(name: str, registry: Registry, raw: Any, path: str, errs: ErrorList) -> PluginArgs | None:
    if isinstance(raw, Mapping):
        # kube's written configs tag each args block with its type; accept and check that.
        raw = dict(raw)
        api = raw.pop("apiVersion", None)
        kind = raw.pop("kind", None)
        if api is not None and api not in (*SUPPORTED_API_VERSIONS, v1beta1.V1BETA1):
            errs.unsupported(join(path, "apiVersion"), api, SUPPORTED_API_VERSIONS)
        if kind is not None and kind != f"{name}Args":
            errs.unsupported(join(path, "kind"), kind, [f"{name}Args"])
    args_cls = registry[name].Args
    if args_cls is None:
        if raw:
            errs.forbidden(path, f"plugin {name} takes no args")
        return None
    return args_cls.decode(Fields(raw, path, errs))
