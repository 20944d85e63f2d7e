"""GangTopology: locality to the gang's placed members traded against link load; args; explain."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from netsched.app import build_registry
from netsched.config import ConfigError, load_config
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.snapshot import Snapshot
from netsched.inmemory import InMemoryCluster
from netsched.metrics import LINK_SPEED, NETWORK_RX, NETWORK_TX, MetricsHub
from netsched.plugins.coscheduling import POD_GROUP_LABEL
from netsched.plugins.gang_topology import GangTopology, GangTopologyArgs
from netsched.testing.agreement import score_outcomes
from netsched.testing.builders import PodBuilder, make_node, make_pod, node_infos
from netsched.testing.clock import FakeClock
from netsched.testing.framework import build_framework, plugin_of
from netsched.testing.prometheus import FakePrometheus, fake_hub

GBIT = 125_000_000.0
RACK = "topology.example.com/rack"
ZONE = "topology.kubernetes.io/zone"
# (name, zone, rack) of the test nodes.
LAYOUT = [("a1", "za", "r1"), ("a2", "za", "r2"), ("b1", "zb", "r3"), ("b2", "zb", "r4")]


class Rig:
    def __init__(self, hub: MetricsHub, fake: FakePrometheus) -> None:
        self.hub, self.fake = hub, fake

    def build(
        self,
        placed: Sequence[PodBuilder] = (),
        args: GangTopologyArgs | None = None,
        unlabelled: bool = False,
    ) -> tuple[GangTopology, Snapshot]:
        nodes = [
            make_node(n) if unlabelled and n == "b2" else make_node(n).zone(z).label(RACK, r)
            for n, z, r in LAYOUT
        ]
        snap = Snapshot.of(node_infos(list(nodes), list(placed)))
        fwk = build_framework(
            [GangTopology],
            args={GangTopology.name: args} if args is not None else None,
            metrics=self.hub,
            clock=FakeClock(),
            snapshot=snap,
        )
        return plugin_of(fwk, GangTopology), snap

    def load(
        self, plugin: GangTopology, rx: Mapping[str, Any], speed: Mapping[str, Any] | None = None
    ) -> None:
        self.fake.serve(plugin.source, NETWORK_RX, dict(rx))
        self.fake.serve(plugin.source, NETWORK_TX, dict.fromkeys(rx, 0.0))
        self.fake.serve(plugin.source, LINK_SPEED, dict(speed or {}))
        self.hub.poll_now()


@pytest.fixture
def rig() -> Iterator[Rig]:
    hub, fake = fake_hub(FakeClock())
    yield Rig(hub, fake)
    hub.stop()


def member(name: str, group: str = "train") -> PodBuilder:
    return make_pod(name).label(POD_GROUP_LABEL, group).req(cpu="1")


IDLE = {"a1": 0.0, "a2": 0.0, "b1": 0.0, "b2": 0.0}
SPEED = dict.fromkeys(IDLE, GBIT)


def test_members_pull_the_next_one_into_their_zone(rig: Rig) -> None:
    p, snap = rig.build([member("m0").node("b1"), member("m1").node("b2"), member("other", "x").node("a1")])
    rig.load(p, IDLE, SPEED)
    # idle links: 0.5 x locality + 0.5 x 1; zone b holds both members.
    assert score_outcomes(p, member("m2").info(), snap) == [50, 50, 100, 100]


def test_rack_key_splits_the_locality_in_half(rig: Rig) -> None:
    args = GangTopologyArgs(levels=(ZONE, RACK), link_load_weight=0.0)
    p, snap = rig.build([member("m0").node("a1"), member("m1").node("a1"), member("m2").node("b1")], args)
    rig.load(p, IDLE, SPEED)
    # a1: zone 2/3, rack 2/3 -> 67; a2: zone 2/3, rack 0 -> 33; b1: 1/3, 1/3 -> 33; b2: 1/3, 0 -> 17.
    assert score_outcomes(p, member("m3").info(), snap) == [67, 33, 33, 17]


def test_link_load_trades_against_locality(rig: Rig) -> None:
    p, snap = rig.build([member("m0").node("b1")], GangTopologyArgs(link_load_weight=0.7))
    rig.load(p, {"a1": 0.0, "a2": 0.0, "b1": GBIT, "b2": 0.5 * GBIT}, SPEED)
    # a: 0.3 x 0 + 0.7 x 1 = 70; b1: 0.3 + 0 = 30; b2: 0.3 + 0.7 x 0.5 = 65.
    assert score_outcomes(p, member("m1").info(), snap) == [70, 70, 30, 65]


def test_first_member_goes_to_cold_links_and_unlabelled_nodes_are_far(rig: Rig) -> None:
    p, snap = rig.build(unlabelled=True)
    rig.load(p, {"a1": 0.0, "a2": 0.25 * GBIT, "b1": GBIT, "b2": 0.0}, SPEED)
    # Nothing placed: locality 1 everywhere, the link term decides.
    assert score_outcomes(p, member("m0").info(), snap) == [100, 88, 50, 100]
    p, snap = rig.build([member("m0").node("b1")], unlabelled=True)
    rig.load(p, IDLE, SPEED)
    assert score_outcomes(p, member("m1").info(), snap) == [50, 50, 100, 50]


def test_stale_link_metrics_fall_back_to_the_mean(rig: Rig) -> None:
    p, snap = rig.build([member("m0").node("a1")], GangTopologyArgs(link_load_weight=1.0))
    rig.load(p, {"a1": 0.0, "a2": 0.5 * GBIT, "b1": GBIT}, SPEED)  # b2 has no sample
    assert score_outcomes(p, member("m1").info(), snap) == [100, 50, 0, 50]


def test_pods_without_a_gang_skip_the_plugin(rig: Rig) -> None:
    from netsched.framework.cycle_state import CycleState

    p, snap = rig.build()
    st = p.pre_score(CycleState(), make_pod("solo").info(), snap, snap.all_rows)
    assert st.is_skip


def test_args_decode_and_errors() -> None:
    def decode(raw: dict[str, Any]) -> tuple[GangTopologyArgs, list[str]]:
        errs = ErrorList()
        out = GangTopologyArgs.decode(Fields(raw, "args", errs))
        return out, [str(e) for e in errs]

    got, errs = decode({})
    assert not errs and got.levels == ("topology.kubernetes.io/zone",) and got.link_load_weight == 0.5
    # topologyKey / rackKey: the older names of two levels, outer and inner.
    got, errs = decode({"rackKey": RACK, "linkLoadWeight": 0.2, "topologyKey": "region"})
    assert not errs and (got.levels, got.link_load_weight) == (("region", RACK), 0.2)
    again = GangTopologyArgs.decode(Fields(got.encode(), "args", ErrorList()))
    assert (again.levels, again.default_request, again.link_load_weight) == (
        got.levels,
        got.default_request,
        got.link_load_weight,
    )
    _, errs = decode({"linkLoadWeight": 1.5})
    assert errs and "args.linkLoadWeight" in errs[0]
    _, errs = decode({"rackKey": "topology.kubernetes.io/zone"})
    assert errs and "args.rackKey" in errs[0]
    with pytest.raises(ConfigError, match="bogus"):
        load_config(CONFIG.replace("linkLoadWeight", "bogus"), build_registry())


CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: netsched
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      - name: GangTopology
        weight: 3
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
  pluginConfig:
  - name: GangTopology
    args:
      linkLoadWeight: 0.5
"""


