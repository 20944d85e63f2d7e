"""Coscheduling: gang scheduling over scheduler-plugins' PodGroups."""

from plugins.coscheduling.args import CoschedulingArgs
from plugins.coscheduling.groups import LEGACY_POD_GROUP_LABEL, POD_GROUP_LABEL, PodGroup
from plugins.coscheduling.plugin import Coscheduling

__all__ = ["LEGACY_POD_GROUP_LABEL", "POD_GROUP_LABEL", "Coscheduling", "CoschedulingArgs", "PodGroup"]
