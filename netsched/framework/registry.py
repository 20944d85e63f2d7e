"""Plugin registry: name -> plugin class, in-tree merged with out-of-tree.

Out-of-tree plugins are added with one call, `with_plugin(MyPlugin)`, and
handed to `netsched.main(...)`.  A name registered twice is an error at
start-up rather than a silent override, except over an in-tree plugin marked
`replaceable` (one written for a single vendor's driver, such as
LvmVolumeCapacity for TopoLVM): an out-of-tree plugin of that name takes its place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from netsched.framework.extension_points import Plugin, PluginFactory


class RegistryError(ValueError):
    pass


class Registry(Mapping[str, PluginFactory]):
    def __init__(self, plugins: Iterable[PluginFactory] = ()) -> None:
        self._plugins: dict[str, PluginFactory] = {}
        for p in plugins:
            self.register(p)

    def register(self, plugin: PluginFactory) -> None:
        if not (isinstance(plugin, type) and issubclass(plugin, Plugin)):
            raise RegistryError(f"{plugin!r} is not a Plugin subclass")
        if not plugin.name:
            raise RegistryError(f"plugin class {plugin.__qualname__} has no name")
        existing = self._plugins.get(plugin.name)
        if existing is not None and not getattr(existing, "replaceable", False):
            raise RegistryError(f"a plugin named {plugin.name!r} already exists")
        self._plugins[plugin.name] = plugin

    def merge(self, other: Iterable[PluginFactory] | Registry) -> Registry:
        """A new registry holding both; duplicate names raise RegistryError."""
        out = Registry(self._plugins.values())
        items = other.values() if isinstance(other, Registry) else other
        for p in items:
            out.register(p)
        return out

    def __getitem__(self, name: str) -> PluginFactory:
        return self._plugins[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)


def with_plugin(plugin: PluginFactory) -> PluginFactory:
    """Mark an out-of-tree plugin for registration: `netsched.main(netsched.with_plugin(MyPlugin))`.

    Returns the class unchanged after checking it, so it also works as a decorator.
    """
    Registry([plugin])  # validates name and base class now, at the call site
    return plugin
