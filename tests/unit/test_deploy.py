"""deploy/ (kustomize base, optional components, examples), its docs, the Dockerfile and the RBAC in them.

The RBAC check that compares the ClusterRole with the calls netsched really
makes belongs with the end-to-end tests: netsched.testing.rbac turns deploy/
into grants and FakeAPIServer.requests into the rules they need.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from netsched.testing.kustomize import load_kustomization
from netsched.testing.rbac import Grant, allows, grants_from_deploy, rules_from_deploy

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OPTIONAL = sorted(p.parent for p in (DEPLOY / "optional").glob("*/kustomization.yaml"))
SERVICEMONITOR = DEPLOY / "optional" / "servicemonitor"
DASHBOARDS = DEPLOY / "optional" / "grafana-dashboards"
NAMESPACE = "netsched-system"
SCHEDULER_NAME = "netsched"
METRIC_PLUGINS = ("NetworkTraffic", "LoadAware", "LoadThreshold", "TrafficAffinity", "Rebalancer")
CONFIG_MAP = "netsched-config"  # the KubeSchedulerConfiguration's; rebalancer-state.yaml ships another
STATE_CONFIG_MAP = "netsched-rebalancer"

# The least-privilege set, spelled out: changing it must be a deliberate edit here too.
EXPECTED_CLUSTER_RULES = {
    ("", "nodes", "list"),
    ("", "nodes", "watch"),
    ("", "pods", "get"),
    ("", "pods", "list"),
    ("", "pods", "watch"),
    ("", "pods", "delete"),
    ("", "pods/binding", "create"),
    ("", "pods/eviction", "create"),
    ("", "pods/status", "patch"),
    ("", "events", "create"),
    ("", "events", "patch"),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
    ("policy", "poddisruptionbudgets", "list"),
    ("policy", "poddisruptionbudgets", "watch"),
    ("", "namespaces", "list"),
    ("", "namespaces", "watch"),
    # Delegated authn/authz of the HTTPS endpoints (system:auth-delegator).
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
    # The volume plugins' informers, and VolumeBinding's two PreBind writes.
    ("", "persistentvolumes", "list"),
    ("", "persistentvolumes", "watch"),
    ("", "persistentvolumes", "patch"),
    ("", "persistentvolumeclaims", "list"),
    ("", "persistentvolumeclaims", "watch"),
    ("", "persistentvolumeclaims", "patch"),
    ("storage.k8s.io", "storageclasses", "list"),
    ("storage.k8s.io", "storageclasses", "watch"),
    ("storage.k8s.io", "csinodes", "list"),
    ("storage.k8s.io", "csinodes", "watch"),
    ("storage.k8s.io", "csidrivers", "list"),
    ("storage.k8s.io", "csidrivers", "watch"),
    ("storage.k8s.io", "csistoragecapacities", "list"),
    ("storage.k8s.io", "csistoragecapacities", "watch"),
}
EXPECTED_LEASE_GRANTS = {
    Grant("coordination.k8s.io", "leases", "create", NAMESPACE, ""),
    Grant("coordination.k8s.io", "leases", "get", NAMESPACE, "netsched"),
    Grant("coordination.k8s.io", "leases", "update", NAMESPACE, "netsched"),
}
# The Rebalancer's state (plugins/rebalancer/state.py: Store.load gets, Store.save merge-patches;
# it never creates, lists or watches): that one ConfigMap, in netsched's namespace only.
EXPECTED_STATE_GRANTS = {
    Grant("", "configmaps", "get", NAMESPACE, STATE_CONFIG_MAP),
    Grant("", "configmaps", "patch", NAMESPACE, STATE_CONFIG_MAP),
}


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def base() -> list[dict[str, Any]]:
    return load_kustomization(DEPLOY)


def one(kind: str, objects: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    found = [o for o in (objects if objects is not None else base()) if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def config_map(objects: list[dict[str, Any]] | None = None, name: str = CONFIG_MAP) -> dict[str, Any]:
    (found,) = [
        o
        for o in (objects if objects is not None else base())
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name
    ]
    return found


def scheduler_config_text() -> str:
    text: str = config_map()["data"]["config.yaml"]
    return text


def container() -> dict[str, Any]:
    spec = one("Deployment")["spec"]["template"]["spec"]
    assert len(spec["containers"]) == 1
    c: dict[str, Any] = spec["containers"][0]
    return c


# --- files --------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(DEPLOY.rglob("*.yaml")), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_yaml_parses(path: Path) -> None:
    docs = documents(path)
    assert docs, f"{path} is empty"
    for doc in docs:
        assert doc.get("apiVersion") and doc.get("kind"), path
        if doc["kind"] != "Kustomization":
            assert doc["metadata"]["name"], path


@pytest.mark.parametrize(
    "kustomization", sorted(DEPLOY.rglob("kustomization.yaml")), ids=lambda p: str(p.relative_to(DEPLOY))
)
def test_kustomizations_list_files_that_exist(kustomization: Path) -> None:
    resources = yaml.safe_load(kustomization.read_text())["resources"]
    assert resources
    for entry in resources:
        assert (kustomization.parent / entry).exists(), f"{kustomization}: {entry} is missing"


def test_base_applies_without_prometheus_operator_crds() -> None:
    kinds = {o["kind"] for o in base()}
    assert "ServiceMonitor" not in kinds
    assert {o["apiVersion"].split("/")[0] for o in base()} <= {
        "v1",
        "apps",
        "policy",
        "rbac.authorization.k8s.io",
    }
    assert one("ServiceMonitor", documents(DEPLOY / "optional/servicemonitor/servicemonitor.yaml"))


def test_every_namespaced_object_is_in_netsched_system() -> None:
    for obj in base():
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]["name"]
    assert one("Namespace")["metadata"]["name"] == NAMESPACE


@pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl not installed: kustomize rendering not checked"
)
@pytest.mark.parametrize("directory", [DEPLOY, *OPTIONAL], ids=lambda p: str(p.relative_to(DEPLOY)) or "base")
def test_kubectl_kustomize_renders(directory: Path) -> None:
    assert kubectl_kustomize(directory)


@pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl not installed: kustomize rendering not compared"
)
@pytest.mark.parametrize("directory", OPTIONAL, ids=lambda p: p.name)
def test_optional_components_render_as_kustomize_renders_them(directory: Path) -> None:
    """netsched.testing.kustomize, which the tests read deploy/ through, agrees with kustomize itself
    (the base uses `labels` and `images`, which it does not render)."""

    def by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
        return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}

    assert by_key(load_kustomization(directory)) == by_key(kubectl_kustomize(directory))


def kubectl_kustomize(directory: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


# --- the scheduler configuration ---------------------------------------------


def test_config_map_holds_a_kube_scheduler_configuration() -> None:
    config = yaml.safe_load(scheduler_config_text())
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["profiles"][0]["schedulerName"] == SCHEDULER_NAME
    le = config["leaderElection"]
    assert le["leaderElect"] is True
    assert (le["resourceNamespace"], le["resourceName"]) == (NAMESPACE, "netsched")
    enabled = {p["name"]: p.get("weight") for p in config["profiles"][0]["plugins"]["multiPoint"]["enabled"]}
    assert enabled == {
        "NetworkTraffic": 3,
        "LoadAware": 2,
        "LoadThreshold": None,
        "TrafficAffinity": 10,
        "Rebalancer": None,
    }
    args = {pc["name"]: pc["args"] for pc in config["profiles"][0]["pluginConfig"]}
    assert set(args) == set(METRIC_PLUGINS)
    for name in METRIC_PLUGINS:
        prometheus = args[name]["prometheus"]
        assert prometheus["prometheusAddress"] == "http://prometheus-k8s.monitoring.svc:9090"
        assert prometheus["stalePolicy"] in ("failOpen", "failClosed")


def test_config_map_loads_through_netsched_config() -> None:
    """Full decoding and validation, with every plugin args decoder."""
    config = pytest.importorskip("netsched.config", reason="netsched.config is not written yet")
    registry_module = importlib.import_module("netsched.plugins.registry")
    from netsched.framework.registry import Registry

    registry = Registry(registry_module.in_tree_plugins())
    missing = [name for name in METRIC_PLUGINS if name not in registry]
    assert not missing, f"plugins/registry.py does not list {missing}"
    cfg = config.load_config(scheduler_config_text(), registry)
    profile = cfg.profiles[0]
    assert profile.scheduler_name == SCHEDULER_NAME
    assert profile.score_weights()["NetworkTraffic"] == 3
    assert profile.score_weights()["LoadAware"] == 2
    assert cfg.leader_election.resource_name == "netsched"
    assert cfg.leader_election.resource_namespace == NAMESPACE


def _registry() -> Any:
    from netsched.app import build_registry

    return build_registry()


def test_the_weights_docs_name_are_the_config_maps() -> None:
    """One number per plugin, from one place: deploy/configmap.yaml; deploy/README.md's "Tuning the
    weights" and the TrafficAffinity README's example say the same."""
    from netsched.config import load_config

    weights = load_config(scheduler_config_text(), _registry()).profiles[0].score_weights()
    tuning = (DEPLOY / "README.md").read_text().split("### Tuning the weights", 1)[1].split("\n- ", 1)[0]
    said = {
        name: int(n) for name, n in re.findall(r"(\w+)\s+with\s+weight\s+(\d+)", " ".join(tuning.split()))
    }
    assert set(said) == {"NetworkTraffic", "LoadAware", "TrafficAffinity"}, said
    assert said == {name: weights[name] for name in said}
    plugin_readme = (ROOT / "plugins" / "traffic_affinity" / "README.md").read_text()
    assert f"- name: TrafficAffinity\n            weight: {weights['TrafficAffinity']}" in plugin_readme


