"""Fixtures shared by the unit and integration tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from netsched.testing.metric_rig import MetricRig


@pytest.fixture
def metric_rig() -> Iterator[Callable[..., MetricRig[Any]]]:
    """Factory for metric plugins under test: metric_rig(Plugin, n_nodes, args=, pods=, capacity=,
    defaults=, pod=) -> MetricRig (netsched.testing.metric_rig).  Hubs are stopped afterwards."""
    rigs: list[MetricRig[Any]] = []

    def make(*args: Any, **kw: Any) -> MetricRig[Any]:
        rig = MetricRig(*args, **kw)
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        rig.hub.stop()
