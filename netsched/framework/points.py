"""Builds a profile's plugins, once, and refuses a profile that cannot work.

kube's NewFramework fails fast before anything is scheduled: an unknown plugin, a
plugin enabled at a point it does not extend, a score plugin without a weight, no
queue sort or more than one, no binder, args of the wrong type.  All problems
are collected and reported together, so one start shows every mistake.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from netsched.framework.errors import FrameworkBuildError
from netsched.framework.extension_points import EXTENSION_POINTS, AnyPlugin, PluginArgs, PluginFactory
from netsched.framework.handle import ProfileLike
from netsched.framework.seams import Handle


@dataclass(slots=True)
class BuiltProfile:
    """Each plugin built once (by name), the plugins of each extension point in order, and the
    weight of each score plugin."""

    instances: dict[str, AnyPlugin] = field(default_factory=dict)
    points: dict[str, list[AnyPlugin]] = field(default_factory=lambda: {ep: [] for ep in EXTENSION_POINTS})
    weights: dict[str, int] = field(default_factory=dict)


def build_profile(
    profile: ProfileLike, registry: Mapping[str, PluginFactory], handle: Handle
) -> BuiltProfile:
    """The plugins `profile` enables, built with `handle` as their Handle; FrameworkBuildError
    naming the profile and every problem found."""
    built = BuiltProfile()
    problems: list[str] = []
    for ep, refs in profile.plugins.items():
        if ep == "multiPoint":
            continue  # already expanded into the points by the config
        if ep not in EXTENSION_POINTS:
            problems.append(f"unknown extension point {ep!r}")
            continue
        for ref in refs:
            plugin = _instance(built, ref.name, profile, registry, handle, problems)
            if plugin is None:
                continue
            if not isinstance(plugin, EXTENSION_POINTS[ep]):
                problems.append(f"plugin {ref.name!r} does not extend {ep}")
                continue
            built.points[ep].append(plugin)
            if ep == "score":
                weight = int(getattr(ref, "weight", 0) or 0)
                if weight <= 0:
                    problems.append(f"score plugin {ref.name!r} is not configured with weight")
                built.weights[ref.name] = weight
    sorts = len(built.points["queueSort"])
    if sorts != 1:
        problems.append(f"only one queue sort plugin can be enabled, found {sorts}")
    if not built.points["bind"]:
        problems.append("at least one bind plugin is needed")
    if problems:
        name = profile.scheduler_name
        raise FrameworkBuildError(f"profile {name!r}: " + "; ".join(dict.fromkeys(problems)))
    return built


def _instance(
    built: BuiltProfile,
    name: str,
    profile: ProfileLike,
    registry: Mapping[str, PluginFactory],
    handle: Handle,
    problems: list[str],
) -> AnyPlugin | None:
    """The plugin called `name`, built on first use (one instance serves every point)."""
    got = built.instances.get(name)
    if got is not None:
        return got
    cls = registry.get(name)
    if cls is None:
        problems.append(f"plugin {name!r} is not registered")
        return None
    errs: list[str] = []
    args = PluginArgs.resolve(cls.Args, profile.plugin_config.get(name), name, errs)
    if errs:
        problems.extend(f"plugin {name!r}: {e}" for e in errs)
        return None
    try:
        plugin = cls(args, handle)
    except Exception as e:  # a plugin constructor fault is a start-up error, with its name
        problems.append(f"plugin {name!r} failed to initialise: {e}")
        return None
    built.instances[name] = plugin
    return plugin