def test_the_commented_levels_line_is_a_working_rack_list_as_gang_topologys() -> None:
    from netsched.config import load_config

    text = scheduler_config_text()
    (commented,) = re.findall(r"\n( +)# (levels: \[.*\])\n", text)
    indent, line = commented
    assert f"\n{indent}levels: [topology.kubernetes.io/zone]\n" in text  # the default stays zone only
    racks = text.replace(
        f"{indent}levels: [topology.kubernetes.io/zone]\n{indent}# {line}", f"{indent}{line}"
    )
    cfg = load_config(racks, _registry())
    args = cfg.profiles[0].args("TrafficAffinity")
    assert args is not None
    levels = args.encode()["levels"]
    assert levels == ["topology.kubernetes.io/zone", "example.com/rack"]
    # GangTopology's shipped example names the same levels.
    gang = yaml.safe_load((ROOT / "netsched" / "examples" / "racks-config.yaml").read_text())
    gang_args = next(p["args"] for p in gang["profiles"][0]["pluginConfig"] if p["name"] == "GangTopology")
    assert gang_args["levels"] == levels


def test_the_istio_pod_monitor_scrapes_the_merged_metrics_with_istios_relabelling() -> None:
    (monitor,) = [o for o in load_kustomization(DEPLOY / "optional" / "istio") if o["kind"] == "PodMonitor"]
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/stats/prometheus"
    steps = endpoint["relabelings"]
    assert [r["action"] for r in steps] == [
        "keep",
        "keep",
        "replace",
        "replace",
        "labeldrop",
        "replace",
        "replace",
    ]
    assert steps[0]["regex"] == "istio-proxy"

    def address(port: str, ip: str) -> str:
        """Prometheus' replace steps 3-4 (RE2, anchored; $N is a group)."""
        out = f"{ip}:9999"
        for step in steps[2:4]:
            m = re.fullmatch(step["regex"], f"{port};{ip}")
            if m:
                out = m.expand(re.sub(r"\$(\d)", r"\\\1", step["replacement"]))
        return out

    # The injector's prometheus.io/port is 15020 (the agent's merged metrics).
    assert address("15020", "10.1.2.3") == "10.1.2.3:15020"
    assert address("15020", "fd00:10::2") == "[fd00:10::2]:15020"
    assert address("", "10.1.2.3") == "10.1.2.3:9999"  # not annotated: left as discovered


