"""Log lines in kube-scheduler's shapes: klog's text, component-base's JSON, -v and --vmodule.

The expected lines were checked against klog (internal/serialize: strconv.Quote for
one-line strings, a `<` ... `>` block per line for multi-line ones, numbers and
booleans bare, `err` right after the message) and component-base/logs/json
(json_test.go / klog_test.go: ts in milliseconds, caller as dir/file:line, msg,
v on info and warning lines, the fields in call order, errors without v and with
err last). Python warnings are lines of the stream too, once per cause: urllib3's
InsecureRequestWarning from real unverified HTTPS requests (insecureSkipVerify).
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import re
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import requests

from netsched import logutil
from netsched.logkv import split_format
from netsched.logutil import JsonFormatter, KlogFormatter, go_quote, parse_vmodule
from netsched.testing.fakeapi import FakeAPIServer


def record(
    fmt: str,
    *args: object,
    level: int = logging.INFO,
    name: str = "netsched.binder",
    path: str = "/src/netsched/binder.py",
    exc: BaseException | None = None,
) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    r = logging.LogRecord(name, level, path, 97, fmt, args, exc_info)
    r.created = 1732245739.1234567
    return r


def json_line(r: logging.LogRecord) -> str:
    return JsonFormatter().format(r)


def text_body(r: logging.LogRecord) -> str:
    """The klog line after its header (`I1122 03:22:19.123456   12345 binder.py:97] `)."""
    return KlogFormatter().format(r).split("] ", 1)[1]


# --- JSON ------------------------------------------------------------------------------------


def test_json_info_line_has_kubes_shape_and_order() -> None:
    r = record("Successfully bound pod to node pod=%s node=%s evaluatedNodes=%d", "default/p0", "n2", 3)
    line = json_line(r)
    assert line == (
        '{"ts":1732245739123.457,"caller":"netsched/binder.py:97","msg":"Successfully bound pod to node",'
        '"v":0,"pod":"default/p0","node":"n2","evaluatedNodes":3}'
    )
    assert json.loads(line)["pod"] == "default/p0"


def test_json_caller_is_folder_and_file() -> None:
    r = record("Scored nodes=%d", 3, path="/site-packages/netsched/plugins/network_traffic/plugin.py")
    assert json.loads(json_line(r))["caller"] == "network_traffic/plugin.py:97"


def test_json_warning_is_an_info_line_at_v0_as_klog_warning() -> None:
    line = json.loads(json_line(record("Lease lost lease=%s", "kube-system/netsched", level=logging.WARNING)))
    assert line["v"] == 0 and "level" not in line


def test_json_error_has_no_v_and_err_last() -> None:
    try:
        raise ValueError("invalid namespace:default")
    except ValueError as e:
        r = record("Wrong namespace ns=%s podnum=%d", "default", 2, level=logging.ERROR, exc=e)
    line = json_line(r)
    obj = json.loads(line)
    assert list(obj) == ["ts", "caller", "msg", "ns", "podnum", "err", "stacktrace"]
    assert obj["err"] == "ValueError: invalid namespace:default"
    assert obj["stacktrace"].startswith("Traceback (most recent call last):")
    assert "v" not in obj


def test_json_error_without_exception_has_no_err() -> None:
    obj = json.loads(json_line(record("Config reload refused path=%s", "/etc/c.yaml", level=logging.ERROR)))
    assert list(obj) == ["ts", "caller", "msg", "path"]


def test_an_err_field_of_the_call_is_kept_and_not_repeated() -> None:
    try:
        raise OSError("connection refused")
    except OSError as e:
        r = record("Watch failed resource=%s err=%s", "pods", e, level=logging.ERROR, exc=e)
    obj = json.loads(json_line(r))
    assert obj["err"] == "connection refused"
    assert list(obj) == ["ts", "caller", "msg", "resource", "err", "stacktrace"]


def test_json_v_is_the_verbosity_that_shows_the_line() -> None:
    assert json.loads(json_line(record("Pod gated pod=%s", "a/b", level=logging.DEBUG)))["v"] == 4
    lib = record("Starting new HTTPS connection", level=logging.DEBUG, name="urllib3.connectionpool")
    assert json.loads(json_line(lib))["v"] == 6
    lib_info = record("Scheduler started", name="apscheduler.scheduler")
    assert json.loads(json_line(lib_info))["v"] == 6
    lib_warning = record("Run time was missed", level=logging.WARNING, name="apscheduler.executors")
    assert json.loads(json_line(lib_warning))["v"] == 0


VALUES = [
    # format, args, JSON value, text value
    ("count=%d", (3,), "3", "=3"),
    ("count=%s", (3,), "3", "=3"),
    ("ratio=%.2f", (0.5,), "0.50", "=0.50"),
    ("ratio=%s", (0.25,), "0.25", "=0.25"),
    ("ok=%s", (True,), "true", "=true"),
    ("holder=%s", (None,), "null", "=<nil>"),
    ("name=%s", ("n1",), '"n1"', '="n1"'),
    ("name=%r", ("n1",), '"n1"', '="n1"'),  # %r asked for quotes: klog's, not Python's
    ('holder="%s"', ("a",), '"a"', '="a"'),  # the quotes a hand-written klog line added
    ('lease="%s/%s"', ("ns", "l"), '"ns/l"', '="ns/l"'),
    ("waited=%.1fs", (2.345,), '"2.3s"', '="2.3s"'),  # a duration is a string, as kube's
    ("err=%s", (ValueError("boom"),), '"boom"', '="boom"'),
    ("err=%s", (TimeoutError(),), '"TimeoutError"', '="TimeoutError"'),
    ("value=%s", (float("nan"),), '"NaN"', "=NaN"),
    ("value=%s", (float("inf"),), '"+Inf"', "=+Inf"),
    ("nodes=%s", (["a", "b"],), '["a", "b"]', "=\"['a', 'b']\""),
    ("mode=fallback", (), '"fallback"', '="fallback"'),
    ("share=%d%%", (40,), '"40%"', '="40%"'),
]


@pytest.mark.parametrize(("fmt", "args", "as_json", "as_text"), VALUES)
def test_values_keep_their_type(fmt: str, args: tuple[object, ...], as_json: str, as_text: str) -> None:
    key = fmt.split("=", 1)[0]
    r = record("Something happened " + fmt, *args)
    assert json_line(r).endswith(f'"{key}":{as_json}}}')
    assert text_body(r) == f'"Something happened" {key}{as_text}'


def test_a_call_that_breaks_the_convention_is_logged_whole() -> None:
    obj = json.loads(json_line(record("%s plugin failed plugin=%s", "Filter", "X")))
    assert obj["msg"] == "Filter plugin failed" and obj["plugin"] == "X"
    obj = json.loads(json_line(record("Odd message %d%% done", 40)))
    assert obj["msg"] == "Odd message 40% done"
    obj = json.loads(json_line(record("Mapping %(a)s", {"a": 1})))
    assert obj["msg"] == "Mapping 1"


def test_non_string_message_is_written_as_text() -> None:
    r = logging.LogRecord("netsched.x", logging.INFO, "/a/x.py", 1, ValueError("as msg"), None, None)
    assert json.loads(JsonFormatter().format(r))["msg"] == "as msg"


# --- text ------------------------------------------------------------------------------------


def test_text_line_is_klogs() -> None:
    line = KlogFormatter().format(record("Successfully bound pod to node pod=%s node=%s", "default/p0", "n2"))
    head, body = line.split("] ", 1)
    local = time.strftime("%m%d %H:%M:%S", time.localtime(1732245739.1234567))
    assert re.fullmatch(rf"I{local}\.123456 +\d+ binder\.py:97", head)
    assert body == '"Successfully bound pod to node" pod="default/p0" node="n2"'


def test_text_error_puts_err_after_the_message_and_the_traceback_in_a_block() -> None:
    try:
        raise KeyError("k")
    except KeyError as e:
        r = record("Binding cycle crashed pod=%s", "d/p", level=logging.ERROR, exc=e)
    line = KlogFormatter().format(r)
    assert line.startswith("E")
    body = line.split("] ", 1)[1]
    first, *rest = body.split("\n")
    assert first == '"Binding cycle crashed" err="KeyError: \'k\'" pod="d/p" stacktrace=<'
    assert rest[0] == "\tTraceback (most recent call last):"
    assert rest[-2] == "\tKeyError: 'k'" and rest[-1] == " >"


def test_text_multiline_value_is_a_block_as_klog_writes_it() -> None:
    body = text_body(record("Config reload refused path=%s errors=%s", "/c", "a: bad\nb: worse"))
    assert body == '"Config reload refused" path="/c" errors=<\n\ta: bad\n\tb: worse\n >'
    # A value ending in a line break gets no extra empty line.
    assert text_body(record("Report text=%s", "one\n")) == '"Report" text=<\n\tone\n >'


def test_text_message_is_always_quoted_even_with_a_line_break() -> None:
    assert text_body(record("Two\nlines")) == '"Two\\nlines"'


# Go's strconv.Quote, the expected outputs as Go prints them.
GO_QUOTES = [
    ("default/p0", '"default/p0"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("tab\there", '"tab\\there"'),
    ("cr\r", '"cr\\r"'),
    ("\x00\x1b\x7f", '"\\x00\\x1b\\x7f"'),
    ("é ü 日本", '"é ü 日本"'),
    ("\u00a0\u2028", '"\\u00a0\\u2028"'),
    ("\U0001f600", '"\U0001f600"'),
    ("\U000e0001", '"\\U000e0001"'),
    ("", '""'),
]


@pytest.mark.parametrize(("value", "quoted"), GO_QUOTES)
def test_go_quote(value: str, quoted: str) -> None:
    assert go_quote(value) == quoted


# --- the convention's splitter -----------------------------------------------------------------


def test_split_format_is_cached_and_reads_every_field() -> None:
    s = split_format('Failed to acquire or renew lease lease="%s/%s" err=%s')
    assert s.msg == "Failed to acquire or renew lease"
    assert [(f.key, f.nargs) for f in s.fields] == [("lease", 2), ("err", 1)]
    assert s.nargs == 3 and not s.problems
    assert split_format('Failed to acquire or renew lease lease="%s/%s" err=%s') is s


# --- setup: -v, --vmodule, thread ids -------------------------------------------------------


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    libraries = {name: logging.getLogger(name).level for name in logutil.LIBRARIES}
    settings = logutil._settings
    with warnings.catch_warnings():  # setup() routes warnings.showwarning: restored here
        yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)
    for name, lib_level in libraries.items():
        logging.getLogger(name).setLevel(lib_level)
    logutil._settings = settings


def _module(tmp_path: Path, name: str) -> ModuleType:
    """A module in its own file (vmodule matches file names) that logs at info and debug."""
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import logging\n"
        f"log = logging.getLogger('netsched.test.{name}')\n"
        "def talk():\n"
        f"    log.info('Info line file=%s', '{name}')\n"
        f"    log.debug('Debug line file=%s', '{name}')\n"
    )
    spec = importlib.util.spec_from_file_location(f"_logtest_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.usefixtures("restore_logging")
def test_verbosity_4_shows_debug_lines(tmp_path: Path) -> None:
    binder = _module(tmp_path, "binder")
    out = io.StringIO()
    logutil.setup(0, "json", out)
    binder.talk()
    assert [(line["msg"], line["v"]) for line in _lines(out)] == [("Info line", 0)]
    out = io.StringIO()
    logutil.setup(4, "json", out)
    binder.talk()
    assert [(line["msg"], line["v"]) for line in _lines(out)] == [("Info line", 0), ("Debug line", 4)]


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("verbosity", [0, 1, 2, 4])
def test_v2_lines_show_from_verbosity_2(verbosity: int) -> None:
    out = io.StringIO()
    logutil.setup(verbosity, "json", out)
    logging.getLogger("netsched.test").log(logutil.V2, "Steady-state line resource=%s", "appgroups")
    want = [("Steady-state line", 2, "appgroups")] if verbosity >= 2 else []
    assert [(line["msg"], line["v"], line["resource"]) for line in _lines(out)] == want
    text = io.StringIO()
    logutil.setup(verbosity, "text", text)
    logging.getLogger("netsched.test").log(logutil.V2, "Steady-state line resource=%s", "appgroups")
    assert [line[0] for line in text.getvalue().splitlines()] == (["I"] if verbosity >= 2 else [])


@pytest.mark.usefixtures("restore_logging")
def test_vmodule_raises_verbosity_for_matching_files_only(tmp_path: Path) -> None:
    binder, queue, reflector = (_module(tmp_path, n) for n in ("binder", "queue", "reflector"))
    out = io.StringIO()
    logutil.setup(0, "json", out, vmodule=parse_vmodule("bind*=4,reflector=2"))
    for m in (binder, queue, reflector):
        m.talk()
    assert [(line["msg"], line["file"]) for line in _lines(out)] == [
        ("Info line", "binder"),
        ("Debug line", "binder"),
        ("Info line", "queue"),
        ("Info line", "reflector"),
    ]
    # The libraries' debug lines stay off: no file asked for 6.
    assert logging.getLogger("urllib3").level == logging.WARNING


@pytest.mark.usefixtures("restore_logging")
def test_vmodule_applies_to_text_too_and_never_lowers_v(tmp_path: Path) -> None:
    binder = _module(tmp_path, "binder")
    out = io.StringIO()
    logutil.setup(4, "text", out, vmodule=parse_vmodule("binder=1"))
    binder.talk()
    assert [line.split("] ")[1] for line in out.getvalue().splitlines()] == [
        '"Info line" file="binder"',
        '"Debug line" file="binder"',
    ]


@pytest.mark.usefixtures("restore_logging")
def test_text_column_after_the_time_is_the_thread_id() -> None:
    out = io.StringIO()
    logutil.setup(0, "text", out)
    logging.getLogger("netsched.test").info("From the main thread")
    seen: list[int] = []

    def other() -> None:
        seen.append(threading.get_native_id())
        logging.getLogger("netsched.test").info("From another thread")

    t = threading.Thread(target=other)
    t.start()
    t.join()
    ids = [int(line.split()[2]) for line in out.getvalue().splitlines()]
    assert ids == [threading.get_native_id(), seen[0]]


def test_setup_refuses_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown logging format 'xml'"):
        logutil.setup(0, "xml")


VMODULES = [
    ("binder=4", [("binder", 4)]),
    ("binder=4,queue*=2,", [("binder", 4), ("queue*", 2)]),
    ("binder=0,queue=3", [("queue", 3)]),  # 0 is dropped, as klog does
    ("", []),
]


@pytest.mark.parametrize(("text", "patterns"), VMODULES)
def test_parse_vmodule(text: str, patterns: list[tuple[str, int]]) -> None:
    assert [(p.pattern, p.level) for p in parse_vmodule(text)] == patterns


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("binder", "expect comma-separated list of pattern=N"),
        ("=3", "expect comma-separated list of pattern=N"),
        ("binder=", "expect comma-separated list of pattern=N"),
        ("a=1=2", "expect comma-separated list of pattern=N"),
        ("binder=x", "N must be an integer"),
        ("binder=-1", "negative level"),
    ],
)
def test_parse_vmodule_errors(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_vmodule(text)


# --- Python warnings: in the stream, once per cause -------------------------------------------


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_unverified_requests_log_one_line_per_host(fmt: str, capfd: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    logutil.setup(0, fmt, out)
    with FakeAPIServer(tls=True) as a, FakeAPIServer(tls=True) as b:
        a_host = a.url.replace("https://", "").rsplit(":", 1)[0]
        for server in (a, a, a, b, b):
            with requests.Session() as s:
                assert s.get(f"{server.url}/version", verify=False, timeout=10).status_code == 200
    lines = [line for line in out.getvalue().splitlines() if "Python warning" in line]
    # Both servers listen on the same host: the cause (category, text, place) is the same.
    assert len(lines) == 1, lines
    assert "InsecureRequestWarning" in lines[0] and a_host in lines[0]
    if fmt == "json":
        line = json.loads(lines[0])
        assert line["msg"] == "Python warning; this cause is logged once"
        assert line["category"] == "InsecureRequestWarning" and line["v"] == 0
        assert line["caller"].startswith("urllib3/")  # where the warning was raised
    else:
        assert lines[0].startswith("W") and '"Python warning; this cause is logged once"' in lines[0]
    assert "Warning" not in capfd.readouterr().err  # nothing raw on stderr


@pytest.mark.usefixtures("restore_logging")
def test_each_cause_once() -> None:
    out = io.StringIO()
    logutil.setup(0, "json", out)
    warnings.simplefilter("always")  # as urllib3 sets it for its security warnings
    for text in ("first", "second", "first", "second", "first"):
        warnings.warn(text, UserWarning, stacklevel=1)
    assert [json.loads(line)["warning"] for line in out.getvalue().splitlines()] == ["first", "second"]
