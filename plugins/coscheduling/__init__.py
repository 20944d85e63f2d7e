"""Coscheduling: gang scheduling over scheduler-plugins' PodGroups (state in netsched.plugins.gangs)."""

from netsched.plugins.coscheduling.args import CoschedulingArgs
from netsched.plugins.coscheduling.plugin import Coscheduling
from netsched.plugins.gangs import LEGACY_POD_GROUP_LABEL, POD_GROUP_LABEL, PodGroup

__all__ = ["LEGACY_POD_GROUP_LABEL", "POD_GROUP_LABEL", "Coscheduling", "CoschedulingArgs", "PodGroup"]
