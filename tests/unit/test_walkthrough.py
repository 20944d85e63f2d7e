"""The pod-placement walkthrough (netsched/examples/walkthrough.yaml) places every pod where its comment says."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from netsched.app import build_registry
from netsched.config import load_config
from netsched.framework.parse import parse_node, parse_pod
from netsched.framework.runtime import Framework
from netsched.framework.search import FitError
from netsched.simulate import load_scenario, simulate
from netsched.simulate.configs import example_text
from netsched.testing.framework import fake_services, schedule_pod

EXPECTED = {
    "default/ssd-app": "node-a",  # nodeSelector disktype=ssd
    "default/web-1": "node-b",  # anti-affinity; node-c tainted; node-b least allocated
    "default/web-2": "node-a",  # anti-affinity keeps it off node-b
    "default/cache": "node-a",  # pod affinity to app=ssd-app
    "default/gpu-job": "node-c",  # toleration + nodeSelector gpu=true
}


def walkthrough() -> tuple[Any, Any, Any]:
    registry = build_registry()
    scenario = load_scenario(example_text("walkthrough.yaml"), "walkthrough.yaml")
    cfg = load_config(example_text(scenario.config), registry, default_scheduler_name="netsched")
    return scenario, cfg, registry


def test_walkthrough_placements() -> None:
    scenario, cfg, registry = walkthrough()
    assert scenario.config == "walkthrough-config.yaml"
    run = simulate(scenario, cfg, registry)
    assert run.placements == EXPECTED
    # The pinned pod (spec.nodeName) was never scheduled: it sits on the tainted node-c.
    assert [p["spec"]["nodeName"] for p in scenario.existing_pods] == ["node-c"]
    assert set(run.unscheduled) == {"default/web-3", "default/gpu-intruder"}


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (
            "web-3",
            "1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match pod anti-affinity rules.",
        ),
        (
            "gpu-intruder",
            "1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector.",
        ),
    ],
)
def test_unplaced_pods_say_why(name: str, why: str) -> None:
    """Each unplaced pod against the cluster as the walkthrough leaves it (scheduled in-process:
    the simulation's status writes are asynchronous, so its messages are not asserted here)."""
    scenario, cfg, registry = walkthrough()
    fwk = Framework(cfg.profiles[0], registry, fake_services())
    nodes = [parse_node(copy.deepcopy(n)) for n in scenario.nodes]
    existing = [parse_pod(copy.deepcopy(p)) for p in scenario.existing_pods]
    for raw in scenario.pods:
        key = f"default/{raw['metadata']['name']}"
        if key in EXPECTED:
            placed = copy.deepcopy(raw)
            placed["spec"]["nodeName"] = EXPECTED[key]
            existing.append(parse_pod(placed))
    raw = next(p for p in scenario.pods if p["metadata"]["name"] == name)
    with pytest.raises(FitError) as e:
        schedule_pod(parse_pod(copy.deepcopy(raw)), nodes, framework=fwk, existing=existing)
    assert str(e.value).startswith(f"0/3 nodes are available: {why}")
