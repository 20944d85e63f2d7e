"""CheckPodLimitResources: limits on the node plus the pod's stay within limitRatio x allocatable."""

from __future__ import annotations

from typing import Any

import pytest
from kube_cases import UNRES, UNSCHED, run_filter

from netsched.framework.fields import ErrorList, Fields
from netsched.plugins.check_pod_limit_resources import CheckPodLimitResources, CheckPodLimitResourcesArgs
from netsched.testing.builders import make_node, make_pod

SEED = {"limitRatio": {"cpu": 0.7, "memory": 0.7}}  # the seed article's args
CPU = "Insufficient cpu limit headroom"
MEM = "Insufficient memory limit headroom"


def decode(raw: dict[str, Any]) -> tuple[CheckPodLimitResourcesArgs, list[str]]:
    errs = ErrorList()
    args = CheckPodLimitResourcesArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def node() -> Any:
    return make_node("n1").capacity(cpu="10", memory="10Gi")  # caps at 0.7: 7 cpu, 7Gi


@pytest.mark.parametrize(
    ("existing", "pod", "want"),
    [
        ([], make_pod("p").limit(cpu="7", memory="7Gi"), None),  # exactly at the cap
        ([], make_pod("p").limit(cpu="7100m"), (UNRES, (CPU,))),  # over the cap alone: unresolvable
        ([make_pod("e").limit(cpu="5").node("n1")], make_pod("p").limit(cpu="2"), None),
        ([make_pod("e").limit(cpu="5").node("n1")], make_pod("p").limit(cpu="3"), (UNSCHED, (CPU,))),
        # A pod without limits counts its requests (existing or new).
        ([make_pod("e").req(cpu="6").node("n1")], make_pod("p").req(cpu="2"), (UNSCHED, (CPU,))),
        ([make_pod("e").req(memory="6Gi").node("n1")], make_pod("p").limit(memory="2Gi"), (UNSCHED, (MEM,))),
        # Both resources short: both reasons, cpu first (the order of limitRatio).
        (
            [make_pod("e").limit(cpu="6", memory="6Gi").node("n1")],
            make_pod("p").limit(cpu="2", memory="2Gi"),
            (UNSCHED, (CPU, MEM)),
        ),
        # Best-effort pods add nothing; an already over-limit node still rejects (sum > cap).
        ([make_pod("e").limit(cpu="5").node("n1")], make_pod("p"), None),
        ([make_pod("e").limit(cpu="8").node("n1")], make_pod("p"), (UNSCHED, (CPU,))),
    ],
)
def test_seed_ratio_cases(existing: list[Any], pod: Any, want: Any) -> None:
    assert run_filter(CheckPodLimitResources, pod, [node()], existing, args=SEED) == {"n1": want}


def test_unlisted_resources_are_not_checked() -> None:
    got = run_filter(
        CheckPodLimitResources, make_pod("p").limit(memory="9Gi"), [node()], args={"limitRatio": {"cpu": 0.5}}
    )
    assert got == {"n1": None}


def test_nodes_are_rejected_independently() -> None:
    nodes = [node(), make_node("n2").capacity(cpu="10", memory="10Gi")]
    existing = [make_pod("e").limit(cpu="6").node("n1")]
    got = run_filter(CheckPodLimitResources, make_pod("p").limit(cpu="2"), nodes, existing, args=SEED)
    assert got == {"n1": (UNSCHED, (CPU,)), "n2": None}


def test_args_default_and_validation() -> None:
    assert decode({}) == (CheckPodLimitResourcesArgs((("cpu", 1.0), ("memory", 1.0))), [])
    assert decode(SEED) == (CheckPodLimitResourcesArgs((("cpu", 0.7), ("memory", 0.7))), [])
    assert decode({"limitRatio": {"cpu": 0}})[1] == [
        "args.limitRatio.cpu: Invalid value: 0.0: must be greater than 0"
    ]
    assert decode({"limitRatio": {"cpu": "a lot"}})[1] == [
        'args.limitRatio.cpu: Invalid value: "a lot": must be a number'
    ]
    assert decode({"limitRatio": {}})[1] == [
        "args.limitRatio: Invalid value: {}: must name at least one resource, e.g. {cpu: 0.7}"
    ]
    assert decode({"ratio": 1})[1] == ["args.ratio: Unknown field: not a field of this object (typo?)"]
    assert CheckPodLimitResourcesArgs((("cpu", 0.7),)).encode() == {"limitRatio": {"cpu": 0.7}}
