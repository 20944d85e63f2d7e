"""On-demand CPU profile of the running scheduler: /debug/pprof/profile?seconds=N.

kube-scheduler's --profiling serves Go's pprof. Python has no equivalent that
covers every thread of a live process, so this samples all threads' stacks
(sys._current_frames) every 10 ms for N seconds and answers with "folded"
stacks, one line per distinct stack with its sample count, the input format of
flamegraph.pl, speedscope and inferno:

    MainThread;serve (app.py:412);wait (threading.py:629) 512
    scheduling-loop;run (scheduler.py:95);schedule_one (scheduler.py:120);... 37

Only served when enableProfiling (--profiling) is on, and behind authorization
like every /debug/* path. One profile at a time: a second request gets 409.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from types import FrameType

DEFAULT_SECONDS = 30  # pprof's default
MAX_SECONDS = 300
INTERVAL = 0.01


class Profiler:
    def __init__(
        self, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._sleep = sleep
        self._clock = clock
        self._busy = threading.Lock()

    def endpoint(self, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        raw = (query.get("seconds") or [str(DEFAULT_SECONDS)])[0]
        try:
            seconds = float(raw)
        except ValueError:
            return 400, "text/plain", f"seconds: expected a number, got {raw!r}\n".encode()
        if not 0 < seconds <= MAX_SECONDS:
            return 400, "text/plain", f"seconds: must be in (0, {MAX_SECONDS}]\n".encode()
        if not self._busy.acquire(blocking=False):
            return 409, "text/plain", b"a profile is already being taken\n"
        try:
            stacks = self.sample(seconds)
        finally:
            self._busy.release()
        return 200, "text/plain; charset=utf-8", folded(stacks).encode()

    def sample(self, seconds: float) -> Counter[str]:
        """Folded stack -> samples, for every thread but this one."""
        me = threading.get_ident()
        names = {t.ident: t.name for t in threading.enumerate()}
        counts: Counter[str] = Counter()
        deadline = self._clock() + seconds
        while True:
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    counts[_fold(names.get(ident, str(ident)), frame)] += 1
            if self._clock() >= deadline:
                return counts
            self._sleep(INTERVAL)


def folded(stacks: Counter[str]) -> str:
    return "".join(f"{stack} {n}\n" for stack, n in stacks.most_common())


def _fold(thread: str, frame: FrameType | None) -> str:
    parts: list[str] = []
    while frame is not None:
        code = frame.f_code
        parts.append(f"{code.co_name} ({code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})")
        frame = frame.f_back
    parts.append(thread)
    return ";".join(reversed(parts))
