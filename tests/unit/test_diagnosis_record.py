"""Diagnosis.record: one filter's Rejections counted into the diagnosis, and the mask it returns."""

from __future__ import annotations

import numpy as np
import pytest

from netsched.framework.diagnosis import Diagnosis, Rejection
from netsched.framework.status import Code

UNS = Code.UNSCHEDULABLE
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def diagnosis(n: int = 8) -> Diagnosis:
    return Diagnosis(n, np.zeros(n, dtype=np.int8))


def mask(n: int, *true: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[list(true)] = True
    return out


# The chunk asked about: snapshot rows in a rotated order (row numbers are not positions).
ROWS = np.array([5, 6, 7, 0, 1, 2], dtype=np.int64)


@pytest.mark.parametrize(
    ("rejections", "failed", "codes", "reasons"),
    [
        pytest.param([], [], {}, {}, id="no rejection"),
        pytest.param(
            [Rejection(mask(6, 0, 3), ("a",))],
            [0, 3],
            {5: UNS, 0: UNS},
            {"a": 2},
            id="one",
        ),
        pytest.param(
            [Rejection(mask(6), ("nothing",))],
            [],
            {},
            {},
            id="all-False mask counts nothing",
        ),
        pytest.param(
            [Rejection(mask(6, 1), ("a",)), Rejection(mask(6, 2, 4), ("b", "c"), UNRES)],
            [1, 2, 4],
            {6: UNS, 7: UNRES, 1: UNRES},
            {"a": 1, "b": 2, "c": 2},
            id="two disjoint, two reasons on one",
        ),
        pytest.param(
            [
                Rejection(mask(6, 0, 1), ("x",), UNRES),
                Rejection(mask(6, 1, 2), ("y",)),
                Rejection(mask(6), ("never",)),
                Rejection(mask(6, 2, 5), ("x",)),
            ],
            [0, 1, 2, 5],
            {5: UNRES, 6: UNRES, 7: UNS, 2: UNS},
            {"x": 4, "y": 2},
            id="overlapping: most severe code kept, counts per reason add up",
        ),
        pytest.param(
            [Rejection(mask(6), ("none",)), Rejection(mask(6, 3), ("later",), UNRES)],
            [3],
            {0: UNRES},
            {"later": 1},
            id="all-False first, then one",
        ),
    ],
)
def test_record_ors_the_masks_keeps_the_worst_code_and_counts_per_reason(
    rejections: list[Rejection], failed: list[int], codes: dict[int, Code], reasons: dict[str, int]
) -> None:
    d = diagnosis()
    before = [r.mask.copy() for r in rejections]
    got, err = d.record("P", ROWS, rejections)
    assert err is None
    assert got.dtype == bool and got.shape == (len(ROWS),)
    assert np.flatnonzero(got).tolist() == failed
    want_codes = [0] * 8
    for row, code in codes.items():
        want_codes[row] = int(code)
    assert d.node_codes.tolist() == want_codes
    assert d.reasons == reasons
    assert d.unschedulable_plugins == ({"P"} if reasons else set())
    for r, m in zip(rejections, before, strict=True):
        np.testing.assert_array_equal(r.mask, m)  # no plugin's mask is written to


def test_a_row_keeps_a_more_severe_code_from_an_earlier_plugin() -> None:
    d = diagnosis()
    d.record("First", ROWS, [Rejection(mask(6, 0), ("hard",), UNRES)])
    d.record("Second", ROWS, [Rejection(mask(6, 0, 1), ("soft",))])
    assert d.node_codes[[5, 6]].tolist() == [int(UNRES), int(UNS)]
    assert d.reasons == {"hard": 1, "soft": 2}
    assert d.unschedulable_plugins == {"First", "Second"}


def test_or_of_two_masks_is_a_new_array_the_plugins_masks_unchanged() -> None:
    first, second = mask(6, 0), mask(6, 4)
    got, _ = diagnosis().record("P", ROWS, [Rejection(first, ("a",)), Rejection(second, ("b",))])
    assert got is not first and not np.shares_memory(got, first)
    assert first.tolist() == mask(6, 0).tolist() and second.tolist() == mask(6, 4).tolist()
    got[:] = False  # the runtime may keep the mask: writing to it must not reach the plugins'
    assert first.tolist() == mask(6, 0).tolist() and second.tolist() == mask(6, 4).tolist()


@pytest.mark.parametrize("before", [0, 1], ids=["error first", "error after a rejection"])
def test_an_error_rejection_returns_an_error_status_naming_the_plugin(before: int) -> None:
    d = diagnosis()
    rejections = [Rejection(mask(6, 2), ("a",))][:before] + [
        Rejection(mask(6, 1), ("boom", "detail"), Code.ERROR),
        Rejection(mask(6, 3), ("after",)),
    ]
    got, err = d.record("P", ROWS, rejections)
    assert err is not None
    assert (err.code, err.reasons, err.plugin) == (Code.ERROR, ["boom", "detail"], "P")
    assert got.shape == (len(ROWS),) and got.dtype == bool
    assert "after" not in d.reasons  # nothing after the error is counted
    if not before:
        assert not got.any() and not d.node_codes.any() and d.reasons == {}
