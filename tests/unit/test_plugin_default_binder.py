"""DefaultBinder: binds through the API, turns failures into Error, accepts "already bound here"."""

from __future__ import annotations

from netsched.framework.cycle_state import CycleState
from netsched.framework.status import Code
from netsched.plugins.default_binder import DefaultBinder
from netsched.testing.builders import make_pod
from netsched.testing.framework import build_plugin
from netsched.testing.handle import MemoryAPI


class Conflict(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.status = 409


def test_binds_through_api() -> None:
    api = MemoryAPI()
    pod = make_pod("p").info()
    assert build_plugin(DefaultBinder, api=api).bind(CycleState(), pod, "n1").ok
    assert api.calls == [("bind", "default/p", "n1")]


def test_api_failure_is_error() -> None:
    api = MemoryAPI()
    api.fail_bind = ConnectionError("connection refused")
    st = build_plugin(DefaultBinder, api=api).bind(CycleState(), make_pod("p").info(), "n1")
    assert st.code == Code.ERROR and st.reasons == ["connection refused"] and st.plugin == "DefaultBinder"
    assert isinstance(st.error, ConnectionError)


def test_conflict_already_bound_to_this_node_is_success() -> None:
    api = MemoryAPI()
    api.fail_bind = Conflict(
        'Operation cannot be fulfilled on pods/binding "p": pod default/p is already assigned to node "n1"'
    )
    assert build_plugin(DefaultBinder, api=api).bind(CycleState(), make_pod("p").info(), "n1").ok


def test_conflict_bound_elsewhere_is_error() -> None:
    api = MemoryAPI()
    api.fail_bind = Conflict(
        'Operation cannot be fulfilled on pods/binding "p": pod default/p is already assigned to node "n2"'
    )
    assert (
        build_plugin(DefaultBinder, api=api).bind(CycleState(), make_pod("p").info(), "n1").code == Code.ERROR
    )
    # A 409 for another reason (UID precondition) is an error too.
    api.fail_bind = Conflict("Precondition failed: UID in precondition: a, UID in object: b")
    assert (
        build_plugin(DefaultBinder, api=api).bind(CycleState(), make_pod("p").info(), "n1").code == Code.ERROR
    )


def test_fake_api_server_error_shape_is_understood() -> None:
    from netsched.testing.fakeapi import StatusError

    api = MemoryAPI()
    api.fail_bind = StatusError(409, "Conflict", 'pod default/p is already assigned to node "n1"')
    assert build_plugin(DefaultBinder, api=api).bind(CycleState(), make_pod("p").info(), "n1").ok


def test_extension_points_and_name() -> None:
    from netsched.framework import extension_points_of

    assert DefaultBinder.name == "DefaultBinder"
    assert extension_points_of(DefaultBinder) == ["bind"]
