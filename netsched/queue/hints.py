"""Queueing hints: which cluster events are worth a retry of a pod parked as unschedulable.

Moving every parked pod back on every cluster event wastes scheduling attempts
on pods nothing could have helped (a pod too big for any node retried on each
pod deletion, each node heartbeat).  As in kube-scheduler (v1.31
isPodWorthRequeuing), a parked pod remembers the plugins that rejected it; an
event moves it only if one of them registered a matching event
(Plugin.events_to_register) and that registration's hint function says QUEUE.
The safe defaults keep today's behaviour where nothing better is known: a pod
with no rejecting plugin recorded, a plugin that does not implement
events_to_register, a rejecting plugin the profile does not know, a hint that
raises, and a wildcard event all mean QUEUE.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from netsched.framework.cluster_events import (
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from netsched.framework.extension_points import AnyPlugin
from netsched.framework.types import QueuedPodInfo

log = logging.getLogger(__name__)


def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == WILDCARD and event.action == ActionType.ALL


class HintMap:
    """The registrations of one profile's plugins, by plugin name (None: every event)."""

    def __init__(self, registrations: Mapping[str, Sequence[ClusterEventWithHint] | None]) -> None:
        self._regs = {name: None if regs is None else tuple(regs) for name, regs in registrations.items()}
        self._resources = frozenset(r.event.resource for regs in self._regs.values() for r in regs or ())

    @classmethod
    def of_plugins(cls, plugins: Mapping[str, AnyPlugin]) -> HintMap:
        """Ask every plugin once; a plugin whose events_to_register() raises gets every event."""
        regs: dict[str, Sequence[ClusterEventWithHint] | None] = {}
        for name, plugin in plugins.items():
            try:
                regs[name] = plugin.events_to_register()
            except Exception:
                log.exception("events_to_register failed, registering every event plugin=%s", name)
                regs[name] = None
        return cls(regs)

    def registers(self, resource: str) -> bool:
        """A plugin names events of `resource` (a wildcard registration does not count): the
        events some resources would cost are sent only then (UNSCHEDULED_POD_ADD)."""
        return resource in self._resources

    def worth_requeuing(self, qp: QueuedPodInfo, event: ClusterEvent, old: object, new: object) -> bool:
        """kube's isPodWorthRequeuing, reduced to Queue / Skip (a pod is never requeued "sooner")."""
        rejectors = qp.unschedulable_plugins | qp.pending_plugins
        if not rejectors or is_wildcard(event):
            return True
        for plugin in rejectors:
            if plugin not in self._regs:
                return True  # not one of this profile's plugins: nothing known about it
            regs = self._regs[plugin]
            if regs is None:
                return True
            for reg in regs:
                if not reg.event.match(event):
                    continue
                if ask(reg, plugin, qp, old, new) is QueueingHint.QUEUE:
                    return True
        return False


def ask(reg: ClusterEventWithHint, plugin: str, qp: QueuedPodInfo, old: object, new: object) -> QueueingHint:
    """The registration's answer for the pod (no hint function: QUEUE)."""
    if reg.hint is None:
        return QueueingHint.QUEUE
    try:
        return reg.hint(qp.pod, old, new)
    except Exception:
        # kube: an error from a hint means Queue, so a bug can only cost an attempt.
        log.exception("Queueing hint failed plugin=%s pod=%s event=%s", plugin, qp.pod.key, reg.event)
        return QueueingHint.QUEUE
