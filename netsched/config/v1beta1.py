"""kubescheduler.config.k8s.io/v1beta1 -> the v1 shape load.py decodes (kube 1.19-1.21 configs).

kube removed v1beta1 in 1.23; configs from that era still circulate in
articles, so netsched converts them, with a deprecation warning, and then
loads them through the normal decode/validate path. Every difference handled
(kube's v1beta2 conversion and defaults; one test each in
tests/unit/test_config_v1beta1.py):

1. Score plugins NodeResourcesLeastAllocated / NodeResourcesMostAllocated /
   RequestedToCapacityRatio -> NodeResourcesFit (score) with
   scoringStrategy.type LeastAllocated / MostAllocated / RequestedToCapacityRatio;
   their weight is kept; their args (`resources`, RequestedToCapacityRatio's
   `shape`) become NodeResourcesFitArgs.scoringStrategy. Two of them enabled
   in one profile is an error (one strategy per profile since v1beta2).
2. v1beta1's default score weights (kube 1.21): NodeAffinity 1,
   InterPodAffinity 1, TaintToleration 1 (v1: 2, 2, 3).
3. PodTopologySpreadArgs with defaultConstraints and no defaultingType mean
   defaultingType List (v1beta1's defaulting; v1's default is System).
4. NodePreferAvoidPods (a no-op since kube 1.22, removed in v1beta3) is
   dropped with a warning; NodeLabel and ServiceAffinity (removed in v1beta2,
   no netsched equivalent) are errors naming the entry.
5. healthzBindAddress / metricsBindAddress (removed in v1beta3) are dropped
   with a warning: netsched serves on --secure-port.
6. `multiPoint` did not exist in v1beta1: an error, as kube's strict decoding.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from netsched.config.types import API_GROUP, PLUGIN_SET_KEYS, PluginRef
from netsched.framework import names
from netsched.framework.fields import ErrorList, join

log = logging.getLogger(__name__)

V1BETA1 = f"{API_GROUP}/v1beta1"
FIT = names.NODE_RESOURCES_FIT
# v1beta1 score plugins that v1 folds into NodeResourcesFit as a scoringStrategy type.
STRATEGY_PLUGINS = {
    "NodeResourcesLeastAllocated": "LeastAllocated",
    "NodeResourcesMostAllocated": "MostAllocated",
    "RequestedToCapacityRatio": "RequestedToCapacityRatio",
}
DROPPED = ("NodePreferAvoidPods",)
REMOVED = ("NodeLabel", "ServiceAffinity")
V1BETA1_WEIGHTS = {names.NODE_AFFINITY: 1, names.INTER_POD_AFFINITY: 1, names.TAINT_TOLERATION: 1}


def default_plugins(v1_defaults: tuple[PluginRef, ...]) -> tuple[PluginRef, ...]:
    """v1's default set with v1beta1's score weights."""
    return tuple(PluginRef(r.name, V1BETA1_WEIGHTS.get(r.name, r.weight)) for r in v1_defaults)


def convert(raw: Mapping[str, Any], errs: ErrorList) -> dict[str, Any]:
    """A v1-shaped copy of a v1beta1 document; problems go to errs with their paths."""
    out = copy.deepcopy(dict(raw))
    out["apiVersion"] = f"{API_GROUP}/v1"
    for key in ("healthzBindAddress", "metricsBindAddress"):
        if out.pop(key, None) is not None:
            log.warning("v1beta1 field dropped: netsched serves on --secure-port field=%s", key)
    profiles = out.get("profiles")
    if isinstance(profiles, list):
        for i, profile in enumerate(profiles):
            if isinstance(profile, dict):
                _profile(profile, f"profiles[{i}]", errs)
    return out


def _profile(profile: dict[str, Any], path: str, errs: ErrorList) -> None:
    plugins = profile.get("plugins")
    strategy: tuple[str, str, int] | None = None  # (old plugin, strategy type, weight)
    if isinstance(plugins, dict):
        if "multiPoint" in plugins:
            errs.forbidden(join(path, "plugins.multiPoint"), "multiPoint does not exist in v1beta1")
            plugins.pop("multiPoint")
        for key in PLUGIN_SET_KEYS:
            block = plugins.get(key)
            if not isinstance(block, dict):
                continue
            for list_key in ("enabled", "disabled"):
                entries = block.get(list_key)
                if not isinstance(entries, list):
                    continue
                kept = []
                for j, entry in enumerate(entries):
                    name = entry.get("name") if isinstance(entry, dict) else None
                    at = f"{path}.plugins.{key}.{list_key}[{j}].name"
                    if name in DROPPED:
                        log.warning(
                            "v1beta1 plugin dropped (no-op since kube 1.22) path=%s plugin=%s", at, name
                        )
                        continue
                    if name in REMOVED and list_key == "enabled":
                        errs.forbidden(at, f"{name} was removed from kube-scheduler in v1beta2 (1.22)")
                        continue
                    if name in STRATEGY_PLUGINS and isinstance(entry, dict):
                        if list_key == "enabled":
                            if strategy is not None and strategy[0] != name:
                                errs.invalid(
                                    at,
                                    name,
                                    f"only one scoring strategy per profile ({strategy[0]} is enabled)",
                                )
                                continue
                            strategy = (name, STRATEGY_PLUGINS[name], int(entry.get("weight") or 1))
                        entry = {**entry, "name": FIT}
                    kept.append(entry)
                block[list_key] = _unique_fit(kept)
    _plugin_config(profile, path, strategy, errs)


def _unique_fit(entries: list[Any]) -> list[Any]:
    """Two old plugins both disabled map to NodeResourcesFit twice: keep one."""
    out, seen_fit = [], False
    for e in entries:
        if isinstance(e, dict) and e.get("name") == FIT:
            if seen_fit:
                continue
            seen_fit = True
        out.append(e)
    return out


def _needs_list_defaulting(args: Mapping[str, Any]) -> bool:
    return bool(args.get("defaultConstraints")) and "defaultingType" not in args


def _plugin_config(
    profile: dict[str, Any], path: str, strategy: tuple[str, str, int] | None, errs: ErrorList
) -> None:
    items = profile.get("pluginConfig")
    if not isinstance(items, list):
        items = []
    fit_args: dict[str, Any] | None = None
    old_args: dict[str, Any] = {}
    kept = []
    for item in items:
        if not isinstance(item, dict):
            kept.append(item)
            continue
        name, args = item.get("name"), item.get("args")
        if name in STRATEGY_PLUGINS:
            old_args[name] = dict(args) if isinstance(args, dict) else {}
            continue
        if name == FIT and isinstance(args, dict):
            fit_args = args
        if name == names.POD_TOPOLOGY_SPREAD and isinstance(args, dict) and _needs_list_defaulting(args):
            args["defaultingType"] = "List"  # v1beta1's defaulting
        if isinstance(args, dict):
            args.pop("apiVersion", None)
            args.pop("kind", None)
        kept.append(item)
    if strategy is not None:
        old_name, kind, _weight = strategy
        source = old_args.get(old_name, {})
        scoring: dict[str, Any] = {"type": kind}
        if "resources" in source:
            scoring["resources"] = source["resources"]
        if kind == "RequestedToCapacityRatio":
            scoring["requestedToCapacityRatio"] = {"shape": source.get("shape") or []}
            # v1beta1's RequestedToCapacityRatioArgs had no default resources besides cpu/memory.
        if fit_args is None:
            fit_args = {}
            kept.append({"name": FIT, "args": fit_args})
        fit_args["scoringStrategy"] = scoring
    profile["pluginConfig"] = kept
