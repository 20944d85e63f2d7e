"""SchedulingGates: keep pods with spec.schedulingGates out of the active queue.

A gate is removed by whoever added it (a quota controller, a provisioner).
Until then the pod cannot be scheduled anywhere, so it waits gated instead of
burning scheduling cycles; the message lists the gates like kube does.
"""

from __future__ import annotations

from netsched.framework import PodInfo, PreEnqueuePlugin, Status, names


class SchedulingGates(PreEnqueuePlugin[None]):
    name = names.SCHEDULING_GATES

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.scheduling_gates:
            return Status.success()
        # Go's %v of a []string: space separated inside brackets.
        gates = " ".join(pod.scheduling_gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{gates}]", plugin=self.name)
