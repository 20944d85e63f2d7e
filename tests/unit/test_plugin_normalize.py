"""netsched.framework.normalize: kube's DefaultNormalizeScore, the table of its cases."""

from __future__ import annotations

import numpy as np
import pytest

from netsched.framework.normalize import default_normalize_score


@pytest.mark.parametrize(
    ("raw", "reverse", "want"),
    [
        ([], False, []),
        ([], True, []),
        ([0, 0, 0], False, [0, 0, 0]),  # max 0: untouched
        ([0, 0, 0], True, [100, 100, 100]),  # max 0 reversed: everyone gets the max
        ([1, 2, 4], False, [25, 50, 100]),
        ([1, 2, 4], True, [75, 50, 0]),
        ([1, 3], False, [33, 100]),  # integer division truncates (100 * 1 // 3)
        ([1, 3], True, [67, 0]),  # reverse flips the truncated value
        ([2, 3], False, [66, 100]),
        ([0, 7, 7], True, [100, 0, 0]),
        ([5], False, [100]),
        ([5], True, [0]),
    ],
)
def test_default_normalize_score(raw: list[int], reverse: bool, want: list[int]) -> None:
    scores = np.asarray(raw, dtype=np.int64)
    default_normalize_score(scores, reverse=reverse)
    assert scores.tolist() == want


def test_max_priority_is_a_parameter() -> None:
    scores = np.asarray([1, 2], dtype=np.int64)
    default_normalize_score(scores, reverse=True, max_priority=10)
    assert scores.tolist() == [5, 0]
