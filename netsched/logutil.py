"""klog-style logging: kube-scheduler's text and JSON line shapes, -v levels and --vmodule.

Log calls follow one convention (netsched.logkv): a constant message, then
`key=%s` fields, `log.info("Successfully bound pod to node pod=%s node=%s", ...)`.
The formatters here turn each call into the line kube-scheduler would write:

text (klog's header, message and values quoted by klog's rules; the column after
the time is the thread id, where klog has the process id):

    I1122 03:22:19.123456   12345 binder.py:97] "Successfully bound pod to node" pod="default/p0" node="n2"

json (component-base/logs/json: ts in milliseconds since the epoch, caller as
dir/file:line, v on every line but errors, one field per key, err last on errors):

    {"ts":1732245739123.457,"caller":"netsched/binder.py:97","msg":"Successfully bound pod to node","v":0,"pod":"default/p0","node":"n2"}

Verbosity: a line's `v` is the -v at which it shows.  netsched's info, warning
and error lines are v=0 (as klog's Warning, JSON has no level field: errors are
the lines without `v`), its V2 lines (`log.log(V2, ...)`, klog's V(2).InfoS:
steady-state information an operator may want, such as an optional API the
cluster does not serve) v=2, its debug lines v=4 (kube's "debug" level); the chatty
libraries (urllib3, kubernetes, apscheduler, tzlocal) show everything from v=6,
only their warnings below.  Python warnings are log lines too, once per cause
(WarningsToLog).  --vmodule raises the verbosity of matching files
(klog's pattern=N list, matched against the file name without `.py`), in both
formats (kube accepts it for text only).  A Python exception attached to a
record is written as `err` (when the call has no err field of its own) plus a
`stacktrace` field.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import math
import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from netsched.logkv import Number, fields_of

log = logging.getLogger(__name__)

DEBUG_V = 4  # the -v at which netsched's debug lines show
V2_V = 2  # the -v at which netsched's V2 lines show
# The logging level of a klog V(2) info line: between DEBUG and INFO, so -v 2 shows it, -v 0 not.
V2 = logging.INFO - 5
logging.addLevelName(V2, "V2")
LIBRARY_V = 6  # the -v at which the chatty libraries' info and debug lines show
LIBRARIES = ("urllib3", "kubernetes", "apscheduler", "tzlocal")
THREAD_ID = "netsched_thread_id"  # the record attribute _Gate sets: the emitting thread's OS id


@dataclass(frozen=True, slots=True)
class ModulePattern:
    """One item of --vmodule: files whose name (without .py) matches pattern log at level."""

    pattern: str
    level: int

    def matches(self, filename: str) -> bool:
        return fnmatch.fnmatchcase(filename, self.pattern)


def parse_vmodule(text: str) -> tuple[ModulePattern, ...]:
    """klog's --vmodule syntax, "pattern=N,...": empty items skipped, N=0 dropped (no effect)."""
    out = []
    for item in text.split(","):
        if not item:
            continue
        parts = item.split("=")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"syntax error in {item!r}: expect comma-separated list of pattern=N")
        try:
            level = int(parts[1])
        except ValueError:
            raise ValueError(f"syntax error in {item!r}: N must be an integer") from None
        if level < 0:
            raise ValueError(f"negative level in {item!r}")
        if level:
            out.append(ModulePattern(parts[0], level))
    return tuple(out)


class _Verbosity:
    """The -v and --vmodule settings; answers "does this line show?" per file (cached)."""

    def __init__(self, level: int = 0, vmodule: Sequence[ModulePattern] = ()) -> None:
        self.level = level
        self.vmodule = tuple(vmodule)
        self._by_file: dict[str, int] = {}

    @property
    def highest(self) -> int:
        return max([self.level, *(p.level for p in self.vmodule)])

    def for_file(self, path: str) -> int:
        known = self._by_file.get(path)
        if known is not None:
            return known
        name = os.path.basename(path)
        name = name[: -len(".py")] if name.endswith(".py") else name
        # As klog: the first matching pattern counts, and -v is a floor vmodule only raises.
        level = next((p.level for p in self.vmodule if p.matches(name)), 0)
        self._by_file[path] = level = max(level, self.level)
        return level


