"""A one-line progress bar on stderr for long simulations (no dependency).

Shown only when stderr is a terminal (or when asked with --progress), so
piped output and test logs stay clean.  Redraws at most ten times a second.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        filled = self.width * done // max(1, total)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} pods")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def show_progress(forced: bool, stream: TextIO | None = None) -> bool:
    """--progress, or stderr is a terminal."""
    s = stream if stream is not None else sys.stderr
    return forced or bool(getattr(s, "isatty", lambda: False)())
