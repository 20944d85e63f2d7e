"""SchedulingGates: gated pods wait with kube's message."""

from __future__ import annotations

from netsched.framework.status import Code
from netsched.plugins.scheduling_gates import SchedulingGates
from netsched.testing.builders import make_pod
from netsched.testing.framework import build_plugin


def test_ungated_pod_is_admitted() -> None:
    assert build_plugin(SchedulingGates).pre_enqueue(make_pod("p").info()).ok


def test_gated_pod_waits_with_gate_list() -> None:
    st = build_plugin(SchedulingGates).pre_enqueue(make_pod("p").gate("example.com/quota").gate("b").info())
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ["waiting for scheduling gates: [example.com/quota b]"]
    assert st.plugin == "SchedulingGates"


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert SchedulingGates.name == "SchedulingGates"
    assert extension_points_of(SchedulingGates) == ["preEnqueue"]
