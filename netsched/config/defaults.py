"""kube's defaulting of a profile's plugins, and netsched's lease-name default.

kube expresses its default plugins as one multiPoint set and merges the
user's blocks into it point by point (v1 default_plugins.go, mergePluginSet);
the framework later expands multiPoint to the extension points each plugin
implements (see resolve.py).  Keeping the two steps apart, as kube does, is
what makes `disabled` and re-enabling a default behave exactly like kube.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from netsched.config.types import (
    DEFAULT_SCHEDULER_NAME,
    MULTI_POINT,
    NETSCHED_LEASE_NAME,
    PLUGIN_SET_KEYS,
    PluginRef,
    PluginSet,
)
from netsched.framework import names

_log = logging.getLogger(__name__)

# kube v1's default multiPoint set, in kube's order, with its score weights
# (v1.31 pkg/scheduler/apis/config/v1/default_plugins.go, no feature gates changing it);
# the names are the plugins' own (netsched.framework.names), read without importing plugin code.
DEFAULT_PLUGINS: tuple[PluginRef, ...] = (
    PluginRef(names.SCHEDULING_GATES),
    PluginRef(names.PRIORITY_SORT),
    PluginRef(names.NODE_UNSCHEDULABLE),
    PluginRef(names.NODE_NAME),
    PluginRef(names.TAINT_TOLERATION, 3),
    PluginRef(names.NODE_AFFINITY, 2),
    PluginRef(names.NODE_PORTS),
    PluginRef(names.NODE_RESOURCES_FIT, 1),
    PluginRef(names.VOLUME_RESTRICTIONS),
    PluginRef(names.NODE_VOLUME_LIMITS),
    PluginRef(names.VOLUME_BINDING),
    PluginRef(names.VOLUME_ZONE),
    PluginRef(names.POD_TOPOLOGY_SPREAD, 2),
    PluginRef(names.INTER_POD_AFFINITY, 2),
    PluginRef(names.DEFAULT_PREEMPTION),
    PluginRef(names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    PluginRef(names.IMAGE_LOCALITY, 1),
    PluginRef(names.DEFAULT_BINDER),
)


def default_plugin_sets(
    defaults: Iterable[PluginRef], registry: Mapping[str, object]
) -> dict[str, PluginSet]:
    """Every plugin-set key, with the default list (minus unregistered plugins) under multiPoint.

    Dropping unregistered defaults is silent by design: the default list names
    kube's plugins, and a build of netsched may not ship all of them yet.
    """
    sets = {key: PluginSet() for key in PLUGIN_SET_KEYS}
    for ref in defaults:
        if ref.name in registry:
            sets[MULTI_POINT].enabled.append(ref)
        else:
            _log.debug("Default plugin is not registered; skipped plugin=%s", ref.name)
    return sets


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """kube's mergePluginSet: the user's block applied to the default block of one key.

    Defaults keep their order unless disabled (or all dropped by "*"); a
    default the user enables again is replaced in place by the user's entry,
    weight included (an entry without weight therefore means weight 1 later,
    not the default weight); the user's other entries follow in their order.
    Duplicates are kept here and reported by validation, as in kube.
    """
    disabled = [*custom.disabled, *default.disabled]
    off = set(disabled)
    by_name = {ref.name: i for i, ref in enumerate(custom.enabled)}  # last entry wins, like kube
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in off:
        for ref in default.enabled:
            if ref.name in off:
                continue
            i = by_name.get(ref.name)
            if i is not None:
                ref = custom.enabled[i]
                replaced.add(i)
            enabled.append(ref)
    enabled.extend(ref for i, ref in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled, disabled)


def merge_plugin_sets(
    defaults: Mapping[str, PluginSet], custom: Mapping[str, PluginSet]
) -> dict[str, PluginSet]:
    return {key: merge_plugin_set(defaults[key], custom.get(key, PluginSet())) for key in PLUGIN_SET_KEYS}


def default_lease_name(scheduler_name: str) -> str:
    """The Lease netsched campaigns on when leaderElection.resourceName is not set.

    kube's default ("kube-scheduler") is the default scheduler's own lease:
    taking it would make netsched and kube-scheduler block each other.  So
    the lease is named after the first profile, and a profile still called
    "default-scheduler" gets "netsched".
    """
    if not scheduler_name or scheduler_name == DEFAULT_SCHEDULER_NAME:
        return NETSCHED_LEASE_NAME
    return scheduler_name
