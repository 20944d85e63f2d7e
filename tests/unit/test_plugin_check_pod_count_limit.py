"""CheckPodCountLimit: a node already running podCountLimit pods is rejected (both forms agree)."""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import UNSCHED, run_filter

from netsched.framework.fields import ErrorList, Fields
from netsched.plugins.check_pod_count_limit import CheckPodCountLimit, CheckPodCountLimitArgs
from netsched.plugins.check_pod_count_limit.plugin import ERR_REASON
from netsched.testing.builders import make_node, make_pod

FULL = (UNSCHED, (ERR_REASON,))


def decode(raw: dict[str, Any]) -> tuple[CheckPodCountLimitArgs, list[str]]:
    errs = ErrorList()
    args = CheckPodCountLimitArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


@pytest.mark.parametrize(
    ("limit", "running", "want"),
    [(2, 0, None), (2, 1, None), (2, 2, FULL), (2, 3, FULL), (1, 1, FULL), (3, 2, None)],
)
def test_limit_counts_pods_already_on_the_node(limit: int, running: int, want: Any) -> None:
    existing = [make_pod(f"e{i}").node("n1") for i in range(running)]
    got = run_filter(
        CheckPodCountLimit, make_pod("p"), [make_node("n1")], existing, args={"podCountLimit": limit}
    )
    assert got == {"n1": want}


def test_terminated_pods_do_not_count() -> None:
    existing = [make_pod("done").node("n1").set("status.phase", "Succeeded"), make_pod("run").node("n1")]
    got = run_filter(
        CheckPodCountLimit, make_pod("p"), [make_node("n1")], existing, args={"podCountLimit": 2}
    )
    assert got == {"n1": None}


def test_only_full_nodes_are_rejected() -> None:
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    existing = [make_pod("a1").node("a"), make_pod("a2").node("a"), make_pod("b1").node("b")]
    got = run_filter(CheckPodCountLimit, make_pod("p"), nodes, existing, args={"podCountLimit": 2})
    assert got == {"a": FULL, "b": None, "c": None}


def test_args_default_and_validation() -> None:
    assert decode({}) == (CheckPodCountLimitArgs(110), [])
    assert decode({"podCountLimit": 2}) == (CheckPodCountLimitArgs(2), [])
    assert decode({"podCountLimit": 0})[1] == [
        "args.podCountLimit: Invalid value: 0: must be greater than or equal to 1"
    ]
    assert decode({"podCountLimit": "2"})[1] == ['args.podCountLimit: Invalid value: "2": must be an integer']
    assert decode({"podcountlimit": 2})[1] == [
        "args.podcountlimit: Unknown field: not a field of this object (typo?)"
    ]
    assert CheckPodCountLimitArgs(2).encode() == {"podCountLimit": 2}