def test_it_shows_in_explain_with_its_weight(rig: Rig) -> None:
    reg = build_registry()
    cluster = InMemoryCluster(load_config(CONFIG, reg), reg, metrics_hub=rig.hub)
    group = {
        "metadata": {"namespace": "default", "name": "train", "resourceVersion": "1"},
        "spec": {"minMember": 1},
    }
    cluster.add_object("scheduling.x-k8s.io/podgroups", group)
    cluster.add_nodes([make_node(n).zone(z).capacity(cpu="8").obj() for n, z, _ in LAYOUT])
    cluster.add_pod(member("m0").scheduler("netsched").node("b2").obj())
    ex = cluster.scheduler.explainer.explain(member("m1").scheduler("netsched").info())
    assert ex.weights["GangTopology"] == 3
    by = {n.node: n for n in ex.nodes}
    assert "GangTopology" in by["b1"].scores and "GangTopology" in ex.table()
    # The gang holds zone zb (its member m0 is on b2): a later member goes there, nowhere else.
    assert not by["a1"].feasible and by["a1"].filters["PreFilter"] == "not in the PreFilter node set"
    assert ex.winner in ("b1", "b2")


def test_a_released_member_no_longer_pulls_the_next_one(rig: Rig) -> None:
    """Locality counts THE placed members (GangManager.placed): m0, released at Permit and
    still on b1 until its binding cycle unreserves it, pulls nobody into zone b."""
    from netsched.plugins.gangs import GangOutcome, PodGroup

    args = GangTopologyArgs(link_load_weight=0.0)
    p, snap = rig.build([member("m0").node("b1"), member("m1").node("a1")], args)
    rig.load(p, IDLE, SPEED)
    assert score_outcomes(p, member("m2").info(), snap) == [50, 50, 50, 50]
    (m0,) = [m for m in p.gangs.group_members("default", "train") if m.name == "m0"]
    p.gangs.release(PodGroup("default", "train", 3), "m2 fits nowhere", GangOutcome.REJECTED, [m0.uid])
    assert score_outcomes(p, member("m2").info(), snap) == [100, 100, 0, 0]
