"""Event series: a repeat of a recent event bumps its count instead of making another event.

A pod that stays unschedulable produces the same event on every attempt. As
kube's event correlator, a repeat within the de-duplication window updates
the series of the event already written (events.k8s.io `series.count`, core/v1
`count`): the first repeat at once, later ones at most every series interval
(and on flush or stop). Each writer thread keeps the series of the pods it
owns in a `SeriesCache`, bounded in size (oldest forgotten first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from netsched.clock import microtime, rfc3339
from netsched.kube.client import JsonObj
from netsched.kube.events.recorder import Occurrence
from netsched.kube.events.sink import EVENTS_V1


@dataclass(slots=True)
class EventSeries:
    """An event written to the API and the repeats seen since."""

    api: str
    namespace: str
    name: str
    count: int
    last_seen: float
    written_count: int
    last_write: float

    @classmethod
    def first(cls, api: str, name: str, occ: Occurrence) -> EventSeries:
        """The series of an event just created for `occ`."""
        return cls(api, occ.namespace, name, 1, occ.wall, 1, occ.wall)

    def due(self, now: float, force: bool, interval: float) -> bool:
        """Whether there are unwritten repeats to write now (`force`: flush or stop)."""
        return self.count > self.written_count and (force or now - self.last_write >= interval)

    def patch(self) -> JsonObj:
        """The patch that brings the written event's count up to date."""
        if self.api == EVENTS_V1:
            return {"series": {"count": self.count, "lastObservedTime": microtime(self.last_seen)}}
        return {"count": self.count, "lastTimestamp": rfc3339(self.last_seen)}


class SeriesCache:
    """The series of one writer's pods, by occurrence key, oldest first."""

    def __init__(self, max_series: int, dedup_window: float) -> None:
        self.max_series = max_series
        self.dedup_window = dedup_window
        self._series: OrderedDict[tuple[str, ...], EventSeries] = OrderedDict()

    def __len__(self) -> int:
        return len(self._series)

    def repeat_of(self, occ: Occurrence) -> EventSeries | None:
        """The series `occ` repeats (same event within the window), if any."""
        series = self._series.get(occ.key)
        if series is not None and occ.wall - series.last_seen <= self.dedup_window:
            return series
        return None

    def seen_again(self, occ: Occurrence, series: EventSeries) -> bool:
        """Count a repeat; True when it is the first one (written at once)."""
        series.count += 1
        series.last_seen = occ.wall
        self._series.move_to_end(occ.key)
        return series.written_count == 1

    def remember(self, occ: Occurrence, created: EventSeries | None) -> None:
        if created is None:
            return
        key = occ.key
        self._series[key] = created
        self._series.move_to_end(key)
        while len(self._series) > self.max_series:
            self._series.popitem(last=False)

    def forget(self, key: tuple[str, ...]) -> None:
        self._series.pop(key, None)

    def items(self) -> Iterator[tuple[tuple[str, ...], EventSeries]]:
        """A copy's items: the caller may forget series while iterating."""
        return iter(list(self._series.items()))

    def expired(self, series: EventSeries, now: float) -> bool:
        """Past the window with every repeat written: the next occurrence starts a new event."""
        return now - series.last_seen > self.dedup_window and series.count == series.written_count
