"""Coscheduling: gang scheduling over scheduler-plugins' PodGroups (state in netsched.plugins.gangs)."""

from ..gangs import LEGACY_POD_GROUP_LABEL, POD_GROUP_LABEL, PodGroup
from .args import CoschedulingArgs
from .plugin import Coscheduling

__all__ = ["LEGACY_POD_GROUP_LABEL", "POD_GROUP_LABEL", "Coscheduling", "CoschedulingArgs", "PodGroup"]
