"""LoadAware: prefer nodes with low measured CPU and memory utilisation."""

from .args import LoadAwareArgs, ResourceWeight, TargetLoadPacking
from .plugin import LoadAware, target_load_packing

__all__ = ["LoadAware", "LoadAwareArgs", "ResourceWeight", "TargetLoadPacking", "target_load_packing"]
