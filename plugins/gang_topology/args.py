"""GangTopologyArgs: which node labels make a topology domain, and how much link load counts.

`topologyKey` is the label whose value two nodes share when they are close
(default the zone); `rackKey`, when set, is a second, finer level (a rack) that
counts half of the locality.  `linkLoadWeight` in [0, 1] trades locality
(0: only closeness counts) against cold links (1: only link load counts).  The
metrics come from the shared `prometheus:` block, as for NetworkTraffic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from netsched.framework import Fields, join
from netsched.metrics.plugin_api import MetricArgs, PrometheusArgs

ZONE_LABEL = "topology.kubernetes.io/zone"


@dataclass(frozen=True)
class GangTopologyArgs(MetricArgs):
    topology_key: str = ZONE_LABEL
    rack_key: str = ""
    link_load_weight: float = 0.5

    @classmethod
    def decode(cls, fields: Fields) -> Self:
        topology_key = fields.str("topologyKey", ZONE_LABEL)
        if not topology_key:
            fields.errs.required(join(fields.path, "topologyKey"), "a node label key")
            topology_key = ZONE_LABEL
        rack_key = fields.str("rackKey", "")
        if rack_key and rack_key == topology_key:
            fields.errs.invalid(join(fields.path, "rackKey"), rack_key, "must differ from topologyKey")
            rack_key = ""
        weight = fields.float("linkLoadWeight", 0.5, min=0.0, max=1.0)
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        fields.finish()
        return cls(prometheus, topology_key=topology_key, rack_key=rack_key, link_load_weight=weight)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {"topologyKey": self.topology_key, "linkLoadWeight": self.link_load_weight}
        if self.rack_key:
            out["rackKey"] = self.rack_key
        out["prometheus"] = self.prometheus.encode()
        return out
