"""LvmVolumeCapacity: TopoLVM's free space per device class, rule by rule, both forms checked equal."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from netsched.app import build_registry
from netsched.config import load_config
from netsched.framework import (
    Code,
    CycleState,
    FilterPlugin,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Rejection,
    Snapshot,
    Status,
)
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.registry import RegistryError
from netsched.plugins.lvm_volume_capacity import LvmVolumeCapacity, LvmVolumeCapacityArgs
from netsched.plugins.lvm_volume_capacity import plugin as lvm_plugin
from netsched.plugins.lvm_volume_capacity.plugin import capacity_grew, format_bytes, node_free
from netsched.plugins.volume_binding import VolumeBinding
from netsched.testing.agreement import filter_statuses, filter_verdicts
from netsched.testing.builders import NodeBuilder, make_node, make_pod, node_infos
from netsched.testing.framework import build_framework, plugin_of, schedule_pod
from netsched.testing.volumes import pvc, storage_class, volume_objects

GI = 1 << 30
SSD = storage_class("ssd", provisioner="topolvm.io", parameters={"topolvm.io/device-class": "ssd"})
HDD_LEGACY = storage_class(
    "hdd", provisioner="topolvm.cybozu.com", parameters={"topolvm.cybozu.com/device-class": "hdd"}
)
DEFAULT = storage_class("lvm", provisioner="topolvm.io")  # no device class: the node's default
OTHER = storage_class("ebs", provisioner="ebs.csi.aws.com")
CLASSES = [SSD, HDD_LEGACY, DEFAULT, OTHER]
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def node(name: str, **free: str) -> NodeBuilder:
    """A node publishing free bytes per device class: ssd="20Gi" (quantities in Gi for brevity)."""
    b = make_node(name)
    for dc, amount in free.items():
        key = "capacity.topolvm.io/" + ("00default" if dc == "default" else dc)
        b = b.annotation(
            key, str(int(float(amount.removesuffix("Gi")) * GI)) if amount.endswith("Gi") else amount
        )
    return b


def plugin(*claims: dict[str, Any], classes: list[dict[str, Any]] = CLASSES, **kw: Any) -> LvmVolumeCapacity:
    fwk = build_framework([LvmVolumeCapacity], objects=volume_objects(pvcs=claims, classes=classes), **kw)
    return plugin_of(fwk, LvmVolumeCapacity)


def pod_with(*claims: str) -> Any:
    p = make_pod("web-0")
    for c in claims:
        p = p.pvc(c)
    return p


NODES = [node("small", ssd="5Gi"), node("big", ssd="50Gi"), node("none"), node("exact", ssd="20Gi")]


def test_unbound_claims_must_fit_the_device_class_free_space() -> None:
    lvm = plugin(pvc("data", storage_class="ssd", size="20Gi"))
    got = filter_verdicts(lvm, pod_with("data"), NODES)
    short = (
        'node(s) did not have enough free space in LVM device class "ssd": the pod needs 20Gi; '
        "the roomiest node without enough has 5Gi (15Gi short)"
    )
    assert got == {
        "small": (UNRES, short),
        "big": "ok",
        "none": (
            UNRES,
            'node(s) did not publish free space for LVM device class "ssd" '
            "(no capacity.topolvm.io/ssd annotation)",
        ),
        "exact": "ok",  # free == need fits
    }


@pytest.mark.parametrize(
    ("claims", "pod_claims", "want"),
    [
        # Several claims of one class add up: 12Gi + 12Gi > 20Gi on "exact".
        (
            [pvc("a", storage_class="ssd", size="12Gi"), pvc("b", storage_class="ssd", size="12Gi")],
            ("a", "b"),
            {"small", "none", "exact"},
        ),
        # A claim without a request counts TopoLVM's default 1Gi.
        ([pvc("a", storage_class="ssd", size=None)], ("a",), {"none"}),
        # Bound claims and claims whose provisioning started are the driver's business.
        ([pvc("a", storage_class="ssd", size="40Gi", volume="pv-1", bound=True)], ("a",), "skip"),
        (
            [
                pvc(
                    "a",
                    storage_class="ssd",
                    size="40Gi",
                    annotations={"volume.kubernetes.io/selected-node": "big"},
                )
            ],
            ("a",),
            "skip",
        ),
        # Another provisioner, no class, an unknown class or a missing claim: not LVM's to check.
        ([pvc("a", storage_class="ebs", size="400Gi")], ("a",), "skip"),
        ([pvc("a", storage_class="", size="400Gi")], ("a",), "skip"),
        ([pvc("a", storage_class="gone", size="400Gi")], ("a",), "skip"),
        ([], ("missing",), "skip"),
    ],
    ids=[
        "summed",
        "default-size",
        "bound",
        "selected-node",
        "other-provisioner",
        "no-class",
        "unknown-class",
        "missing-claim",
    ],
)
def test_which_claims_count(claims: list[dict[str, Any]], pod_claims: tuple[str, ...], want: Any) -> None:
    got = filter_verdicts(plugin(*claims), pod_with(*pod_claims), NODES)
    if want == "skip":
        assert set(got.values()) == {"skip"}
        return
    assert {n for n, v in got.items() if v != "ok"} == want


def test_a_claim_without_a_request_needs_topolvm_default_size() -> None:
    lvm = plugin(pvc("a", storage_class="ssd", size=None), pvc("zero", storage_class="ssd", size="0"))
    got = filter_verdicts(lvm, pod_with("a", "zero"), [node("half", ssd="0.5Gi"), node("two", ssd="2Gi")])
    assert got["two"] == "ok"
    assert got["half"][1].startswith(
        'node(s) did not have enough free space in LVM device class "ssd": the pod needs 2Gi'
    )


def test_default_and_legacy_device_classes() -> None:
    # No device-class parameter: the node's default class, published as 00default. The legacy
    # provisioner, parameter key and annotation prefix are read too; the current prefix wins.
    claims = [pvc("d", storage_class="lvm", size="3Gi"), pvc("h", storage_class="hdd", size="3Gi")]
    nodes = [
        node("both", default="4Gi").annotation("capacity.topolvm.cybozu.com/hdd", str(4 * GI)),
        node("no-hdd", default="4Gi"),
        node("prefers-new", default="4Gi", hdd="4Gi").annotation("capacity.topolvm.cybozu.com/hdd", "1"),
        node("small-default", default="2Gi", hdd="4Gi"),
    ]
    got = filter_verdicts(plugin(*claims), pod_with("d", "h"), nodes)
    assert got["both"] == "ok" and got["prefers-new"] == "ok"
    assert got["no-hdd"] == (
        UNRES,
        'node(s) did not publish free space for LVM device class "hdd" (no capacity.topolvm.io/hdd annotation)',
    )
    assert got["small-default"] == (
        UNRES,
        "node(s) did not have enough free space in the default LVM device class: the pod needs 3Gi; "
        "the roomiest node without enough has 2Gi (1Gi short)",
    )


def test_each_device_class_is_checked_first_failure_reported() -> None:
    claims = [pvc("s", storage_class="ssd", size="10Gi"), pvc("h", storage_class="hdd", size="10Gi")]
    nodes = [node("ok", ssd="10Gi", hdd="10Gi"), node("hdd-short", ssd="10Gi", hdd="9Gi")]
    got = filter_verdicts(plugin(*claims), pod_with("s", "h"), nodes)
    assert got["ok"] == "ok"
    assert got["hdd-short"][1].startswith('node(s) did not have enough free space in LVM device class "hdd"')


def test_malformed_annotation_rejects_the_node_and_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    lvm = plugin(pvc("data", storage_class="ssd", size="1Gi"))
    nodes = [node("bad", ssd="lots"), node("negative", ssd="-5"), node("good", ssd="2Gi")]
    with caplog.at_level("WARNING"):
        got = filter_verdicts(lvm, pod_with("data"), nodes)
        filter_verdicts(lvm, pod_with("data"), nodes)
    bad = (UNRES, "node(s) had an invalid capacity.topolvm.io/ssd annotation (must be a byte count)")
    assert got == {"bad": bad, "negative": bad, "good": "ok"}
    logged = [r.getMessage() for r in caplog.records if "not a byte count" in r.getMessage()]
    assert len(logged) == 2 and "node=bad" in logged[0] and "value='lots'" in logged[0]


def test_each_unreadable_annotation_is_named_as_read() -> None:
    lvm = plugin(pvc("data", storage_class="ssd", size="1Gi"))
    legacy = make_node("legacy").annotation("capacity.topolvm.cybozu.com/ssd", "1Gi")  # not bytes
    got = filter_verdicts(lvm, pod_with("data"), [node("current", ssd="x"), legacy, node("fine", ssd="1Gi")])
    assert got == {
        "current": (
            UNRES,
            "node(s) had an invalid capacity.topolvm.io/ssd annotation (must be a byte count)",
        ),
        "legacy": (
            UNRES,
            "node(s) had an invalid capacity.topolvm.cybozu.com/ssd annotation (must be a byte count)",
        ),
        "fine": "ok",
    }


def test_pre_filter_reads_claims_once_and_skips_pods_without_lvm_claims() -> None:
    lvm = plugin(pvc("data", storage_class="ssd", size="1Gi"), pvc("ebs", storage_class="ebs"))
    snap = Snapshot.of(node_infos(NODES))
    state = CycleState()
    with mock.patch.object(lvm, "needs", wraps=lvm.needs) as needs:
        _, st = lvm.pre_filter(state, pod_with("data").info(), snap)
        assert st.ok
        verdicts = [lvm.filter(state, pod_with("data").info(), n).ok for n in snap.nodes]
    assert verdicts == [True, True, False, True]
    assert needs.call_count == 1  # once for the pod, not once per node
    for p in (make_pod("plain"), pod_with("ebs")):
        _, st = lvm.pre_filter(CycleState(), p.info(), snap)
        assert st.is_skip


def test_filter_enabled_alone_computes_on_first_use() -> None:
    lvm = plugin(pvc("data", storage_class="ssd", size="10Gi"))
    snap = Snapshot.of(node_infos(NODES))
    lvm.handle.set_snapshot(snap)  # type: ignore[attr-defined]
    state = CycleState()
    verdicts = {n.name: lvm.filter(state, pod_with("data").info(), n) for n in snap.nodes}
    assert [n for n, st in verdicts.items() if st.ok] == ["big", "exact"]
    assert "the roomiest node without enough has 5Gi (5Gi short)" in verdicts["small"].reasons[0]


def rejections(got: list[Rejection]) -> list[tuple[list[bool], tuple[str, ...], Code]]:
    return [(r.mask.tolist(), r.reasons, r.code) for r in got]


def malformed_ssd() -> dict[str, Any]:
    bad = storage_class("ssd", provisioner="topolvm.io")
    bad["parameters"] = {"topolvm.io/device-class": 7}
    return bad


@pytest.mark.parametrize(
    ("claims", "classes", "pod_claims", "rejected"),
    [
        ([], CLASSES, (), False),  # no claims: the plugin has no answer to give
        ([pvc("ebs", storage_class="ebs")], CLASSES, ("ebs",), False),  # claims needing no LVM space
        ([pvc("data", storage_class="ssd")], [malformed_ssd()], ("data",), True),  # unreadable class
    ],
    ids=["no-claims", "no-lvm-claims", "unreadable-class"],
)
def test_batch_filter_gives_the_per_node_answer_at_once_when_nothing_is_prepared(
    claims: list[dict[str, Any]], classes: list[dict[str, Any]], pod_claims: tuple[str, ...], rejected: bool
) -> None:
    # Enabled at filter only (no PreFilter): one answer for every node, equal to filter()'s per node.
    lvm = plugin(*claims, classes=classes)
    pod = pod_with(*pod_claims).info()
    snap = Snapshot.of(node_infos(NODES))
    lvm.handle.set_snapshot(snap)  # type: ignore[attr-defined]
    for idx in (snap.all_rows, snap.all_rows[1:3], snap.all_rows[:0]):
        batch = rejections(lvm.filter_nodes(CycleState(), pod, snap, idx))
        per_node = rejections(FilterPlugin.filter_nodes(lvm, CycleState(), pod, snap, idx))
        assert batch == per_node
        assert bool(batch) == (rejected and len(idx) > 0)
    if rejected:
        statuses = filter_statuses(lvm, pod, snap)  # both forms, on one state
        assert {st.code for st in statuses.values()} == {UNRES}
        assert statuses[0].reasons == ["StorageClass ssd: parameters: expected a map of strings"]


def test_filter_enabled_alone_batch_reads_the_snapshot_it_is_given() -> None:
    # No PreFilter: the batch form prepares over its own snapshot (the cycle's), and filter()
    # on the same state answers alike.
    lvm = plugin(pvc("data", storage_class="ssd", size="10Gi"))
    snap = Snapshot.of(node_infos(NODES))
    statuses = filter_statuses(lvm, pod_with("data").info(), snap)
    assert [snap.nodes[row].name for row, st in statuses.items() if st.ok] == ["big", "exact"]
    assert "the roomiest node without enough has 5Gi (5Gi short)" in statuses[0].reasons[0]


def test_the_not_enough_space_reason_is_built_only_when_a_node_is_short() -> None:
    lvm = plugin(pvc("data", storage_class="ssd", size="5Gi"))
    pod = pod_with("data").info()
    fits = Snapshot.of(node_infos([node("a", ssd="5Gi"), node("b", ssd="50Gi"), node("none")]))
    short = Snapshot.of(node_infos([node("a", ssd="1Gi"), node("b", ssd="2Gi"), node("c", ssd="9Gi")]))
    with mock.patch.object(lvm_plugin, "_not_enough", wraps=lvm_plugin._not_enough) as built:
        state = CycleState()
        lvm.pre_filter(state, pod, fits)
        assert len(lvm.filter_nodes(state, pod, fits, fits.all_rows)) == 1  # "none" did not publish
        assert built.call_count == 0
        state = CycleState()
        lvm.pre_filter(state, pod, short)
        got = lvm.filter_nodes(state, pod, short, short.all_rows)
        assert [lvm.filter(state, pod, n).ok for n in short.nodes] == [False, False, True]
    assert built.call_count == 1  # once for the pod, shared by both forms and both nodes
    assert rejections(got) == [
        (
            [True, True, False],
            (
                'node(s) did not have enough free space in LVM device class "ssd": the pod needs 5Gi; '
                "the roomiest node without enough has 2Gi (3Gi short)",
            ),
            UNRES,
        )
    ]


def test_a_malformed_storage_class_fails_pre_filter_naming_the_field() -> None:
    bad = storage_class("ssd", provisioner="topolvm.io")
    bad["parameters"] = {"topolvm.io/device-class": 7}
    lvm = plugin(pvc("data", storage_class="ssd"), classes=[bad])
    _, st = lvm.pre_filter(CycleState(), pod_with("data").info(), Snapshot.of(node_infos(NODES)))
    assert st.code == UNRES
    assert st.reasons == ["StorageClass ssd: parameters: expected a map of strings"]


def test_configured_provisioners() -> None:
    args = LvmVolumeCapacityArgs(("lvm.csi.example.com",))
    mine = storage_class("mine", provisioner="lvm.csi.example.com")
    lvm = plugin(
        pvc("a", storage_class="mine", size="10Gi"),
        pvc("b", storage_class="ssd", size="900Gi"),
        classes=[mine, SSD],
        args={"LvmVolumeCapacity": args},
    )
    got = filter_verdicts(lvm, pod_with("a", "b"), [node("n", default="10Gi", ssd="1Gi")])
    assert got == {"n": "ok"}  # "b" is TopoLVM's, which this profile does not check


def test_schedules_through_the_runtime_with_volume_binding() -> None:
    objs = volume_objects(pvcs=[pvc("data", storage_class="ssd", size="20Gi")], classes=CLASSES)
    fwk = build_framework([VolumeBinding, LvmVolumeCapacity], objects=objs)
    out = schedule_pod(pod_with("data"), NODES[:3], framework=fwk)
    assert out.node == "big"


# ---------------------------------------------------------------- args


def decode(raw: Any) -> tuple[LvmVolumeCapacityArgs, list[str]]:
    errs = ErrorList()
    args = LvmVolumeCapacityArgs.decode(Fields(raw, "args", errs))
    return args, [str(e) for e in errs]


def test_args_default_to_topolvm_and_round_trip() -> None:
    assert decode({}) == (LvmVolumeCapacityArgs(("topolvm.io", "topolvm.cybozu.com")), [])
    assert decode({"provisioners": None})[1] == []
    args, errs = decode({"provisioners": ["lvm.example.com"]})
    assert errs == [] and args.provisioners == ("lvm.example.com",)
    assert decode(args.encode())[0] == args


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ({"provisioners": []}, ["args.provisioners: Required value: name at least one provisioner"]),
        ({"provisioners": "topolvm.io"}, ['args.provisioners: Invalid value: "str": must be a list']),
        (
            {"provisioners": ["a", ""]},
            ['args.provisioners[1]: Invalid value: "": must be a non-empty string'],
        ),
        ({"provisioners": ["a", "a"]}, ['args.provisioners[1]: Duplicate value: "a"']),
        ({"provisioner": ["a"]}, ["args.provisioner: Unknown field"]),
    ],
)
def test_args_errors_name_the_field(raw: Any, want: list[str]) -> None:
    _, errs = decode(raw)
    assert len(errs) == len(want) and all(e.startswith(w) for e, w in zip(errs, want, strict=True)), errs


# ---------------------------------------------------------------- queueing hints


def info(b: NodeBuilder) -> NodeInfo:
    return b.info()


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, node("n", ssd="1Gi"), QueueingHint.QUEUE),  # a node publishing LVM space joins
        (None, node("n"), QueueingHint.SKIP),  # a node without TopoLVM joins
        (node("n", ssd="1Gi"), node("n", ssd="2Gi"), QueueingHint.QUEUE),  # free space grew
        (node("n", ssd="2Gi"), node("n", ssd="1Gi"), QueueingHint.SKIP),  # it shrank
        (node("n", ssd="1Gi"), node("n", ssd="1Gi", hdd="1Gi"), QueueingHint.QUEUE),  # a class appeared
        (node("n", ssd="lots"), node("n", ssd="1Gi"), QueueingHint.QUEUE),  # became readable
        (node("n", ssd="1Gi"), node("n", ssd="1Gi").annotation("other", "x"), QueueingHint.SKIP),
        (node("n"), node("n").annotation("capacity.topolvm.cybozu.com/ssd", "5"), QueueingHint.QUEUE),
    ],
)
def test_node_hint(old: NodeBuilder | None, new: NodeBuilder, want: QueueingHint) -> None:
    pod = pod_with("data").info()
    assert capacity_grew(pod, info(old) if old else None, info(new)) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, node("n", ssd="-5"), QueueingHint.SKIP),  # joins with a negative (unreadable) value
        (node("n"), node("n", ssd="-5"), QueueingHint.SKIP),  # an unreadable value appears
        (node("n", ssd="-10"), node("n", ssd="-5"), QueueingHint.SKIP),  # still unreadable
        (node("n", ssd="-5"), node("n", ssd="0"), QueueingHint.QUEUE),  # became readable
        (node("n", ssd="1Gi"), node("n", ssd="-5"), QueueingHint.SKIP),  # became unreadable
    ],
)
def test_node_hint_reads_negative_free_space_as_filter_does(
    old: NodeBuilder | None, new: NodeBuilder, want: QueueingHint
) -> None:
    # Filter rejects a node whose annotation is negative as malformed; the hint reads it alike.
    pod = pod_with("data").info()
    assert capacity_grew(pod, info(old) if old else None, info(new)) == want
    assert (node_free(info(new), "ssd")[0] >= 0) == (want == QueueingHint.QUEUE)


def test_registers_node_annotation_claim_and_class_events() -> None:
    events = plugin().events_to_register()
    labels = {(e.event.resource, int(e.event.action)) for e in events}
    from netsched.framework import NODE, ActionType

    assert (NODE, int(ActionType.ADD | ActionType.UPDATE_NODE_ANNOTATION)) in labels
    assert ("PersistentVolumeClaim", int(ActionType.ADD | ActionType.UPDATE)) in labels
    assert ("StorageClass", int(ActionType.ADD)) in labels


def test_format_bytes() -> None:
    assert format_bytes(20 * GI) == "20Gi"
    assert format_bytes(GI + GI // 2) == "1.5Gi"
    assert format_bytes(GI + 1) == "1.01Gi"  # rounded up: a need never looks smaller
    assert format_bytes(GI + 1, round_up=False) == "1Gi"
    assert format_bytes(3 << 40) == "3Ti" and format_bytes(512) == "512 bytes"


# ---------------------------------------------------------------- replacing it


class Mine(FilterPlugin):
    name = "LvmVolumeCapacity"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


class Other(FilterPlugin):
    name = "NodeName"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.success()


def test_an_out_of_tree_plugin_of_that_name_replaces_it() -> None:
    assert build_registry()["LvmVolumeCapacity"] is LvmVolumeCapacity
    assert build_registry([Mine])["LvmVolumeCapacity"] is Mine


def test_other_in_tree_names_still_refuse_duplicates() -> None:
    with pytest.raises(RegistryError, match="a plugin named 'NodeName' already exists"):
        build_registry([Other])


def test_readme_example_loads() -> None:
    from pathlib import Path

    import yaml

    readme = (
        Path(__file__).resolve().parents[2] / "plugins" / "lvm_volume_capacity" / "README.md"
    ).read_text()
    blocks = [b.split("```", 1)[0] for b in readme.split("```yaml\n")[1:]]
    assert blocks
    for block in blocks:
        doc = yaml.safe_load(block)
        if doc.get("kind") != "KubeSchedulerConfiguration":
            continue
        cfg = load_config(block, build_registry())
        assert cfg.profiles[0].args("LvmVolumeCapacity") == LvmVolumeCapacityArgs(("topolvm.io",))
