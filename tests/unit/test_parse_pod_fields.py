"""parse_pod's string fields: absent, null or "" take kube's default; any other non-string is
the pod's fault, reported with the field's path (never a PodInfo carrying a number as a name)."""

from __future__ import annotations

from typing import Any

import pytest

from netsched.framework.parse import PodParseError, parse_pod


def pod(**sections: dict[str, Any]) -> dict[str, Any]:
    raw: dict[str, Any] = {"metadata": {"name": "p", "uid": "u1"}, "spec": {"containers": [{"name": "c"}]}}
    for section, fields in sections.items():
        raw.setdefault(section, {}).update(fields)
    return raw


@pytest.mark.parametrize(
    ("section", "field", "attr", "default"),
    [
        ("metadata", "namespace", "namespace", "default"),
        ("spec", "schedulerName", "scheduler_name", "default-scheduler"),
        ("spec", "nodeName", "node_name", ""),
        ("status", "nominatedNodeName", "nominated_node_name", ""),
        ("status", "phase", "phase", "Pending"),
    ],
)
def test_a_string_field_defaults_when_empty_and_rejects_other_types(
    section: str, field: str, attr: str, default: str
) -> None:
    for empty in (None, ""):
        assert getattr(parse_pod(pod(**{section: {field: empty}})), attr) == default
    assert getattr(parse_pod(pod(**{section: {field: "x"}})), attr) == "x"
    for bad in (5, ["x"], {"a": "b"}):
        with pytest.raises(PodParseError) as e:
            parse_pod(pod(**{section: {field: bad}}))
        assert e.value.path == f"{section}.{field}"


def test_toleration_key_and_value_and_host_ip_must_be_strings() -> None:
    with pytest.raises(PodParseError) as e:
        parse_pod(pod(spec={"tolerations": [{"key": 1, "operator": "Equal"}]}))
    assert e.value.path == "spec.tolerations[0].key"
    with pytest.raises(PodParseError) as e:
        parse_pod(pod(spec={"tolerations": [{"key": "k", "value": 2}]}))
    assert e.value.path == "spec.tolerations[0].value"
    ports = [{"hostPort": 80, "hostIP": 7}]
    with pytest.raises(PodParseError) as e:
        parse_pod(pod(spec={"containers": [{"name": "c", "ports": ports}]}))
    assert e.value.path == "spec.containers[0].ports[0].hostIP"
    ok = parse_pod(pod(spec={"containers": [{"name": "c", "ports": [{"hostPort": 80}]}]}))
    assert [(p.host_ip, p.port) for p in ok.host_ports] == [("0.0.0.0", 80)]
