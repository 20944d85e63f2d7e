"""PrioritySort: the default QueueSort, highest priority first, then first come first served.

All profiles share one scheduling queue, so this ordering decides which pod
gets the next scheduling cycle.  Ties on spec.priority go to the pod that
entered the active queue earlier (QueuedPodInfo.timestamp), as in kube.
"""

from __future__ import annotations

from netsched.framework import QueuedPodInfo, QueueSortPlugin, names


class PrioritySort(QueueSortPlugin[None]):
    name = names.PRIORITY_SORT

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, qp: QueuedPodInfo) -> tuple[int, float]:
        # Ascending tuple order equals less(): higher priority sorts first.
        return (-qp.pod.priority, qp.timestamp)
