"""LoadAware: prefer nodes with low measured CPU and memory utilisation."""

from netsched.plugins.load_aware.args import LoadAwareArgs, ResourceWeight, TargetLoadPacking
from netsched.plugins.load_aware.plugin import LoadAware, target_load_packing

__all__ = ["LoadAware", "LoadAwareArgs", "ResourceWeight", "TargetLoadPacking", "target_load_packing"]
