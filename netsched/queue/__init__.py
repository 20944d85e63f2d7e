"""The scheduling queue shared by all profiles, and the nominator.

    queue = SchedulingQueue(queue_sort, pre_enqueue, clock)  # pre_enqueue: the pod's profile's plugins
    queue.add(pod)                                  # informer: a new pending pod
    qp = queue.pop()                                # scheduling loop
    queue.add_unschedulable_if_not_present(qp)      # after a failed attempt (error=True for an Error)
    queue.done(qp.pod.uid)                          # after the attempt, failed or bound
    queue.move_all_to_active_or_backoff(event, old=o, new=n)  # a ClusterEvent: moves pods its hints select
    queue.run_flush_loop(stop_event)                # in a thread of its own

See scheduling_queue.py for the three sub-queues and how pods move between them.
"""

from netsched.queue.hints import HintMap
from netsched.queue.nominator import Nominator
from netsched.queue.policy import MetricsHook, PendingGauge, backoff_duration, pod_changed
from netsched.queue.scheduling_queue import (
    ACTIVE,
    BACKOFF,
    BACKOFF_FLUSH_INTERVAL,
    DEFAULT_INITIAL_BACKOFF,
    DEFAULT_MAX_BACKOFF,
    DEFAULT_MAX_UNSCHEDULABLE_SECONDS,
    GATED,
    QUEUE_NAMES,
    UNSCHEDULABLE,
    UNSCHEDULABLE_FLUSH_INTERVAL,
    PreEnqueueFn,
    SchedulingQueue,
)

__all__ = [
    "ACTIVE",
    "BACKOFF",
    "BACKOFF_FLUSH_INTERVAL",
    "DEFAULT_INITIAL_BACKOFF",
    "DEFAULT_MAX_BACKOFF",
    "DEFAULT_MAX_UNSCHEDULABLE_SECONDS",
    "GATED",
    "QUEUE_NAMES",
    "UNSCHEDULABLE",
    "UNSCHEDULABLE_FLUSH_INTERVAL",
    "HintMap",
    "MetricsHook",
    "Nominator",
    "PendingGauge",
    "PreEnqueueFn",
    "SchedulingQueue",
    "backoff_duration",
    "pod_changed",
]
