"""The PodGroup status writer: writes off the caller's thread, and leaves no thread behind when idle."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import plugins.coscheduling.status as status_mod
from netsched.testing.framework import build_framework
from netsched.testing.handle import RecordingAPI
from plugins.coscheduling.groups import PodGroup
from plugins.coscheduling.status import StatusWriter


def test_idle_writer_thread_ends_and_a_new_mark_starts_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status_mod, "IDLE_EXIT_SECONDS", 0.05)
    api = RecordingAPI()
    fwk = build_framework([], api=api)
    computed: list[str] = []
    written = threading.Event()

    def compute(group: str) -> tuple[PodGroup, dict[str, Any]] | None:
        computed.append(group)
        written.set()
        return None  # the group is gone: nothing to write

    writer = StatusWriter(fwk, compute)
    writer.mark("default/a")
    assert written.wait(5)
    first = writer._thread
    assert first is not None
    first.join(5)
    assert not first.is_alive() and writer._thread is None
    written.clear()
    writer.mark("default/b")
    assert written.wait(5) and computed == ["default/a", "default/b"]
