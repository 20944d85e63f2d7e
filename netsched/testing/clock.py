"""A clock tests move by hand: netsched.clock.ManualClock, under the kit's name."""

from __future__ import annotations

from netsched.clock import ManualClock

FakeClock = ManualClock

__all__ = ["FakeClock", "ManualClock"]
