"""Go duration strings, as kube writes leaseDuration and friends."""

from __future__ import annotations

import pytest

from netsched.config import format_duration, parse_duration
from netsched.config.duration import DurationError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("100ms", 0.1),
        ("1h", 3600.0),
        ("1.5h", 5400.0),
        ("1h0m0s", 3600.0),
        ("-2s", -2.0),
        ("+3s", 3.0),
        ("0", 0.0),
        ("300us", 0.0003),
        ("1µs", 1e-6),
        ("1μs", 1e-6),
        (".5s", 0.5),
        ("5.s", 5.0),
        ("7ns", 7e-9),
        ("2m3.25s", 123.25),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "invalid duration ''"),
        ("15", "missing unit in duration '15'"),
        ("1x", "invalid duration '1x'"),
        ("s", "invalid duration 's'"),
        ("1s2", "missing unit in duration '1s2'"),
        ("1 s", "invalid duration '1 s'"),
        ("3000000h", "duration '3000000h' out of range"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(DurationError) as exc:
        parse_duration(text)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (15.0, "15s"),
        (90.0, "1m30s"),
        (0.1, "100ms"),
        (3600.0, "1h0m0s"),
        (3661.5, "1h1m1.5s"),
        (0.0, "0s"),
        (1.5e-6, "1.5µs"),
        (5e-9, "5ns"),
        (-2.0, "-2s"),
        (2.25, "2.25s"),
        (0.0105, "10.5ms"),
    ],
)
def test_format_like_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
