"""klog-style logging: a constant message plus key=value pairs, -v levels, optional JSON.

    I1122 03:22:19.123456   12345 scheduler.py:88] Successfully bound pod pod="ns/p" node="n1"

Messages are written as `log.info("Bound pod pod=%s node=%s", ...)`; the
format is chosen once at start-up by the CLI (text or json).  Verbosity -v N
maps to Python levels: N >= 4 enables DEBUG; `v(n)` lets hot paths skip
building messages nobody will see.
"""

from __future__ import annotations

import json
import logging
import sys
import time

_verbosity = 0


def v(level: int) -> bool:
    """True when -v is at least level (klog's V(level).Enabled())."""
    return _verbosity >= level


class KlogFormatter(logging.Formatter):
    _letters = {
        logging.DEBUG: "I",
        logging.INFO: "I",
        logging.WARNING: "W",
        logging.ERROR: "E",
        logging.CRITICAL: "F",
    }

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        head = (
            f"{self._letters.get(record.levelno, 'I')}{time.strftime('%m%d %H:%M:%S', t)}.{micros:06d}"
            f" {(record.thread or 0) % 10_000_000:7d} {record.filename}:{record.lineno}]"
        )
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        return f"{head} {msg}"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": round(record.created, 6),
            "caller": f"{record.filename}:{record.lineno}",
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
            "logger": record.name,
        }
        if record.exc_info:
            out["err"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"))


def setup(verbosity: int = 0, fmt: str = "text", stream: object = None) -> None:
    """Configure the root logger once (CLI start-up)."""
    global _verbosity
    _verbosity = verbosity
    handler = logging.StreamHandler(stream or sys.stderr)  # type: ignore[arg-type]
    handler.setFormatter(JsonFormatter() if fmt == "json" else KlogFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    # Third-party chatter stays at WARNING unless asked for with -v=6 or more.
    noisy = logging.WARNING if verbosity < 6 else logging.DEBUG
    for name in ("urllib3", "kubernetes", "apscheduler", "tzlocal"):
        logging.getLogger(name).setLevel(noisy)
