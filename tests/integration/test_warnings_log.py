"""Python warnings in the log stream, once per cause: urllib3's InsecureRequestWarning on real
unverified HTTPS requests (what `insecureSkipVerify: true` makes on every Prometheus query)."""

from __future__ import annotations

import io
import json
import logging
import warnings
from collections.abc import Iterator

import pytest
import requests

from netsched import logutil
from netsched.testing.fakeapi import FakeAPIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    libraries = {name: logging.getLogger(name).level for name in logutil.LIBRARIES}
    settings = logutil._settings
    with warnings.catch_warnings():  # restores showwarning and the filters too
        yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)
    for name, lib_level in libraries.items():
        logging.getLogger(name).setLevel(lib_level)
    logutil._settings = settings


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
