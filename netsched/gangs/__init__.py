"""Gangs: what the scheduler knows about PodGroups, and where each gang goes.

The face the gang plugins (Coscheduling, GangTopology) import, so neither
imports the other:

- podgroup.py: PodGroups parsed from the API (scheduler-plugins' CRD plus
  netsched's topology annotations), and which pods belong to which;
- manager.py: GangManager, one per scheduler, built by the composition root
  and reached by plugins with `gangs_of(handle)`: permitted and backed-off
  groups, members waiting at Permit, PodGroup status;
- status.py: the PodGroup status writer, wired by the composition root.
"""

from netsched.gangs.manager import BackedOffGroups, GangManager, GangMetrics, gangs_of, resource_gap
from netsched.gangs.podgroup import (
    LEGACY_POD_GROUP_LABEL,
    POD_GROUP_LABEL,
    PODGROUP_KIND,
    PODGROUPS_KEY,
    GroupError,
    PodGroup,
    full_name,
    group_name,
    parse_group,
)
from netsched.gangs.status import PodGroupStatusWriter

__all__ = [
    "LEGACY_POD_GROUP_LABEL",
    "POD_GROUP_LABEL",
    "PODGROUPS_KEY",
    "PODGROUP_KIND",
    "BackedOffGroups",
    "GangManager",
    "GangMetrics",
    "GroupError",
    "PodGroup",
    "PodGroupStatusWriter",
    "full_name",
    "gangs_of",
    "group_name",
    "parse_group",
    "resource_gap",
]
