"""Each load-aware plugin's README example goes through the real config loader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from netsched.app import build_registry
from netsched.config import load_config
from netsched.framework import PluginArgs
from netsched.plugins.load_aware import LoadAwareArgs
from netsched.plugins.load_threshold import LoadThresholdArgs
from netsched.plugins.network_traffic import NetworkTrafficArgs
from netsched.plugins.traffic_affinity import TrafficAffinityArgs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("folder", "name", "args_type"),
    [
        ("network_traffic", "NetworkTraffic", NetworkTrafficArgs),
        ("load_aware", "LoadAware", LoadAwareArgs),
        ("load_threshold", "LoadThreshold", LoadThresholdArgs),
        ("traffic_affinity", "TrafficAffinity", TrafficAffinityArgs),
    ],
)
def test_readme_example_loads_and_validates(folder: str, name: str, args_type: type[PluginArgs]) -> None:
    readme = ROOT / "plugins" / folder / "README.md"
    found = re.search(r"```yaml\n(.*?)```", readme.read_text(), re.S)
    assert found is not None
    cfg = load_config(found.group(1), build_registry())
    profile = cfg.profiles[0]
    assert profile.scheduler_name == "netsched"
    args = profile.args(name)
    assert isinstance(args, args_type)
    # The YAML anchor gives every metrics plugin the same block: one source, one estimator.
    blocks = {a.prometheus for a in profile.plugin_config.values() if hasattr(a, "prometheus")}
    assert blocks == {args.prometheus}  # type: ignore[attr-defined]
