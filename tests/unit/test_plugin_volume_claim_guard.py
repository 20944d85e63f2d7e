"""VolumeClaimGuard: pods with PVCs fail PreFilter with an actionable message; others skip."""

from __future__ import annotations

from netsched.framework.cycle_state import CycleState
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.testing.builders import make_pod
from netsched.testing.framework import build_plugin
from plugins.volume_claim_guard import VolumeClaimGuard


def test_pod_without_claims_skips() -> None:
    res, st = build_plugin(VolumeClaimGuard).pre_filter(CycleState(), make_pod("p").info(), Snapshot())
    assert res is None and st.is_skip


def test_pod_with_claims_is_unresolvable() -> None:
    res, st = build_plugin(VolumeClaimGuard).pre_filter(
        CycleState(), make_pod("p").pvc("data").info(), Snapshot()
    )
    assert res is None
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == [
        "pod has PersistentVolumeClaims (spec.volumes[].persistentVolumeClaim), which netsched does not "
        "schedule yet: use the default scheduler for this pod"
    ]


def test_extension_points_and_name() -> None:
    from netsched.framework.interfaces import extension_points_of

    assert VolumeClaimGuard.name == "VolumeClaimGuard"
    assert extension_points_of(VolumeClaimGuard) == ["preFilter"]
