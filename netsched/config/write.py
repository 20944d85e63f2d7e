"""Writing a config back as v1 YAML, the way kube's --write-config-to does.

Everything is written with its effective value, defaults included, so the
file shows exactly what netsched runs with.  Plugins are written as kube
writes its defaulted config: the merged multiPoint set (defaults plus the
user's entries, with weights) and the user's per-point blocks.  Loading the
written file gives an equal SchedulerConfig.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from netsched.config.duration import format_duration
from netsched.config.types import API_VERSION, KIND, PLUGIN_SET_KEYS, PluginRef, Profile, SchedulerConfig


def encode_config(cfg: SchedulerConfig) -> dict[str, Any]:
    le, cc = cfg.leader_election, cfg.client_connection
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": cfg.parallelism,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score or 0,
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
        "enableProfiling": cfg.enable_profiling,
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "delayCacheUntilActive": cfg.delay_cache_until_active,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "retryPeriod": format_duration(le.retry_period),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
        "profiles": [_profile(p) for p in cfg.profiles],
    }


def _profile(p: Profile) -> dict[str, Any]:
    out: dict[str, Any] = {"schedulerName": p.scheduler_name}
    if p.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = p.percentage_of_nodes_to_score
    plugins: dict[str, Any] = {}
    for key in PLUGIN_SET_KEYS:
        s = p.plugin_sets.get(key)
        if not s:
            continue
        block: dict[str, Any] = {}
        if s.enabled:
            block["enabled"] = [_ref(r) for r in s.enabled]
        if s.disabled:
            block["disabled"] = [{"name": n} for n in s.disabled]
        plugins[key] = block
    out["plugins"] = plugins
    out["pluginConfig"] = [{"name": n, "args": a.encode()} for n, a in p.plugin_config.items()]
    return out


def _ref(r: PluginRef) -> dict[str, Any]:
    return {"name": r.name, "weight": r.weight} if r.weight else {"name": r.name}


def dump_config(cfg: SchedulerConfig) -> str:
    return yaml.safe_dump(encode_config(cfg), sort_keys=False, allow_unicode=True, default_flow_style=False)


def write_config(cfg: SchedulerConfig, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(dump_config(cfg), encoding="utf-8")
