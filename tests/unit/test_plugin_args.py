"""Every configurable in-tree plugin refuses args of the wrong type, by name, at build time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from netsched.framework.interfaces import Plugin, PluginArgs, PluginArgsError
from netsched.framework.runtime import FrameworkBuildError
from netsched.plugins.node_resources_fit import NodeResourcesFitArgs
from netsched.plugins.registry import in_tree_plugins
from netsched.testing.framework import build_framework, build_plugin
from netsched.testing.prometheus import fake_hub

CONFIGURABLE = [p for p in in_tree_plugins() if p.Args is not None]


@dataclass
class WrongArgs(PluginArgs):
    """Args no in-tree plugin accepts."""

    @classmethod
    def decode(cls, fields: Any) -> WrongArgs:
        return cls()

    def encode(self) -> dict[str, Any]:
        return {}


def test_the_table_covers_the_configurable_plugins() -> None:
    assert len(CONFIGURABLE) >= 9
    assert {"NodeResourcesFit", "NetworkTraffic", "DefaultPreemption"} <= {p.name for p in CONFIGURABLE}


@pytest.mark.parametrize("cls", CONFIGURABLE, ids=lambda c: c.name)
def test_wrong_args_type_fails_the_build_naming_the_plugin(cls: type[Plugin]) -> None:
    hub, _ = fake_hub()
    with pytest.raises(FrameworkBuildError) as e:
        build_framework([cls], args={cls.name: WrongArgs()}, metrics=hub)
    assert cls.Args is not None
    msg = str(e.value)
    # Refused by the runtime before the constructor runs; said once, however many points it is at.
    want = f"plugin {cls.name!r}: args must be {cls.Args.__name__} or a mapping, got WrongArgs"
    assert want in msg and msg.count(want) == 1


@pytest.mark.parametrize("cls", CONFIGURABLE, ids=lambda c: c.name)
def test_no_args_means_the_documented_defaults(cls: type[Plugin]) -> None:
    hub, _ = fake_hub()
    assert cls.Args is not None
    plugin = build_plugin(cls, metrics=hub)
    assert plugin.args_as(cls.Args) == cls.Args.default()
    plugin.args = None  # not configured at all (the runtime fills defaults in; args_as does too)
    assert plugin.args_as(cls.Args) == cls.Args.default()


def test_args_as_error_is_a_type_error_naming_both_types() -> None:
    class Mine(Plugin):
        name = "Mine"

    hub, _ = fake_hub()
    plugin = Mine(WrongArgs(), build_framework([], metrics=hub))
    with pytest.raises(PluginArgsError, match="plugin 'Mine' wants args of type .*, got WrongArgs"):
        plugin.args_as(NodeResourcesFitArgs)
    assert issubclass(PluginArgsError, TypeError)
