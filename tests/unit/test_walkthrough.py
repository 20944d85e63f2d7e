"""The pod-placement walkthrough (netsched/examples/walkthrough.yaml) places every pod where its comment says."""

from __future__ import annotations

from netsched.app import build_registry
from netsched.config import load_config
from netsched.simulate import load_scenario, simulate
from netsched.simulate.configs import example_text

EXPECTED = {
    "default/ssd-app": "node-a",  # nodeSelector disktype=ssd
    "default/web-1": "node-b",  # anti-affinity; node-c tainted; node-b least allocated
    "default/web-2": "node-a",  # anti-affinity keeps it off node-b
    "default/cache": "node-a",  # pod affinity to app=ssd-app
    "default/gpu-job": "node-c",  # toleration + nodeSelector gpu=true
}


def test_walkthrough_placements() -> None:
    registry = build_registry()
    scenario = load_scenario(example_text("walkthrough.yaml"), "walkthrough.yaml")
    assert scenario.config == "walkthrough-config.yaml"
    cfg = load_config(example_text(scenario.config), registry, default_scheduler_name="netsched")
    run = simulate(scenario, cfg, registry)
    assert run.placements == EXPECTED
    # The pinned pod (spec.nodeName) was never scheduled: it sits on the tainted node-c.
    assert [p["spec"]["nodeName"] for p in scenario.existing_pods] == ["node-c"]
    assert set(run.unscheduled) == {"default/web-3", "default/gpu-intruder"}
    assert run.unscheduled["default/web-3"].startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "2 node(s) didn't match pod anti-affinity rules."
    )
