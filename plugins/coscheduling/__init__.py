"""Coscheduling: gang scheduling over scheduler-plugins' PodGroups."""

from netsched.plugins.coscheduling.args import CoschedulingArgs
from netsched.plugins.coscheduling.groups import LEGACY_POD_GROUP_LABEL, POD_GROUP_LABEL, PodGroup
from netsched.plugins.coscheduling.plugin import Coscheduling

__all__ = ["LEGACY_POD_GROUP_LABEL", "POD_GROUP_LABEL", "Coscheduling", "CoschedulingArgs", "PodGroup"]
