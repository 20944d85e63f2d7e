"""A metric plugin under test: n nodes, fake Prometheus answers, a real Framework.

    rig = MetricRig(LoadAware, 3, capacity={"cpu": "4", "memory": "8Gi"})
    rig.load(cpu={"n0": 0.2, "n1": 0.9, "n2": 0.0})
    assert rig.scores() == [...]

The plugin is built by the runtime (its Handle is a real Framework) over the
process-wide MetricsHub of netsched.testing.prometheus.fake_hub, on a
FakeClock; `load` serves metric values and runs one poll, as the shared
poller would between two cycles.  scores() and verdicts() check the plugin's
per-node and batch forms agree (netsched.testing.agreement).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from netsched.framework.extension_points import AnyPlugin, FilterPlugin, PluginArgs, ScorePlugin
from netsched.framework.snapshot import IntArray, Snapshot
from netsched.framework.status import Code
from netsched.framework.types import NodeInfo, PodInfo
from netsched.testing.agreement import filter_statuses, score_outcomes
from netsched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_framework, plugin_of
from netsched.testing.prometheus import fake_hub

P = TypeVar("P", bound=AnyPlugin)


class MetricRig(Generic[P]):
    """Nodes n0..n{n-1}; `defaults` (metric -> value on every node) are served unless load() overrides them."""

    def __init__(
        self,
        plugin: type[P],
        n: int,
        *,
        args: PluginArgs | None = None,
        pods: Sequence[PodInfo | PodBuilder] = (),
        capacity: Mapping[str, str] | None = None,
        defaults: Mapping[str, float] | None = None,
        pod: PodInfo | None = None,
    ) -> None:
        self.clock = FakeClock()
        self.hub, self.fake = fake_hub(self.clock)
        self.names = [f"n{i}" for i in range(n)]
        nodes: list[NodeInfo | NodeBuilder] = [
            make_node(name).capacity(**capacity) if capacity else make_node(name) for name in self.names
        ]
        self.snap = Snapshot.of(node_infos(nodes, list(pods)))
        self.framework = build_framework(
            [plugin],
            args={plugin.name: args} if args is not None else None,
            metrics=self.hub,
            clock=self.clock,
            snapshot=self.snap,
        )
        self.plugin: P = plugin_of(self.framework, plugin)
        self.src = getattr(self.plugin, "source")  # noqa: B009 - every metric plugin has one
        self.defaults = dict(defaults or {})
        self.pod = pod if pod is not None else make_pod("p").info()

    def load(self, **metrics: Mapping[str, Any]) -> None:
        """Serve metric -> {node: value | (value, timestamp)} (plus defaults) and poll once."""
        for metric, value in self.defaults.items():
            if metric not in metrics:
                with contextlib.suppress(KeyError):  # a metric this configuration does not poll
                    self.fake.serve(self.src, metric, dict.fromkeys(self.names, value))
        for metric, values in metrics.items():
            self.fake.serve(self.src, metric, values)
        self.hub.poll_now()

    def scores(self, pod: PodInfo | None = None, idx: IntArray | None = None) -> list[int]:
        """Raw scores of rows `idx` (default all) after PreScore; both forms checked equal."""
        assert isinstance(self.plugin, ScorePlugin)
        return score_outcomes(self.plugin, pod or self.pod, self.snap, idx)

    def verdicts(
        self, pod: PodInfo | None = None, *, code: Code | None = None
    ) -> dict[str, str | tuple[str, ...]]:
        """node -> "ok" | reasons; filter() (each on a fresh cycle) and filter_nodes() agree.

        With `code`, every rejection must carry it and name the plugin.
        """
        assert isinstance(self.plugin, FilterPlugin)
        statuses = filter_statuses(self.plugin, pod or self.pod, self.snap, fresh_state_per_node=True)
        if code is not None:
            for st in statuses.values():
                assert st.ok or (st.code, st.plugin) == (code, self.plugin.name), st
        return {self.names[row]: "ok" if st.ok else tuple(st.reasons) for row, st in statuses.items()}