_settings = _Verbosity()


def record_v(record: logging.LogRecord) -> int:
    """The -v at which a record shows (see the module docstring)."""
    if record.name.partition(".")[0] in LIBRARIES:
        return 0 if record.levelno >= logging.WARNING else LIBRARY_V
    if record.levelno >= logging.INFO:
        return 0
    return V2_V if record.levelno >= V2 else DEBUG_V


class _Gate(logging.Filter):
    """On the handler: stamps the emitting thread's id and applies --vmodule per file."""

    def __init__(self, settings: _Verbosity) -> None:
        super().__init__()
        self.settings = settings

    def filter(self, record: logging.LogRecord) -> bool:
        setattr(record, THREAD_ID, threading.get_native_id())
        if not self.settings.vmodule:
            return True  # the loggers' levels already say it all
        return record_v(record) <= self.settings.for_file(record.pathname)


# --- values, written as klog and zap write them ----------------------------------------------

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(s: str) -> str:
    """Go's strconv.Quote: double quotes; `"` and `\\` escaped; non-printable characters as
    \\n, \\t, ..., \\xNN, \\uNNNN or \\UNNNNNNNN; printable Unicode kept."""
    if s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def klog_string(s: str, quote: bool = True) -> str:
    """`=value` for a string as klog writes it: quoted on one line, or a <...> block per line."""
    if "\n" not in s:
        return "=" + (go_quote(s) if quote else s)
    lines = s.split("\n")
    ended = lines[-1] == ""
    body = "".join(f"\t{line}\n" for line in (lines[:-1] if ended else lines))
    return "=<\n" + body + " >"


