"""The public testing kit: synthetic exporter output, prometheus config, missing-binary policy."""

from __future__ import annotations

import json
import urllib.request

import pytest

from netsched.testing import prometheus as promkit
from netsched.testing.exporter import FakeNode, SyntheticExporter


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def series(text: str, name: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line.rsplit(" ", 1)
            out[labels[len(name) :]] = float(value)
    return out


def test_counters_advance_at_the_set_rate() -> None:
    clock = Clock()
    ex = SyntheticExporter([FakeNode("a", "10.0.0.1", cpus=2)], clock=clock)
    ex.set_load("a", rx=1000.0, cpu=0.25, memory=0.5)
    clock.t += 10
    ex.set_load("a", rx=3000.0)  # a rate change keeps the counter continuous
    clock.t += 10
    text = ex.render()
    rx = series(text, "node_network_receive_bytes_total")
    assert rx['{node="a",instance="10.0.0.1:9100",device="eth0"}'] == 10 * 1000 + 10 * 3000
    assert rx['{node="a",instance="10.0.0.1:9100",device="lo"}'] > 0  # noise to be excluded
    cpu = series(text, "node_cpu_seconds_total")
    assert cpu['{node="a",instance="10.0.0.1:9100",cpu="1",mode="idle"}'] == pytest.approx(20 * 0.75)
    mem = series(text, "node_memory_MemAvailable_bytes")
    assert list(mem.values()) == [4 * 1024**3]
    assert "# TYPE node_network_speed_bytes gauge" in text


def test_label_modes() -> None:
    only_instance = SyntheticExporter([FakeNode("a", "10.0.0.1")], node_label=None).render()
    assert 'node_memory_MemTotal_bytes{instance="10.0.0.1:9100"}' in only_instance
    only_label = SyntheticExporter(
        [FakeNode("a", "10.0.0.1")], node_label="kubernetes_node", instance_port=None
    )
    assert 'node_memory_MemTotal_bytes{kubernetes_node="a"}' in only_label.render()


def test_exporter_serves_http() -> None:
    with SyntheticExporter([FakeNode("a", "10.0.0.1")]) as ex:
        with urllib.request.urlopen(f"http://{ex.target}/metrics", timeout=5) as r:
            assert r.status == 200 and b"node_cpu_seconds_total" in r.read()
        assert ex.scrapes == 1


def test_scrape_config_honours_labels_and_interval() -> None:
    cfg = json.loads(promkit.scrape_config(["127.0.0.1:1"], "1s", True))
    job = cfg["scrape_configs"][0]
    assert job["honor_labels"] is True and job["static_configs"] == [{"targets": ["127.0.0.1:1"]}]
    assert cfg["global"]["scrape_interval"] == "1s" == cfg["global"]["scrape_timeout"]


def test_missing_binary_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(promkit, "prometheus_binary", lambda: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="binary is not installed"):
        promkit.require_prometheus()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        promkit.require_prometheus()
