"""Gangs: what the scheduler knows about PodGroups, and where each gang goes.

A shared helper package of the gang plugins (Coscheduling, GangTopology): the
face they import, so neither imports the other, and nothing else in netsched
does (the core names no gang: tests/unit/test_import_graph.py).  It imports
only the plugin faces (netsched.framework, netsched.metrics.plugin_api) and
plugs into the core through the Handle's generic slots: the manager is a
shared service (GANGS), the members a pod index, the backoff wake-ups and the
status writes periodic tasks.

- podgroup.py: PodGroups parsed from the API (scheduler-plugins' CRD plus
  netsched's topology annotations), and which pods belong to which;
- manager.py: GangManager, one per scheduler, built by the first gang plugin
  that asks, `gangs_of(handle)`: permitted and backed-off
  groups, members waiting at Permit, placement decisions, PodGroup status;
- placement.py: one placement decision per gang (the topology domain that
  holds it whole, chosen by live link headroom), built on domains.py (a
  level's domains), links.py (the link load) and simulation.py (the members
  placed in a domain, estimated then through the filters);
- status.py: the PodGroup status writer, a periodic task.
"""

from .links import LinkView
from .manager import (
    GANGS,
    Attempt,
    GangManager,
    GangOutcome,
    PermitAnswer,
    PermitVerdict,
    Release,
    gangs_of,
)
from .placement import (
    PLACED,
    PLACEMENT_KEY,
    SPREAD,
    UNSCHEDULABLE,
    Decision,
    Gang,
    Placement,
    PlacementOutcome,
    Policy,
    decide,
    derive,
    placement_in,
)
from .podgroup import (
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
from .simulation import Scene
from .status import PodGroupStatusWriter, StatusUpdate

__all__ = [
    "Attempt",
    "GangOutcome",
    "PermitAnswer",
    "PermitVerdict",
    "Release",
    "Scene",
    "GANGS",
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
    "Gang",
    "GangManager",
    "GroupError",
    "LinkView",
    "Placement",
    "PlacementOutcome",
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
