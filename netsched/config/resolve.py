"""From a profile's plugin blocks to the plugins the runtime runs, per extension point.

This is kube's framework step (runtime/framework.go: updatePluginList,
expandMultiPointPlugins, getScoreWeights) done once at load time, so a bad
plugin reference is a config error with a field path instead of a start-up
crash, and the runtime gets plain ordered lists with weights.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from netsched.config.types import EXTENSION_POINTS, MULTI_POINT, PLUGIN_SET_KEYS, PluginRef, PluginSet
from netsched.framework.extension_points import PluginFactory, extension_points_of
from netsched.framework.fields import ErrorList, join

Registry = Mapping[str, PluginFactory]

_log = logging.getLogger(__name__)


def _points_of(cls: PluginFactory) -> frozenset[str]:
    return frozenset(extension_points_of(cls))


def implements(registry: Registry, name: str, point: str) -> bool:
    cls = registry.get(name)
    return cls is not None and point in _points_of(cls)


def check_plugin_sets(
    custom: Mapping[str, PluginSet], registry: Registry, path: str, errs: ErrorList
) -> None:
    """Report bad names in the user's blocks, with the path of the entry at fault.

    Checked before merging with the defaults, because only the user's own
    list positions mean anything to the user.  Unregistered names under
    `disabled` only get a warning (kube accepts them silently): configs
    written for kube-scheduler often disable plugins netsched does not have.
    """
    supported = sorted(registry)
    for key in PLUGIN_SET_KEYS:
        for name in custom.get(key, PluginSet()).disabled:
            if name != "*" and name not in registry:
                _log.warning(
                    "Disabled plugin is not registered; ignored path=%s plugin=%s", join(path, key), name
                )
        seen: set[str] = set()
        for i, ref in enumerate(custom.get(key, PluginSet()).enabled):
            at = join(join(join(path, key), "enabled"), i)
            if not ref.name:
                continue  # reported as Required while decoding
            if ref.name not in registry:
                errs.unsupported(join(at, "name"), ref.name, supported)
            elif key != MULTI_POINT and not implements(registry, ref.name, key):
                errs.invalid(join(at, "name"), ref.name, f"plugin does not extend {key}")
            elif ref.name in seen:
                errs.duplicate(join(at, "name"), ref.name)
            seen.add(ref.name)


def expand(sets: Mapping[str, PluginSet], registry: Registry) -> dict[str, list[PluginRef]]:
    """The enabled plugins of every extension point, in kube's order, score weights resolved.

    `sets` are the merged blocks (defaults.merge_plugin_sets).  At each point:
    plugins enabled at that point that also come from multiPoint keep the
    point's order and go first, then the multiPoint plugins, then the rest
    of the point's own list.  `disabled: "*"` at a point turns multiPoint off
    there; a named disabled entry removes just that plugin from that point.
    """
    multi = [r for r in sets[MULTI_POINT].enabled if r.name in registry]
    out: dict[str, list[PluginRef]] = {}
    for point in EXTENSION_POINTS:
        own = _unique(r.name for r in sets[point].enabled if implements(registry, r.name, point))
        off = set(sets[point].disabled)
        if "*" in off:
            names = own
        else:
            overridden: set[str] = set()
            from_multi: list[str] = []
            for ref in multi:
                if ref.name in off or not implements(registry, ref.name, point):
                    continue
                if ref.name in own:
                    overridden.add(ref.name)
                elif ref.name not in from_multi:
                    from_multi.append(ref.name)
            names = [n for n in own if n in overridden] + from_multi + [n for n in own if n not in overridden]
        out[point] = [PluginRef(n) for n in names]
    weights = score_weights(sets, registry)
    out["score"] = [PluginRef(r.name, weights[r.name]) for r in out["score"]]
    return out


def with_default_weights(sets: Mapping[str, PluginSet], registry: Registry) -> dict[str, PluginSet]:
    """The sets with weight 1 on score plugins that have none (kube's rule), so every weight is visible.

    Only multiPoint and score entries carry weights that matter; the written
    config then shows the weight each entry really contributes.
    """
    out = dict(sets)
    for key in (MULTI_POINT, "score"):
        s = sets[key]
        enabled = [
            PluginRef(r.name, 1) if not r.weight and implements(registry, r.name, "score") else r
            for r in s.enabled
        ]
        out[key] = PluginSet(enabled, list(s.disabled))
    return out


def score_weights(sets: Mapping[str, PluginSet], registry: Registry) -> dict[str, int]:
    """kube's getScoreWeights: the score point's own entry wins over multiPoint's; 0 or unset means 1."""
    weights: dict[str, int] = {}
    for ref in (*sets["score"].enabled, *sets[MULTI_POINT].enabled):
        if ref.name not in weights and implements(registry, ref.name, "score"):
            weights[ref.name] = ref.weight or 1
    return weights


def enabled_names(sets: Mapping[str, PluginSet]) -> list[str]:
    """Every name enabled in any block, sorted (kube's pluginsNames, used for default args)."""
    return sorted({r.name for s in sets.values() for r in s.enabled if r.name})


def _unique(names: Iterable[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        if n not in out:
            out.append(n)
    return out
