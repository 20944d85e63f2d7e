"""The EventBroadcaster: the queues and writer threads every profile's KubeEventRecorder shares.

`event()` puts an occurrence on a bounded in-memory queue; `workers` writer
threads (one by default) drain it, each owning the events of a slice of pods
(events about one pod stay in order). A binding thread (`write_from_this_thread`,
which the binding pool's threads call) instead sends its event itself when the
writer owes nothing of that pod and has a batch slot and a rate-limit token
free (Writer.send_now): the Scheduled event leaves the process with the thread
that bound the pod, without waking the writer, which reads the reply later.
Events are dropped only when the queue bound is hit (counted, `on_drop`, and
logged once) or at shutdown.

Shutdown: `stop(timeout)` (SchedulerApp.shutdown, on SIGTERM) writes every
queued event and pending series count within `timeout`, retries included;
what is still unwritten then is dropped and counted (reason "shutdown"),
including what a writer stuck in a request still holds (counted once: when
that request returns, the writer drops nothing again).

SIGKILL (or an OOM kill) loses what the process holds unwritten (`unwritten`),
as it does for kube-scheduler's broadcaster: the queue, and what a writer has
taken and not sent; and creates the API server has not read yet can go with
the killed process's connections, which the kernel resets. Scheduled events
are never aggregated; a repeat of FailedScheduling counts on its series and is
patched within series_interval, so a kill loses at most that count. An event
is sent as soon as its binding thread has it, or else as soon as the writer
wakes: the writer keeps up to writer.IN_FLIGHT batches out and does not wait
for one's replies before sending the next, so the loss is the binding rate
times the few milliseconds of that path (plus any client-side rate-limit wait
once events outrun clientConnection's burst).
benchmarks/bench_event_outage --scenario kill (leader SIGKILLed twice, 500
pods, qps 500, on a shared 2-core machine) measures it: 2-6 events missing in
most runs (25-29 before the writer kept batches in flight and the binding
threads sent their own; kube-scheduler: 0-1), and about a hundred in the odd
run where the machine stalls (both before and after); benchmarks/README.md
section 12.
A binding whose reply the killed process never read has no event either: the
pod is bound and no process knows it has to report it (at most `parallelism`
per kill, as for kube-scheduler).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Unpack

from netsched.kube.client import KubeClient
from netsched.kube.events.recorder import KubeEventRecorder, Occurrence
from netsched.kube.events.sink import LANES, EventSink, KubeEventSink
from netsched.kube.events.writer import IN_FLIGHT, STOP, Delivery, DeliveryOptions, DirectWrite, Flush, Writer

log = logging.getLogger(__name__)

# One writer: each wake-up of a writer thread costs as much CPU as the request it sends, so one
# thread that takes what is queued in batches (pipelined over LANES connections, so the API
# server works on them in parallel) beats many (benchmarks/bench_e2e: 0.17 vs 0.30 ms of CPU per
# event with 8 writers) and still keeps up with bursts.
DEFAULT_WORKERS = 1
POOL_SIZE = DEFAULT_WORKERS * IN_FLIGHT * LANES  # connections the events client needs (app.py)


class EventBroadcaster(Delivery):
    """The queue and writer threads shared by every profile's KubeEventRecorder.

    `queue_size` bounds the events waiting in memory (all writers together);
    `max_series` the series remembered for de-duplication (netsched.kube.events.series).
    The other keyword arguments are Delivery's (DeliveryOptions).
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        queue_size: int = 1000,
        workers: int = DEFAULT_WORKERS,
        max_series: int = 4096,
        **delivery: Unpack[DeliveryOptions],
    ) -> None:
        super().__init__(sink, **delivery)
        self._stopped = False
        self._direct = threading.local()  # .on: this thread may write events itself
        n = max(1, workers)
        per_queue = max(1, queue_size // n)
        per_series = max(1, max_series // n)
        self._writers = [Writer(self, i, per_queue, per_series) for i in range(n)]
        for w in self._writers:
            w.thread.start()

    def new_recorder(self, scheduler_name: str) -> KubeEventRecorder:
        return KubeEventRecorder(self, scheduler_name)

    @property
    def pending(self) -> int:
        """Events (and markers) queued and not yet taken by a writer."""
        return sum(w.queue.qsize() for w in self._writers)

    @property
    def unwritten(self) -> int:
        """Events held in memory: queued (with markers), or taken by a writer and not yet written,
        failed or dropped (a half-written batch counts only its rest): what a SIGKILL at this
        moment would lose (see the module docstring)."""
        return sum(w.queue.qsize() + w.in_flight for w in self._writers)

    def submit(self, occ: Occurrence) -> None:
        if self._stopped:
            self._drop("stopped")
            return
        # One writer per pod keeps a pod's events (and its series) in order.
        writer = self._writers[hash(occ.pod) % len(self._writers)]
        if getattr(self._direct, "on", False) and writer.send_now(occ):
            return
        try:
            writer.queue.put_nowait(occ, key=occ.pod)
        except queue.Full:
            self._drop("full")

    def write_from_this_thread(self) -> None:
        """Let the calling thread create its events itself when the writer owes nothing of their
        pod (Writer.send_now): for the binding threads, whose Scheduled event then leaves the
        process with the thread that bound the pod, without a hand-over. Never the scheduling
        thread: it makes no request."""
        self._direct.on = True

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far (and pending series counts) is written."""
        if self._stopped or not any(w.thread.is_alive() for w in self._writers):
            return all(w.queue.empty() for w in self._writers)
        deadline = time.monotonic() + timeout
        marker = Flush(len(self._writers))
        for w in self._writers:
            w.queue.put_nowait(marker, bounded=False)
        return marker.done.wait(max(0.0, deadline - time.monotonic()))

    def stop(self, timeout: float = 5.0) -> bool:
        """Write what is queued (within `timeout`, retries included), then end the writers.

        Returns True when everything was written; what is left at the deadline is dropped
        and counted (reason "shutdown").
        """
        if self._stopped:
            return True
        self._stopped = True
        deadline = time.monotonic() + timeout
        for w in self._writers:
            w.queue.put_nowait(STOP, bounded=False)
        for w in self._writers:
            w.thread.join(max(0.0, deadline - time.monotonic()))
        if not any(w.thread.is_alive() for w in self._writers):
            return True
        # Out of time: writers stop retrying and count what is left as dropped.
        before = self.dropped
        self._abandon.set()
        for w in self._writers:
            w.thread.join(1.0)
        for w in self._writers:
            if w.thread.is_alive():
                self._write_off(w)
        log.warning(
            "Events still unwritten at shutdown were dropped dropped=%d timeout=%.1fs",
            self.dropped - before,
            timeout,
        )
        return False

    def _write_off(self, w: Writer) -> None:
        """Count as dropped what a writer still stuck in a request (up to the sink's timeout) holds,
        so the shutdown log and metric say what is lost; the process is about to exit."""
        for _ in range(w.write_off()):
            self._drop("shutdown")
        for item in w.queue.take(w.queue.qsize()):
            if isinstance(item, Occurrence | DirectWrite):  # a direct one: sent, its reply never read
                self._drop("shutdown")


def new_event_broadcaster(client: KubeClient, **kwargs: Any) -> EventBroadcaster:
    """An EventBroadcaster writing through `client` (kwargs as for EventBroadcaster).

    Give it a client of its own (`derived_client`), as app.py does, so events and
    bindings never wait for each other's rate-limit tokens.
    """
    return EventBroadcaster(KubeEventSink(client), **kwargs)
