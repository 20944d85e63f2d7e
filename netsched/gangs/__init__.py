"""Gangs: what the scheduler knows about PodGroups, and where each gang goes.

The face the gang plugins (Coscheduling, GangTopology) import, so neither
imports the other:

- podgroup.py: PodGroups parsed from the API (scheduler-plugins' CRD plus
  netsched's topology annotations), and which pods belong to which;
- manager.py: GangManager, one per scheduler, built by the composition root
  and reached by plugins with `gangs_of(handle)`: permitted and backed-off
  groups, members waiting at Permit, placement decisions, PodGroup status;
- placement.py: one placement decision per gang (the topology domain that
  holds it whole, chosen by live link headroom), built on domains.py (a
  level's domains), links.py (the link load) and simulation.py (the members
  placed in a domain, estimated then through the filters);
- status.py: the PodGroup status writer, wired by the composition root.
"""

from netsched.gangs.domains import HOSTNAME
from netsched.gangs.links import LinkView
from netsched.gangs.manager import GANGS, GangManager, gangs_of
from netsched.gangs.placement import (
    PLACED,
    PLACEMENT_KEY,
    SPREAD,
    UNSCHEDULABLE,
    Decision,
    Placement,
    Policy,
    decide,
    derive,
    placement_in,
)
from netsched.gangs.podgroup import (
    LEGACY_POD_GROUP_LABEL,
    POD_GROUP_LABEL,
    PODGROUP_API_VERSION,
    PODGROUP_KIND,
    PODGROUPS_KEY,
    PREFERRED,
    REQUIRED,
    TOPOLOGY_PREFERRED,
    TOPOLOGY_REQUIRED,
    GroupError,
    PodGroup,
    TopologyRequest,
    full_name,
    group_name,
    is_own_group,
    parse_group,
    spec_changed,
)
from netsched.gangs.status import PodGroupStatusWriter, StatusUpdate

__all__ = [
    "GANGS",
    "HOSTNAME",
    "LEGACY_POD_GROUP_LABEL",
    "PLACED",
    "PLACEMENT_KEY",
    "POD_GROUP_LABEL",
    "PODGROUP_API_VERSION",
    "PODGROUPS_KEY",
    "PODGROUP_KIND",
    "PREFERRED",
    "REQUIRED",
    "SPREAD",
    "StatusUpdate",
    "TOPOLOGY_PREFERRED",
    "TOPOLOGY_REQUIRED",
    "UNSCHEDULABLE",
    "Decision",
    "GangManager",
    "GroupError",
    "LinkView",
    "Placement",
    "PodGroup",
    "PodGroupStatusWriter",
    "Policy",
    "TopologyRequest",
    "decide",
    "derive",
    "full_name",
    "gangs_of",
    "group_name",
    "is_own_group",
    "parse_group",
    "placement_in",
    "spec_changed",
]