def _float_text(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    return repr(f)


def klog_value(value: Any) -> str:
    """`=value` for a field value: strings (and anything else) quoted, numbers and booleans not."""
    if isinstance(value, bool):
        return "=true" if value else "=false"
    if value is None:
        return "=<nil>"
    if isinstance(value, int):
        return f"={value}"
    if isinstance(value, float):
        return "=" + _float_text(value)
    if isinstance(value, Number):
        return "=" + value.text
    return klog_string(value if isinstance(value, str) else str(value))


def json_value(value: Any) -> str:
    """A field value in JSON: numbers, booleans and null as such; NaN/Inf as strings (as zap)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else json.dumps(_float_text(value))
    if isinstance(value, Number):
        return value.text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:
        return json.dumps(str(value), ensure_ascii=False)


# --- the two formats ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Line:
    msg: str
    fields: list[tuple[str, Any]]
    err: str | None  # from an attached exception, when the call has no err field
    stacktrace: str | None


def _line(record: logging.LogRecord, formatter: logging.Formatter) -> _Line:
    split = fields_of(record.msg, record.args)
    msg, fields = split if split is not None else (record.getMessage(), [])
    err = stack = None
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        if not any(key == "err" for key, _ in fields):
            err = "".join(
                traceback.format_exception_only(type(exc), exc)
            ).strip()  # names the type: never empty
        stack = formatter.formatException(record.exc_info)
    if record.stack_info:
        stack = (stack + "\n" if stack else "") + formatter.formatStack(record.stack_info)
    return _Line(msg, fields, err, stack)


class KlogFormatter(logging.Formatter):
    """klog's text format: Lmmdd hh:mm:ss.uuuuuu threadid file:line] "msg" key=value ..."""

    _letters = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E"}

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        letter = self._letters.get(record.levelno) or ("F" if record.levelno > logging.ERROR else "I")
        tid = getattr(record, THREAD_ID, None) or threading.get_native_id()
        line = _line(record, self)
        out = [
            f"{letter}{time.strftime('%m%d %H:%M:%S', t)}.{micros:06d} {tid:7d} {record.filename}:{record.lineno}] ",
            go_quote(line.msg),
        ]
        if line.err is not None:
            out.append(" err" + klog_string(line.err))
        out += [f" {key}{klog_value(value)}" for key, value in line.fields]
        if line.stacktrace is not None:
            out.append(" stacktrace" + klog_string(line.stacktrace + "\n"))
        return "".join(out)


class JsonFormatter(logging.Formatter):
    """component-base's JSON format: ts, caller, msg, v (not on errors), fields, err."""

    def format(self, record: logging.LogRecord) -> str:
        line = _line(record, self)
        folder = os.path.basename(os.path.dirname(record.pathname))
        caller = (
            f"{folder}/{record.filename}:{record.lineno}" if folder else f"{record.filename}:{record.lineno}"
        )
        out = [
            f'{{"ts":{round(record.created * 1000, 3)!r}',
            f'"caller":{json.dumps(caller, ensure_ascii=False)}',
            f'"msg":{json.dumps(line.msg, ensure_ascii=False)}',
        ]
        if record.levelno < logging.ERROR:
            out.append(f'"v":{record_v(record)}')
        out += [f"{json.dumps(key)}:{json_value(value)}" for key, value in line.fields]
        if line.err is not None:
            out.append(f'"err":{json.dumps(line.err, ensure_ascii=False)}')
        if line.stacktrace is not None:
            out.append(f'"stacktrace":{json.dumps(line.stacktrace, ensure_ascii=False)}')
        return ",".join(out) + "}"


FORMATS = ("text", "json")
WARNINGS_LOGGER = "py.warnings"  # logging.captureWarnings' logger name, kept for familiarity


class WarningsToLog:
    """Python warnings as log lines in the configured format, once per cause.

    As logging.captureWarnings(True) does, warnings.showwarning goes to the "py.warnings"
    logger instead of raw text on stderr (two lines outside a JSON stream); unlike it, a line
    is a klog one (constant message, category and text as fields, the caller being where the
    warning was raised) and a cause shows once: urllib3 makes its InsecureRequestWarning
    "always" shown, which with insecureSkipVerify would be a line per Prometheus query. A
    cause is the category, the text and the place; the text names the host, so each host
    unverified shows once. Past MAX_CAUSES distinct causes the memory starts again.
    """

    MAX_CAUSES = 1024

    def __init__(self) -> None:
        self._seen: set[tuple[str, str, str, int]] = set()
        self._lock = threading.Lock()
        self._log = logging.getLogger(WARNINGS_LOGGER)

    def show(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        """warnings.showwarning's signature."""
        cause = (category.__name__, str(message), filename, lineno)
        with self._lock:
            if cause in self._seen:
                return
            if len(self._seen) >= self.MAX_CAUSES:
                self._seen.clear()
            self._seen.add(cause)
        msg = "Python warning; this cause is logged once category=%s warning=%s"
        record = self._log.makeRecord(
            self._log.name, logging.WARNING, filename, lineno, msg, (category.__name__, str(message)), None
        )
        self._log.handle(record)


def setup(
    verbosity: int = 0,
    fmt: str = "text",
    stream: TextIO | None = None,
    *,
    vmodule: Sequence[ModulePattern] = (),
) -> None:
    """Configure the root logger once (CLI start-up)."""
    global _settings
    if fmt not in FORMATS:
        raise ValueError(f"unknown logging format {fmt!r}: expected one of {', '.join(FORMATS)}")
    _settings = _Verbosity(verbosity, vmodule)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KlogFormatter())
    handler.addFilter(_Gate(_settings))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    # Records are made only where some file may show them; _Gate then applies --vmodule per file.
    highest = _settings.highest
    root.setLevel(logging.DEBUG if highest >= DEBUG_V else V2 if highest >= V2_V else logging.INFO)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.DEBUG if highest >= LIBRARY_V else logging.WARNING)
    warnings.showwarning = WarningsToLog().show
