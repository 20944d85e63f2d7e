"""Where events go: the EventSink protocol and the sink over the API server.

As client-go's EventSink: create an event, create many (pipelined over a few
connections where the transport serves the cluster), patch a series count.
Each call is one attempt; the writer (netsched.kube.events.writer) owns the
retries. `send_many` is create_many in two steps: the creates are sent at once
and their replies read when the writer asks (`Sent`), so the writer keeps
sending while earlier batches are answered. `api` names the group an event is written to: events.k8s.io/v1, or
core/v1 when the cluster does not serve it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from urllib.parse import quote

from netsched.kube.api import MERGE_PATCH
from netsched.kube.client import JsonObj, KubeClient, PendingReplies

EVENTS_V1 = "events.k8s.io/v1"
CORE_V1 = "v1"
LANES = 4  # connections a batch of new events is pipelined over
# (connect, read) seconds for one event write. The API server answers a create in
# milliseconds; the client's default (30 s) would hold every event queued behind a request
# left hanging on a connection to a server that died for that long. A write that timed
# out is sent again under the same name: at worst it meets AlreadyExists.
TIMEOUT = (3.0, 5.0)


class Sent(Protocol):
    """A batch of creates sent (EventSink.send_many), the replies still to read: `filenos()` are
    the connections whose replies are awaited (for select; none when the sink wrote the batch
    already), `read(fd)` reads one of them, `deadline` is when they are due (monotonic; None: no
    limit), `finish()` reads the rest and gives per item None or its error."""

    @property
    def deadline(self) -> float | None: ...

    def filenos(self) -> Sequence[int]: ...

    def read(self, fd: int) -> None: ...

    def finish(self) -> list[Exception | None]: ...


class Written:
    """A Sent whose creates were made before send_many returned (a sink that writes at once)."""

    deadline = None

    def __init__(self, results: list[Exception | None]) -> None:
        self._results = results

    def filenos(self) -> Sequence[int]:
        return ()

    def read(self, fd: int) -> None:
        return None

    def finish(self) -> list[Exception | None]:
        return self._results


class EventSink(Protocol):
    """Where events go; `api` is EVENTS_V1 or CORE_V1. Methods raise ApiError."""

    def create(self, api: str, namespace: str, body: JsonObj) -> None: ...

    def create_many(self, api: str, items: list[tuple[str, JsonObj]]) -> list[Exception | None]:
        """One attempt at each (namespace, body) create, together where the sink can (pipelined);
        per item None or its error."""
        ...

    def send_many(self, api: str, items: list[tuple[str, JsonObj]], *, reserved: bool = False) -> Sent:
        """create_many's creates, sent now; the replies are read through the Sent. `reserved`:
        their rate-limit tokens were taken already (`reserve`)."""
        ...

    def reserve(self) -> bool:
        """Take the rate-limit token of one create if it is there now; False: it would wait."""
        ...

    def patch(self, api: str, namespace: str, name: str, body: JsonObj) -> None: ...


class KubeEventSink:
    """EventSink over the API server: one attempt per call (the broadcaster owns the retries)."""

    def __init__(self, client: KubeClient, timeout: tuple[float, float] = TIMEOUT) -> None:
        self._client = client
        self.timeout = timeout

    def create(self, api: str, namespace: str, body: JsonObj) -> None:
        self._client.request(
            "create",
            _resource(api),
            "POST",
            _events_path(api, namespace),
            body=body,
            retry=False,
            timeout=self.timeout,
        )

    def create_many(self, api: str, items: list[tuple[str, JsonObj]]) -> list[Exception | None]:
        """One attempt at each (namespace, body) create, pipelined over LANES connections; per item
        None or its error.  Safe to repeat: each event has a name of its own (AlreadyExists)."""
        return self.send_many(api, items).finish()

    def send_many(self, api: str, items: list[tuple[str, JsonObj]], *, reserved: bool = False) -> Sent:
        paths = [(_events_path(api, namespace), body) for namespace, body in items]
        return _Replies(
            self._client.send_many(
                "create",
                _resource(api),
                "POST",
                paths,
                lanes=LANES,
                timeout=self.timeout,
                throttle=not reserved,
            )
        )

    def reserve(self) -> bool:
        return self._client.limiter.try_acquire()

    def patch(self, api: str, namespace: str, name: str, body: JsonObj) -> None:
        path = f"{_events_path(api, namespace)}/{quote(name, safe='')}"
        self._client.request(
            "patch",
            _resource(api),
            "PATCH",
            path,
            body=body,
            content_type=MERGE_PATCH,
            retry=False,
            timeout=self.timeout,
        )


class _Replies:
    """A Sent over the client's PendingReplies."""

    def __init__(self, pending: PendingReplies) -> None:
        self._pending = pending

    @property
    def deadline(self) -> float | None:
        return self._pending.deadline

    def filenos(self) -> Sequence[int]:
        return self._pending.filenos()

    def read(self, fd: int) -> None:
        self._pending.read(fd)

    def finish(self) -> list[Exception | None]:
        return [r if isinstance(r, Exception) else None for r in self._pending.finish()]


def _events_path(api: str, namespace: str) -> str:
    prefix = "/apis/events.k8s.io/v1" if api == EVENTS_V1 else "/api/v1"
    return f"{prefix}/namespaces/{quote(namespace, safe='')}/events"


def _resource(api: str) -> str:
    return "events.k8s.io/events" if api == EVENTS_V1 else "events"