# --- the Deployment -------------------------------------------------------------


def test_deployment_runs_two_replicas_spread_over_nodes() -> None:
    deployment = one("Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert "schedulerName" not in pod  # placed by the default scheduler
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert pod["serviceAccountName"] == one("ServiceAccount")["metadata"]["name"]


def test_deployment_flags_config_and_probes_agree() -> None:
    c = container()
    args = c["args"]
    assert "--config=/etc/netsched/config.yaml" in args
    assert "--leader-elect=true" in args
    # HTTPS on --secure-port (kube-scheduler's 10259), probed over HTTPS on always-allowed paths.
    assert not any(a.startswith("--metrics-bind-address") for a in args), "no plain HTTP in a cluster"
    bind = next(a for a in args if a.startswith("--secure-port="))
    port = int(bind.split("=", 1)[1])
    assert port == 10259
    assert c["ports"] == [{"name": "https", "containerPort": port, "protocol": "TCP"}]
    probe = {"path": "/livez", "port": "https", "scheme": "HTTPS"}
    assert c["livenessProbe"]["httpGet"] == probe
    assert c["startupProbe"]["httpGet"] == probe
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    allow = next(a for a in args if a.startswith("--authorization-always-allow-paths="))
    assert {"/livez", "/readyz"} <= set(allow.split("=", 1)[1].split(","))
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["config"] == "/etc/netsched"
    volumes = {v["name"]: v for v in one("Deployment")["spec"]["template"]["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == CONFIG_MAP
    assert "emptyDir" in volumes["tmp"] and mounts["tmp"] == "/tmp"
    assert c["resources"]["requests"]["cpu"] and c["resources"]["limits"]["memory"]
    # No CPU limit, as kube-scheduler: CFS throttling would stall bursts and lease renewals.
    assert "cpu" not in c["resources"]["limits"]


def test_deployment_is_cluster_critical_and_the_budget_lets_unhealthy_pods_go() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    pdb = one("PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels().items()


def pod_labels() -> dict[str, str]:
    labels: dict[str, str] = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


def test_deployment_is_locked_down() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    sc = container()["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert "hostNetwork" not in pod


def test_service_selects_the_pods_and_exposes_metrics() -> None:
    service = one("Service")
    labels = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "https"
    monitor = one("ServiceMonitor", documents(DEPLOY / "optional/servicemonitor/servicemonitor.yaml"))
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert monitor["spec"]["endpoints"][0]["scheme"] == "https"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()


def test_service_monitor_scrapes_with_a_token_allowed_to_read_metrics() -> None:
    """authorization (not the deprecated bearerTokenFile) with a token Secret in the ServiceMonitor's
    namespace, of a ServiceAccount bound to netsched-metrics-reader, which allows GET /metrics."""
    objects = load_kustomization(SERVICEMONITOR)
    monitor = one("ServiceMonitor", objects)
    (endpoint,) = monitor["spec"]["endpoints"]
    assert not {"bearerTokenFile", "bearerTokenSecret", "basicAuth", "oauth2"} & set(endpoint)
    auth = endpoint["authorization"]
    assert auth["type"] == "Bearer"
    secret = one("Secret", objects)
    assert auth["credentials"] == {"name": secret["metadata"]["name"], "key": "token"}
    assert secret["metadata"]["namespace"] == monitor["metadata"]["namespace"] == NAMESPACE
    # A token Kubernetes fills in: nothing secret in the repository.
    assert secret["type"] == "kubernetes.io/service-account-token" and "data" not in secret
    account = one("ServiceAccount", objects)
    assert (
        secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == account["metadata"]["name"]
    )
    assert account["automountServiceAccountToken"] is False  # no pod runs as it
    binding = one("ClusterRoleBinding", objects)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    reader = next(
        o
        for o in base()
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == binding["roleRef"]["name"]
    )
    assert {"nonResourceURLs": [endpoint["path"]], "verbs": ["get"]} in reader["rules"]
    # The component grants netsched itself nothing.
    assert grants_from_deploy(DEPLOY, SERVICEMONITOR) == grants_from_deploy(DEPLOY)


_PORT_NAME = re.compile(r"\bport[`:]?\s+`?([a-z][a-z0-9-]*)`?")


@pytest.mark.parametrize(
    "path",
    [
        DEPLOY / "README.md",
        *sorted(SERVICEMONITOR.glob("*.yaml")),
        DEPLOY / "examples/prometheus-scrape.yaml",
    ],
    ids=lambda p: str(p.relative_to(DEPLOY)),
)
def test_ports_named_in_docs_and_comments_are_the_services(path: Path) -> None:
    """A comment once sent operators to a port `http-metrics` the Service does not have."""
    names = {p["name"] for p in one("Service")["spec"]["ports"]}
    words = {"on", "is", "of", "and", "the", "in", "to", "for", "forward", "number", "name", "names"}
    named = {m for m in _PORT_NAME.findall(path.read_text()) if m not in words}
    assert named <= names, (
        f"{path.name} names port(s) {sorted(named - names)}; the Service has {sorted(names)}"
    )


def test_dashboards_component_ships_each_dashboard_as_the_grafana_sidecar_expects() -> None:
    """One ConfigMap per grafana/dashboards/*.json, holding that file unchanged (the JSON stays
    the only copy), labelled grafana_dashboard: "1" (kube-prometheus-stack's sidecar), with a
    name that does not change with the content (the sidecar would keep the old one too)."""
    dashboards = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
    assert dashboards
    config_maps = load_kustomization(DASHBOARDS)
    assert {o["kind"] for o in config_maps} == {"ConfigMap"}
    by_file = {next(iter(cm["data"])): cm for cm in config_maps}
    assert sorted(by_file) == [p.name for p in dashboards]
    for path in dashboards:
        cm = by_file[path.name]
        assert list(cm["data"]) == [path.name]
        assert cm["data"][path.name] == path.read_text()
        meta = cm["metadata"]
        assert meta["name"] == f"netsched-dashboard-{path.stem.removeprefix('netsched-')}"
        assert meta["namespace"] == NAMESPACE
        assert meta["labels"]["grafana_dashboard"] == "1"  # a string: label values are
        assert meta["annotations"]["grafana_folder"] == "netsched"
        # `kubectl apply` keeps the whole object in an annotation, at most 256 KiB in all.
        assert len(json.dumps(cm)) < 256 * 1024 - 4096, f"{path.name} is too big for kubectl apply"


@pytest.mark.parametrize(
    "doc", [ROOT / "README.md", DEPLOY / "README.md"], ids=lambda p: str(p.relative_to(ROOT))
)
def test_install_instructions_name_what_the_manifests_do(doc: Path) -> None:
    text = doc.read_text()
    applied = re.findall(r"kubectl (?:apply|delete) -k (\S+?)/?(?:[`\s]|$)", text)
    assert str(DASHBOARDS.relative_to(ROOT)) in applied, "the dashboards component is not in the instructions"
    for path in applied:
        assert (ROOT / path / "kustomization.yaml").exists(), (
            f"{doc.name}: kubectl apply -k {path}: no such kustomization"
        )
    generated = {(k, v) for cm in load_kustomization(DASHBOARDS) for k, v in cm["metadata"]["labels"].items()}
    promised = set(re.findall(r'labelled `(\w+): "(\w+)"`', text))
    assert promised and promised <= generated, f"{doc.name} promises labels {promised}"


def test_example_workload_uses_netsched() -> None:
    example = one("Deployment", documents(DEPLOY / "examples/workload.yaml"))
    assert example["spec"]["template"]["spec"]["schedulerName"] == SCHEDULER_NAME
    assert (
        "examples/workload.yaml"
        not in yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    )


# --- RBAC -----------------------------------------------------------------------


def test_rbac_has_no_wildcards_and_no_escalation() -> None:
    for obj in base():
        if obj["kind"] in ("Role", "ClusterRole"):
            for rule in obj["rules"]:
                for key in ("apiGroups", "resources", "verbs", "resourceNames"):
                    assert "*" not in rule.get(key, []), f"{obj['metadata']['name']}: wildcard in {key}"
                assert not {"bind", "escalate", "impersonate"} & set(rule["verbs"])
                assert "secrets" not in rule.get("resources", [])
                assert "*" not in rule.get("nonResourceURLs", [])
            assert "aggregationRule" not in obj
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            assert obj["roleRef"]["name"] not in ("cluster-admin", "admin", "edit"), obj["metadata"]["name"]


def test_metrics_reader_may_get_only_metrics() -> None:
    reader = next(o for o in base() if o["metadata"]["name"] == "netsched-metrics-reader")
    assert reader["kind"] == "ClusterRole"
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = one("ClusterRoleBinding", documents(DEPLOY / "examples/prometheus-scrape.yaml"))
    assert binding["roleRef"]["name"] == "netsched-metrics-reader"
    scrape = one("ConfigMap", documents(DEPLOY / "examples/prometheus-scrape.yaml"))
    job = yaml.safe_load(scrape["data"]["netsched-job.yml"])["scrape_configs"][0]
    assert job["scheme"] == "https" and job["authorization"]["type"] == "Bearer"


def test_auth_delegator_is_bound_to_the_service_account() -> None:
    binding = next(o for o in base() if o["metadata"]["name"] == "netsched:auth-delegator")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "system:auth-delegator",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "netsched", "namespace": NAMESPACE}]


def test_cluster_role_grants_exactly_what_netsched_uses() -> None:
    cluster_wide = {(g.api_group, g.resource, g.verb) for g in grants_from_deploy(DEPLOY) if not g.namespace}
    assert cluster_wide == EXPECTED_CLUSTER_RULES


def test_leases_are_granted_only_in_the_lease_namespace_and_name() -> None:
    leases = {g for g in grants_from_deploy(DEPLOY) if g.resource == "leases"}
    assert leases == EXPECTED_LEASE_GRANTS
    grants = grants_from_deploy(DEPLOY)
    assert allows(grants, "coordination.k8s.io", "leases", "update", NAMESPACE, "netsched")
    assert not allows(grants, "coordination.k8s.io", "leases", "update", NAMESPACE, "kube-scheduler")
    assert not allows(grants, "coordination.k8s.io", "leases", "get", "kube-system", "kube-scheduler")
    # The lease the config names is the one the Role allows.
    le = yaml.safe_load(scheduler_config_text())["leaderElection"]
    assert allows(grants, "coordination.k8s.io", "leases", "get", le["resourceNamespace"], le["resourceName"])


def test_the_rebalancer_ships_in_dry_run_with_its_state_configmap_and_only_get_patch_on_it() -> None:
    """deploy/ enables the Rebalancer acting on nothing (dryRun: true); the ConfigMap its args name
    is shipped, empty (an apply again leaves what netsched wrote), and the only grants on
    ConfigMaps are get and patch on that name in that namespace."""
    from netsched.config import load_config

    args = load_config(scheduler_config_text(), _registry()).profiles[0].args("Rebalancer")
    assert args is not None and args.dry_run is True and args.interval_seconds == 15
    state = config_map(name=args.state.name)
    assert (state["metadata"]["namespace"], args.state.namespace) == (NAMESPACE, NAMESPACE)
    assert "data" not in state
    grants = grants_from_deploy(DEPLOY)
    assert {g for g in grants if g.resource == "configmaps"} == EXPECTED_STATE_GRANTS
    assert allows(grants, "", "configmaps", "patch", NAMESPACE, STATE_CONFIG_MAP)
    assert not allows(grants, "", "configmaps", "patch", NAMESPACE, CONFIG_MAP)  # not its own config
    assert not allows(grants, "", "configmaps", "get", "default", STATE_CONFIG_MAP)
    assert not allows(grants, "", "configmaps", "create", NAMESPACE, STATE_CONFIG_MAP)


def test_readme_rbac_table_is_what_the_manifests_grant() -> None:
    text = (DEPLOY / "README.md").read_text()
    table = text[text.index("### RBAC") :].split("\n\n")[2]
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    assert rows, "no RBAC table in deploy/README.md"
    documented = set()
    for group, resources, verbs, _why in rows:
        group = group.strip().strip('"')
        for resource in resources.split(","):
            for verb in re.findall(r"\b(get|list|watch|create|update|patch|delete)\b", verbs):
                documented.add((group, resource.strip(), verb))
    assert documented == rules_from_deploy(DEPLOY)


def test_rules_from_deploy_is_the_plain_tuple_view() -> None:
    rules = rules_from_deploy(DEPLOY)
    assert ("", "pods/binding", "create") in rules
    assert ("coordination.k8s.io", "leases", "update") in rules
    assert rules == EXPECTED_CLUSTER_RULES | {
        (g.api_group, g.resource, g.verb) for g in EXPECTED_LEASE_GRANTS | EXPECTED_STATE_GRANTS
    }


# --- the image ------------------------------------------------------------------


def test_dockerfile_runs_netsched_as_non_root() -> None:
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert instructions[0] == "FROM python:3.11-slim"
    user = next(line for line in instructions if line.startswith("USER "))
    assert user.split()[1].split(":")[0] not in ("0", "root")
    assert user.split()[1].split(":")[0].isdigit()  # numeric, so runAsNonRoot can be verified
    assert any(line.startswith("RUN pip install -c constraints.txt .") for line in instructions)
    assert instructions[-1] == 'ENTRYPOINT ["netsched"]'
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ".venv" in ignored and ".git" in ignored


def test_image_is_pinned_by_the_kustomization() -> None:
    images = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["images"]
    image = next(i for i in images if i["name"] == container()["image"])
    assert image["newTag"] and image["newTag"] != "latest"


# --- the overlay example (examples/deploy-overlay) ------------------------------------

OVERLAY = ROOT / "examples" / "deploy-overlay"


def render_overlay_in_test() -> list[dict[str, Any]]:
    """What `kubectl kustomize examples/deploy-overlay` makes, for a machine without kubectl: the
    base (netsched.testing.kustomize) with the overlay's replacements applied as kustomize applies
    a replacement with options.delimiter (split the target string, set part `index`, join)."""
    kustomization = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for entry in kustomization["resources"]:
        target = OVERLAY / entry
        objects += load_kustomization(target) if target.is_dir() else documents(target)
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    for rep in kustomization["replacements"]:
        src = rep["source"]
        section, key = src["fieldPath"].split(".", 1)
        value = by_name[(src["kind"], src["name"])][section][key]
        for target in rep["targets"]:
            obj = by_name[(target["select"]["kind"], target["select"]["name"])]
            (path,) = target["fieldPaths"]
            section, key = path.replace("\\.", ".").split(".", 1)
            delimiter, index = target["options"]["delimiter"], target["options"]["index"]
            parts = obj[section][key].split(delimiter)
            parts[index] = value
            obj[section][key] = delimiter.join(parts)
    local = "config.kubernetes.io/local-config"
    return [o for o in objects if (o["metadata"].get("annotations") or {}).get(local) != "true"]


def overlay_renderings() -> list[tuple[str, list[dict[str, Any]]]]:
    found = [("in-test", render_overlay_in_test())]
    if shutil.which("kubectl") is not None:
        found.append(("kubectl kustomize", kubectl_kustomize(OVERLAY)))
    return found


def test_overlay_sets_the_prometheus_address_and_weights_without_copying_the_config() -> None:
    from netsched.config import load_config
    from netsched.framework.registry import Registry

    settings = yaml.safe_load((OVERLAY / "settings.yaml").read_text())["data"]
    registry = Registry(importlib.import_module("netsched.plugins.registry").in_tree_plugins())
    base = scheduler_config_text()
    for how, objects in overlay_renderings():
        cm = config_map(objects)
        text = cm["data"]["config.yaml"]
        cfg = load_config(text, registry)
        weights = cfg.profiles[0].score_weights()
        assert weights["NetworkTraffic"] == int(settings["networkTrafficWeight"]), how
        assert weights["LoadAware"] == int(settings["loadAwareWeight"]), how
        for name in METRIC_PLUGINS:
            args = cfg.profiles[0].args(name)
            assert args is not None, (how, name)
            assert args.prometheus.prometheus_address == settings["prometheusAddress"], (
                how,
                name,
            )
        addresses = re.findall(r"prometheusAddress: (.+)", text)
        assert addresses == [f'"{settings["prometheusAddress"]}"'], how
        # Only those three values differ from the base: the rest is the base's, not a copy.
        assert len(text.splitlines()) == len(base.splitlines()), how
        changed = [(a, b) for a, b in zip(base.splitlines(), text.splitlines(), strict=True) if a != b]
        assert len(changed) == 3, (how, changed)
    assert settings["prometheusAddress"] not in base


@pytest.mark.parametrize("path", sorted(OVERLAY.glob("*.yaml")), ids=lambda p: p.name)
def test_overlay_yaml_parses(path: Path) -> None:
    assert [d for d in yaml.safe_load_all(path.read_text()) if d]
