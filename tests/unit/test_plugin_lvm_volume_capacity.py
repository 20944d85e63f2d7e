"""LvmVolumeCapacity is refused with a message saying how to add it; an out-of-tree one replaces it."""

from __future__ import annotations

import pytest

from netsched.app import build_registry
from netsched.framework import CycleState, FilterPlugin, NodeInfo, PodInfo, Status
from netsched.framework.registry import RegistryError
from netsched.framework.runtime import FrameworkBuildError
from netsched.plugins.lvm_volume_capacity import REFUSAL, LvmVolumeCapacity
from netsched.testing.framework import build_framework


class Mine(FilterPlugin):
    name = "LvmVolumeCapacity"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


class Other(FilterPlugin):
    name = "NodeName"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


def test_enabling_it_fails_the_build_with_the_refusal() -> None:
    with pytest.raises(FrameworkBuildError) as e:
        build_framework([LvmVolumeCapacity])
    assert f"plugin 'LvmVolumeCapacity' failed to initialise: {REFUSAL}" in str(e.value)
    assert REFUSAL.startswith("LvmVolumeCapacity is a storage vendor's plugin")
    assert "is not included in netsched" in REFUSAL
    assert "netsched.main(netsched.with_plugin(LvmVolumeCapacity))" in REFUSAL


def test_an_out_of_tree_plugin_of_that_name_replaces_it() -> None:
    assert build_registry()["LvmVolumeCapacity"] is LvmVolumeCapacity
    assert build_registry([Mine])["LvmVolumeCapacity"] is Mine


def test_other_in_tree_names_still_refuse_duplicates() -> None:
    with pytest.raises(RegistryError, match="a plugin named 'NodeName' already exists"):
        build_registry([Other])
