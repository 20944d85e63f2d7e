"""Storage objects with fields of the wrong JSON type are read without crashing the plugins
(they used to raise AttributeError / TypeError out of the reader and VolumeRestrictions)."""

from __future__ import annotations

from netsched.plugins.volume_restrictions.plugin import volume_conflict
from netsched.plugins.volumes.objects import parse_volume
from netsched.plugins.volumes.reader import _Table


def test_a_volume_whose_metadata_is_not_an_object_is_parsed_not_crashed_on() -> None:
    table = _Table("pvs", parse_volume)
    assert table.parsed({"metadata": ["x"]}).name == ""
    assert table.parsed({"metadata": {"name": "pv1"}}).name == "pv1"


def test_rbd_monitors_that_are_not_strings_are_ignored() -> None:
    mine = {"rbd": {"monitors": [{"host": "a"}, "m1"], "image": "i"}}
    assert volume_conflict(mine, {"rbd": {"monitors": ["m1"], "image": "i"}})
    assert not volume_conflict(mine, {"rbd": {"monitors": [{"host": "a"}], "image": "i"}})
    assert not volume_conflict(
        {"rbd": {"monitors": "m1", "image": "i"}}, {"rbd": {"monitors": ["m1"], "image": "i"}}
    )
