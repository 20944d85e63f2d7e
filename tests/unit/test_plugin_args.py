"""Every configurable in-tree plugin refuses args of the wrong type, by name, at build time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from netsched.framework import FilterPlugin, Plugin, PluginArgs, PluginArgsError, ScorePlugin
from netsched.framework.errors import FrameworkBuildError
from netsched.plugins.noderesources import NodeResourcesFitArgs
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
    assert plugin.args == cls.Args.default()
    # Not configured at all (the runtime fills defaults in; so does the constructor).
    assert cls(None, plugin.handle).args == cls.Args.default()


def test_args_of_another_type_are_a_type_error_naming_both_types() -> None:
    class Mine(FilterPlugin[NodeResourcesFitArgs]):
        name = "Mine"

    hub, _ = fake_hub()
    with pytest.raises(
        PluginArgsError, match="plugin 'Mine' wants args of type NodeResourcesFitArgs, got WrongArgs"
    ):
        Mine(WrongArgs(), build_framework([], metrics=hub))
    assert issubclass(PluginArgsError, TypeError)


def test_the_args_type_comes_from_the_bases() -> None:
    class Typed(FilterPlugin[NodeResourcesFitArgs], ScorePlugin[NodeResourcesFitArgs]):
        name = "Typed"

    class Bare(FilterPlugin[None]):
        name = "Bare"

    class Old(FilterPlugin):  # type: ignore[type-arg]  # the older way: Args set by hand
        name = "Old"
        Args = NodeResourcesFitArgs

    assert (Typed.Args, Bare.Args, Old.Args) == (NodeResourcesFitArgs, None, NodeResourcesFitArgs)
    handle = build_framework([])
    assert Typed(None, handle).args == NodeResourcesFitArgs.default()
    assert Old(None, handle).args == NodeResourcesFitArgs.default()
    assert Bare(None, handle).args is None
    with pytest.raises(PluginArgsError, match="plugin 'Bare' takes no args, got WrongArgs"):
        Bare(WrongArgs(), handle)  # type: ignore[arg-type]


def test_bases_naming_different_args_types_are_refused_when_the_class_is_defined() -> None:
    with pytest.raises(
        TypeError, match=r"plugin class .*Split: its bases name different args types \(None, WrongArgs\)"
    ):

        class Split(FilterPlugin[WrongArgs], ScorePlugin[None]):
            name = "Split"

    with pytest.raises(
        TypeError, match=r"plugin class .*Contrary: Args is WrongArgs but its bases name NodeResourcesFitArgs"
    ):

        class Contrary(FilterPlugin[NodeResourcesFitArgs]):
            name = "Contrary"
            Args = WrongArgs

    with pytest.raises(
        TypeError, match=r"plugin class .*NotArgs: .* names <class 'int'>, not a PluginArgs subclass or None"
    ):

        class NotArgs(FilterPlugin[int]):  # type: ignore[type-var]
            name = "NotArgs"
