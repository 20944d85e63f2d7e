"""Pages a plugin publishes under /debug/ (Handle.debug_page), served by the process's endpoints.

A plugin family with state worth reading by an operator (the rebalancer's
last plans) publishes a page rather than starting a server or adding a route
to the core: it names a path and gives a function that renders what it holds
now, as JSON-ready data, and optionally one that turns that data into text.
The endpoints answer `GET /debug/PATH` with the data of every profile that
published it, `{"profiles": {NAME: data}}` (JSON), or with each profile's text
under a heading with `format=text`; `profile=NAME` keeps one.  The pages sit
behind the same authentication and authorization as /debug/explain (the
endpoints check every path but the always-allowed ones).

As the periodic tasks: while frameworks are built (`registering`, at start and
at each hot reload) the publications are staged, and a build that succeeds
replaces them, so a page goes when the plugin or profile that published it
does, and a reloaded plugin's page renders the new instance.  The map is live:
the endpoints look a path up at each request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from netsched.framework.staging import Staging

# A debug endpoint's answer: (HTTP status, content type, body); its handler gets the parsed query.
Reply = tuple[int, str, bytes]
Handler = Callable[[dict[str, list[str]]], Reply]
PREFIX = "/debug/"


@dataclass(frozen=True, slots=True)
class Page:
    """One profile's publication of a path."""

    render: Callable[[], Any]  # JSON-ready data
    text: Callable[[Any], str] | None  # the data as text (format=text); None: indented JSON


class DebugPageError(ValueError):
    """A path that is not under /debug/, or one the process serves itself."""


class DebugPages(Mapping[str, Handler]):
    """Every published page of one process, by path (shared by every profile and reload)."""

    def __init__(self, reserved: tuple[str, ...] = ("/debug/explain", "/debug/pprof/")) -> None:
        self._reserved = reserved
        self._lock = threading.Lock()
        self._pages: dict[str, dict[str, Page]] = {}  # path -> profile -> page
        self._staging: Staging[dict[str, dict[str, Page]]] = Staging(self._lock)

    def publish(
        self, path: str, profile: str, render: Callable[[], Any], text: Callable[[Any], str] | None = None
    ) -> None:
        if not path.startswith(PREFIX) or path == PREFIX or "?" in path:
            raise DebugPageError(f"debug page {path!r}: must be a path under {PREFIX}")
        if any(path == r or (r.endswith("/") and path.startswith(r)) for r in self._reserved):
            raise DebugPageError(f"debug page {path!r}: the process serves this path itself")
        page = Page(render, text)
        with self._lock:
            staged = self._staging.staged
            into = staged if staged is not None else self._pages
            into.setdefault(path, {})[profile] = page

    def registering(self) -> AbstractContextManager[None]:
        """Frameworks are built inside: on success their publications become the pages; on
        failure the pages stay as they were."""
        return self._staging.build(dict, self._replace)

    def _replace(self, pages: dict[str, dict[str, Page]]) -> None:
        self._pages = pages

    # ------------------------------------------------------------ Mapping[path, Handler]

    def __getitem__(self, path: str) -> Handler:
        with self._lock:
            if path not in self._pages:
                raise KeyError(path)
        return lambda query: self.answer(path, query)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(sorted(self._pages))

    def __len__(self) -> int:
        with self._lock:
            return len(self._pages)

    def answer(self, path: str, query: Mapping[str, list[str]]) -> Reply:
        with self._lock:
            pages = dict(self._pages.get(path) or {})
        if not pages:
            return 404, "text/plain", b"404 page not found\n"
        wanted = _one(query.get("profile"))
        if wanted:
            if wanted not in pages:
                known = ", ".join(sorted(pages))
                return (
                    404,
                    "text/plain",
                    f"no profile {wanted!r} publishes {path} (known: {known})\n".encode(),
                )
            pages = {wanted: pages[wanted]}
        data = {name: page.render() for name, page in sorted(pages.items())}
        if _one(query.get("format")) == "text":
            parts = []
            for name, page in sorted(pages.items()):
                body = page.text(data[name]) if page.text is not None else json.dumps(data[name], indent=2)
                parts.append(f"== profile {name}\n{body.rstrip()}\n")
            return 200, "text/plain; charset=utf-8", "\n".join(parts).encode()
        return 200, "application/json", json.dumps({"profiles": data}, sort_keys=True).encode()


def _one(v: list[str] | None) -> str:
    return v[0] if v else ""
