"""`netsched simulate` with storage: claims per pod, StorageClasses and static PVs in a scenario."""

from __future__ import annotations

import pytest

from netsched.app import build_registry
from netsched.config import ConfigError, load_config
from netsched.simulate.engine import simulate
from netsched.simulate.scenario import load_scenario

pytestmark = pytest.mark.integration

SCENARIO = """
name: volumes
nodes: "6 nodes, 8 cpu, 32Gi, 10 Gbit, 3 zones"
pods:
  - count: 8
    namePrefix: db
    cpu: 1
    memory: 1Gi
  - count: 1
    namePrefix: static
    cpu: 1
    memory: 1Gi
volumes:
  storageClasses:
    - metadata: {name: fast}
      provisioner: csi.example.com
      volumeBindingMode: WaitForFirstConsumer
      allowedTopologies:
        - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [zone-1]}]
    - metadata: {name: local}
      provisioner: kubernetes.io/no-provisioner
      volumeBindingMode: WaitForFirstConsumer
  persistentVolumes:
    - metadata: {name: disk-on-node-05}
      spec:
        capacity: {storage: 100Gi}
        accessModes: [ReadWriteOnce]
        storageClassName: local
        nodeAffinity:
          required:
            nodeSelectorTerms:
              - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-05]}]
      status: {phase: Available}
  persistentVolumeClaims:
    - metadata: {name: static-00-disk}
      spec: {storageClassName: local, accessModes: [ReadWriteOnce], resources: {requests: {storage: 50Gi}}}
  claimPerPod: {storageClass: fast, size: 10Gi}
"""


def test_claims_follow_allowed_topologies_and_static_pvs() -> None:
    scenario = load_scenario(SCENARIO)
    # The static pod uses the static claim, not a claim of its own.
    static = next(p for p in scenario.pods if p["metadata"]["name"] == "static-00")
    static["spec"]["volumes"] = [{"name": "disk", "persistentVolumeClaim": {"claimName": "static-00-disk"}}]
    registry = build_registry()
    run = simulate(scenario, load_config("", registry), registry, label="default")
    assert run.unscheduled == {}
    zone1 = {
        n["metadata"]["name"]
        for n in scenario.nodes
        if n["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-1"
    }
    assert zone1 == {"node-01", "node-04"}
    for i in range(8):
        assert run.placements[f"default/db-{i:02d}"] in zone1
    assert run.placements["default/static-00"] == "node-05"


def test_scenario_volume_errors_have_paths() -> None:
    bad = SCENARIO.replace("- metadata: {name: disk-on-node-05}", "- metadata: {}")
    with pytest.raises(ConfigError) as e:
        load_scenario(bad)
    assert "volumes.persistentVolumes[0].metadata.name" in str(e.value)
