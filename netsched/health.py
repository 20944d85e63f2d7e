"""What /livez and /healthz check in a running scheduler, each a reason to restart it.

The liveness probe restarts a replica whose checks fail, so a check fails only
when a restart would help (kube-scheduler's: the leader-election watchdog):
- leaderElection (with leader election on): the elector's own watchdog
  (LeaderElector.check): a leader that has not renewed, or a standby that has
  not tried, for leaseDuration + 20 s.
- schedulingLoop: while this replica schedules and pods wait for the loop
  (in activeQ, or popped and in their scheduling cycle), the loop must come
  round within LOOP_STALL seconds; a loop stuck in a cycle (a plugin that
  never returns) is unhealthy, an idle loop with nothing to do never is, nor
  is a standby's paused one.
- informers: a reflector whose thread has ended no longer watches, and the
  cache goes stale for good. A reflector retrying through an API outage is
  still watching (a restart would not bring the API server back).
The times come from the app's injected clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netsched.observability.health import PING, Check
from netsched.queue import ACTIVE

if TYPE_CHECKING:
    from netsched.app import SchedulerApp
    from netsched.leaderelection import LeaderElector

# Seconds a scheduling loop with pods to schedule may go without coming round: a cycle takes
# milliseconds (the binding cycle runs elsewhere), so a minute is a wedged plugin or lock.
LOOP_STALL = 60.0


class ProcessHealth:
    """The liveness checks of one SchedulerApp; `elector` is set once the election starts."""

    def __init__(self, app: SchedulerApp) -> None:
        self._app = app
        self.elector: LeaderElector | None = None

    def checks(self) -> list[Check]:
        """kube-scheduler's order: ping, then leaderElection when enabled; then ours."""
        checks = [PING]
        if self._app.cfg.leader_election.leader_elect:
            checks.append(Check("leaderElection", self.leader_election))
        checks.append(Check("schedulingLoop", self.scheduling_loop))
        checks.append(Check("informers", self.informers))
        return checks

    def leader_election(self) -> str | None:
        # Before the election starts there is nothing to judge (client-go's adaptor without an elector).
        return None if self.elector is None else self.elector.check()

    def scheduling_loop(self) -> str | None:
        app = self._app
        if not app.leading:
            return None  # a standby's loop is paused on purpose
        waiting = app.queue.counts()[ACTIVE]
        in_cycle = len(app.queue.in_flight())
        if waiting + in_cycle == 0:
            return None
        since = app.clock.now() - app.scheduler.heartbeat
        if since <= LOOP_STALL:
            return None
        return (
            f"scheduling loop has not come round for {since:.0f}s (limit {LOOP_STALL:.0f}s) "
            f"with pods to schedule: {waiting} in activeQ, {in_cycle} in a scheduling cycle"
        )

    def informers(self) -> str | None:
        if self._app.stop_event.is_set():
            return None  # shutting down: the reflectors stop on purpose
        stopped = [r.name for r in self._app.reflectors if not r.running]
        return f"informers stopped watching: {', '.join(stopped)}" if stopped else None
