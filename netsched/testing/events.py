"""A base for tests' event sinks: they write one event at a time.

netsched.kube.events.EventSink asks for `create_many` too (the API server's
sink pipelines a batch of creates); a test's sink that only knows `create`
subclasses OneByOneSink and gets `create_many` as each create in turn, with
each item's error in its place, as the pipelined sink reports them, and
`send_many` as create_many made at once (netsched.kube.events.sink.Written).
"""

from __future__ import annotations

from typing import Any

from netsched.kube.events.sink import Sent, Written

JsonObj = dict[str, Any]


class OneByOneSink:
    def create(self, api: str, namespace: str, body: JsonObj) -> None:
        raise NotImplementedError

    def create_many(self, api: str, items: list[tuple[str, JsonObj]]) -> list[Exception | None]:
        out: list[Exception | None] = []
        for namespace, body in items:
            try:
                self.create(api, namespace, body)
            except Exception as e:
                out.append(e)
            else:
                out.append(None)
        return out

    def send_many(self, api: str, items: list[tuple[str, JsonObj]], *, reserved: bool = False) -> Sent:
        return Written(self.create_many(api, items))

    def reserve(self) -> bool:
        return True

    def patch(self, api: str, namespace: str, name: str, body: JsonObj) -> None:
        raise NotImplementedError
