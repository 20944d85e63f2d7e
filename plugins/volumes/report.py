"""Bad storage objects become an Event on the pod that needed them, never a crash."""

from __future__ import annotations

import logging

from netsched.framework import Handle, PodInfo

from .objects import VolumeObjectError

log = logging.getLogger(__name__)

EVENT_REASON = "FailedScheduling"


def report_bad_object(handle: Handle, pod: PodInfo, plugin: str, problem: VolumeObjectError | str) -> None:
    """A Warning event on `pod` naming the object and field at fault (the recorder never raises)."""
    message = f"{plugin}: {problem}"
    log.warning("Bad storage object pod=%s plugin=%s err=%s", pod.key, plugin, problem)
    handle.events.event(pod, "Warning", EVENT_REASON, "Scheduling", message)
