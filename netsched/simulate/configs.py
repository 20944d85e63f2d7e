"""The configurations a simulation compares, and the shipped examples.

- the simulated one: --config, else the scenario's `config:`, else
  netsched/examples/config.yaml (deploy/configmap.yaml's profile: kube's
  default plugins plus NetworkTraffic, LoadAware and LoadThreshold);
- the baseline: kube's default plugin set and nothing else, under the same
  schedulerName, so the same pods go through both.

Examples are read with importlib.resources, so they work from an installed
package as well as from a checkout.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

from netsched.config import SchedulerConfig, load_config
from netsched.config.resolve import Registry
from netsched.framework import names

EXAMPLE_SCENARIO = "scenario.yaml"
EXAMPLE_CONFIG = "config.yaml"
DEFAULT_PROFILE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {name}
"""


def examples() -> Traversable:
    """The netsched/examples directory of the installed package."""
    return resources.files("netsched").joinpath("examples")


def example_text(name: str) -> str:
    return examples().joinpath(name).read_text("utf-8")


def example_config(registry: Registry) -> SchedulerConfig:
    return load_config(example_text(EXAMPLE_CONFIG), registry, default_scheduler_name="netsched")


def default_profile(scheduler_name: str, registry: Registry) -> SchedulerConfig:
    """kube's default plugins only (no metrics plugins), as profile `scheduler_name`."""
    return load_config(DEFAULT_PROFILE.format(name=scheduler_name), registry)


def configured_thresholds(cfg: SchedulerConfig, profile: str) -> dict[str, float]:
    """Per resource, the utilisation (0..1) above which LoadThreshold filters a node out in
    `profile` of `cfg`; empty when that profile does not filter with it."""
    prof = next((p for p in cfg.profiles if p.scheduler_name == profile), None)
    if prof is None or names.LOAD_THRESHOLD not in prof.names("filter"):
        return {}
    args = prof.args(names.LOAD_THRESHOLD)
    encoded = args.encode() if args is not None else {}
    # The plugin's args, read by their encoded names: the simulator imports no plugin.
    fields = {"network": "networkUtilizationPercent", "cpu": "cpuUtilizationPercent"}
    fields["memory"] = "memoryUtilizationPercent"
    # 0 % disables a check: no limit to draw.
    return {res: float(encoded[key]) / 100 for res, key in fields.items() if encoded.get(key, 0) > 0}
