"""Each in-tree plugin's name has one source, netsched.framework.names: the plugin's `name`
and the configuration's default plugin set both read it (the config never imports plugins)."""

from __future__ import annotations

import re

import pytest

from netsched.config.defaults import DEFAULT_PLUGINS
from netsched.framework import PluginFactory, names
from netsched.plugins.registry import in_tree_plugins

CONSTANTS = {key: value for key, value in vars(names).items() if key.isupper()}
IN_TREE = in_tree_plugins()


def constant_for(plugin_name: str) -> str:
    """NodeResourcesFit -> NODE_RESOURCES_FIT, CheckCSIStorageCapacity -> CHECK_CSI_STORAGE_CAPACITY."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", plugin_name).upper()


@pytest.mark.parametrize("cls", IN_TREE, ids=lambda c: c.name)
def test_each_in_tree_plugin_is_named_by_its_constant(cls: PluginFactory) -> None:
    key = constant_for(cls.__name__)
    assert key in CONSTANTS, f"netsched.framework.names has no {key} for {cls.__qualname__}"
    assert cls.name == CONSTANTS[key]


def test_each_constant_names_an_in_tree_plugin() -> None:
    registered = {cls.name for cls in IN_TREE}
    assert sorted(set(CONSTANTS.values()) - registered) == []
    assert len(set(CONSTANTS.values())) == len(CONSTANTS), "two constants with one value"
    assert all(constant_for(value) == key for key, value in CONSTANTS.items())


def test_the_default_plugin_set_is_named_by_the_constants() -> None:
    assert [ref.name for ref in DEFAULT_PLUGINS] == [
        names.SCHEDULING_GATES,
        names.PRIORITY_SORT,
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
        names.NODE_PORTS,
        names.NODE_RESOURCES_FIT,
        names.VOLUME_RESTRICTIONS,
        names.NODE_VOLUME_LIMITS,
        names.VOLUME_BINDING,
        names.VOLUME_ZONE,
        names.POD_TOPOLOGY_SPREAD,
        names.INTER_POD_AFFINITY,
        names.DEFAULT_PREEMPTION,
        names.NODE_RESOURCES_BALANCED_ALLOCATION,
        names.IMAGE_LOCALITY,
        names.DEFAULT_BINDER,
    ]
