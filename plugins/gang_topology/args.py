"""GangTopologyArgs: the profile's topology levels, its default gang placement, link headroom.

`levels` names the topology levels as node labels, outer to inner (a zone, a
block, a rack); `kubernetes.io/hostname` is the implicit innermost one.  A gang
asks for one domain of a level with its PodGroup's `netsched.io/topology-required`
or `netsched.io/topology-preferred` annotation; `defaultTopologyRequired` /
`defaultTopologyPreferred` say what a gang without them gets (default: preferred,
the innermost listed level).  `maxLinkUtilizationPercent` is the threshold a
domain's links must stay under with the gang's bandwidth added (0: none);
`domainChoice` picks among the domains that hold a gang: `linkHeadroom` (the
coolest links, ties to the fuller domain) or `binpack` (the fuller domain,
ties to the coolest links).  `linkLoadWeight` in [0, 1] trades closeness to
the gang's placed members against cold links in the per-node score.  The
metrics come from the shared `prometheus:` block, as for NetworkTraffic.

`topologyKey` (and `rackKey`) are the older way to name two levels, outer and
inner; they cannot be combined with `levels`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from netsched.framework import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, Fields, join, label_key_errors
from netsched.metrics.plugin_api import MetricArgs, PrometheusArgs

from ..gangs import PREFERRED, REQUIRED, Policy, TopologyRequest

LINK_HEADROOM, BINPACK = "linkHeadroom", "binpack"


@dataclass(frozen=True)
class GangTopologyArgs(MetricArgs):
    levels: tuple[str, ...] = (LABEL_TOPOLOGY_ZONE,)
    default_topology_required: str = ""
    default_topology_preferred: str | None = None  # None: the innermost listed level
    max_link_utilization_percent: int = 80
    domain_choice: str = LINK_HEADROOM
    link_load_weight: float = 0.5

    @property
    def default_request(self) -> TopologyRequest | None:
        """What a gang without topology annotations gets."""
        if self.default_topology_required:
            return TopologyRequest(REQUIRED, self.default_topology_required)
        preferred = self.levels[-1] if self.default_topology_preferred is None and self.levels else None
        level = self.default_topology_preferred if self.default_topology_preferred is not None else preferred
        return TopologyRequest(PREFERRED, level) if level else None

    def policy(self) -> Policy:
        levels = self.levels if LABEL_HOSTNAME in self.levels else (*self.levels, LABEL_HOSTNAME)
        pct = self.max_link_utilization_percent
        return Policy(levels, self.default_request, pct / 100 if pct else None, self.domain_choice == BINPACK)

    @classmethod
    def decode(cls, fields: Fields) -> Self:
        levels = _levels(fields)
        required = _label(fields, "defaultTopologyRequired")
        preferred: str | None = _label(fields, "defaultTopologyPreferred")
        if required and preferred:
            fields.errs.invalid(
                join(fields.path, "defaultTopologyPreferred"),
                preferred,
                "set defaultTopologyRequired or this, not both",
            )
        if not fields.has("defaultTopologyPreferred"):
            preferred = None
        pct = fields.int("maxLinkUtilizationPercent", 80, min=0, max=100)
        choice = fields.str("domainChoice", LINK_HEADROOM, choices=(LINK_HEADROOM, BINPACK))
        weight = fields.float("linkLoadWeight", 0.5, min=0.0, max=1.0)
        prometheus = PrometheusArgs.decode(fields.sub("prometheus"))
        fields.finish()
        return cls(prometheus, levels, required, preferred, pct, choice, weight)

    def encode(self) -> dict[str, object]:
        out: dict[str, object] = {"levels": list(self.levels)}
        if self.default_topology_required:
            out["defaultTopologyRequired"] = self.default_topology_required
        else:
            request = self.default_request
            out["defaultTopologyPreferred"] = request.level if request is not None else ""
        out["maxLinkUtilizationPercent"] = self.max_link_utilization_percent
        out["domainChoice"] = self.domain_choice
        out["linkLoadWeight"] = self.link_load_weight
        out["prometheus"] = self.prometheus.encode()
        return out


def _label(fields: Fields, key: str) -> str:
    value = fields.str(key, "")
    problems = label_key_errors(value)
    if problems:
        fields.errs.invalid(join(fields.path, key), value, "; ".join(problems))
        return ""
    return value


def _levels(fields: Fields) -> tuple[str, ...]:
    old = [k for k in ("topologyKey", "rackKey") if fields.has(k)]
    if fields.has("levels"):
        for k in old:
            fields.errs.forbidden(join(fields.path, k), "the older name of levels: set levels only")
        fields.any("topologyKey")
        fields.any("rackKey")
        path = join(fields.path, "levels")
        out = fields.label_keys("levels")
        if LABEL_HOSTNAME in out[:-1]:
            fields.errs.invalid(
                path, out, f"{LABEL_HOSTNAME} is the innermost level: list it last, or not at all"
            )
        return tuple(out)
    topology_key = fields.str("topologyKey", LABEL_TOPOLOGY_ZONE)
    if not topology_key:
        fields.errs.required(join(fields.path, "topologyKey"), "a node label key")
        topology_key = LABEL_TOPOLOGY_ZONE
    rack_key = fields.str("rackKey", "")
    if rack_key and rack_key == topology_key:
        fields.errs.invalid(join(fields.path, "rackKey"), rack_key, "must differ from topologyKey")
        rack_key = ""
    return (topology_key, rack_key) if rack_key else (topology_key,)
