"""kube's DefaultNormalizeScore, shared by the score plugins that use it.

kube keeps this helper in pkg/scheduler/framework/plugins/helper so that
TaintToleration, NodeAffinity (and out-of-tree plugins) normalise the same
way; one copy here keeps their scores identical to kube's.
"""

from __future__ import annotations

from netsched.framework.extension_points import MAX_NODE_SCORE
from netsched.framework.snapshot import IntArray


def default_normalize_score(
    scores: IntArray, *, reverse: bool = False, max_priority: int = MAX_NODE_SCORE
) -> None:
    """Scale non-negative raw scores from [0, max(scores)] to [0, max_priority], in place.

    Integer division as kube does (max_priority * score // max).  When every
    score is 0 they stay 0, or all become max_priority when `reverse`; with
    `reverse` each scaled score s becomes max_priority - s (fewest wins).
    """
    if len(scores) == 0:
        return
    top = max(int(scores.max()), 0)  # kube starts its running max at 0
    if top == 0:
        if reverse:
            scores[:] = max_priority
        return
    scores[:] = max_priority * scores // top
    if reverse:
        scores[:] = max_priority - scores
