"""Handle.debug_page: the one way a plugin publishes a page under /debug/ (netsched.framework.debug_pages)."""

from __future__ import annotations

import json

import pytest

from netsched.framework.debug_pages import DebugPageError, DebugPages


def test_a_page_answers_json_by_default_and_text_on_request_per_profile() -> None:
    pages = DebugPages()
    pages.publish("/debug/thing", "a", lambda: {"n": 1}, lambda d: f"n is {d['n']}")
    pages.publish("/debug/thing", "b", lambda: {"n": 2})  # no text: indented JSON
    assert list(pages) == ["/debug/thing"]
    status, ctype, body = pages["/debug/thing"]({})
    assert (status, ctype) == (200, "application/json")
    assert json.loads(body) == {"profiles": {"a": {"n": 1}, "b": {"n": 2}}}
    status, ctype, body = pages["/debug/thing"]({"format": ["text"]})
    assert (status, ctype) == (200, "text/plain; charset=utf-8")
    assert body.decode() == '== profile a\nn is 1\n\n== profile b\n{\n  "n": 2\n}\n'
    assert json.loads(pages.answer("/debug/thing", {"profile": ["b"]})[2]) == {"profiles": {"b": {"n": 2}}}
    status, _, body = pages.answer("/debug/thing", {"profile": ["c"]})
    assert status == 404 and b"known: a, b" in body
    with pytest.raises(KeyError):
        pages["/debug/other"]


@pytest.mark.parametrize(
    "path", ["/metrics", "/debug/", "/debug/explain", "/debug/pprof/profile", "/debug/x?y"]
)
def test_paths_outside_debug_or_the_processs_own_are_refused(path: str) -> None:
    with pytest.raises(DebugPageError, match="debug page"):
        DebugPages().publish(path, "p", dict)


def test_a_build_replaces_the_pages_and_a_failed_one_keeps_them() -> None:
    """As the periodic tasks: a reload whose plugins no longer publish a page removes it; the
    new instance's render answers; a build that fails changes nothing."""
    pages = DebugPages()
    with pages.registering():
        pages.publish("/debug/old", "p", lambda: "old")
    assert list(pages) == ["/debug/old"]
    with pytest.raises(RuntimeError), pages.registering():
        pages.publish("/debug/new", "p", lambda: "new")
        raise RuntimeError("a profile failed to build")
    assert list(pages) == ["/debug/old"]
    with pages.registering():
        pages.publish("/debug/new", "p", lambda: "new")
    assert list(pages) == ["/debug/new"]
    assert json.loads(pages["/debug/new"]({})[2]) == {"profiles": {"p": "new"}}
