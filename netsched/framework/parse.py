"""Raw pod and node JSON -> PodInfo / NodeInfo records, with validation.

A pod that the API server accepted can still be unusable for scheduling (an
object written by an old client, a webhook bug, a hand-edited fixture).
Parsing raises PodParseError naming the JSON field path, which the scheduler
reports on the pod as a FailedScheduling event instead of crashing.  Nodes are
parsed leniently: a bad node field is logged and treated as absent, because a
node is not something the scheduler can report on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

from netsched.framework.quantity import CPU, MEMORY, PODS, QuantityError, to_canonical
from netsched.framework.selectors import (
    LABEL_OPERATORS,
    NODE_OPERATORS,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    Requirement,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
    label_value_error,
)
from netsched.framework.types import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    HostPort,
    NodeInfo,
    PodInfo,
    Taint,
    Toleration,
)

log = logging.getLogger(__name__)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PROTOCOLS = ("TCP", "UDP", "SCTP")


class PodParseError(ValueError):
    """A pod field the scheduler cannot interpret; `path` is the JSON field path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.detail = message


def _dict(obj: object, path: str) -> dict[str, object]:
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise PodParseError(path, f"expected an object, got {type(obj).__name__}")
    return obj


def _list(obj: object, path: str) -> list[object]:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise PodParseError(path, f"expected a list, got {type(obj).__name__}")
    return obj


def _str_map(obj: object, path: str) -> dict[str, str]:
    d = _dict(obj, path)
    for k, v in d.items():
        if not isinstance(v, str):
            raise PodParseError(f"{path}.{k}", f"expected a string, got {type(v).__name__}")
    return cast(dict[str, str], d)  # every value checked above


def _str(obj: object, path: str, default: str = "") -> str:
    """A string field; absent, null or "" gives `default`."""
    if obj is None or obj == "":
        return default
    if not isinstance(obj, str):
        raise PodParseError(path, f"expected a string, got {type(obj).__name__}")
    return obj


def _str_list(obj: object, path: str) -> list[str]:
    items = _list(obj, path)
    if not all(isinstance(v, str) for v in items):
        raise PodParseError(path, "expected a list of strings")
    return cast(list[str], items)  # every item checked above


def _int(obj: object, path: str, default: int) -> int:
    if obj is None:
        return default
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise PodParseError(path, f"expected an integer, got {obj!r}")
    return obj


def _resource_list(obj: object, path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, q in _dict(obj, path).items():
        try:
            out[name] = to_canonical(name, q)
        except QuantityError as e:
            raise PodParseError(f"{path}.{name}", f"invalid quantity {q!r}: {e}") from e
        if out[name] < 0:
            raise PodParseError(f"{path}.{name}", f"must be non-negative, got {q!r}")
    return out


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def _with_scoring_defaults(req: dict[str, int]) -> dict[str, int]:
    """cpu/memory as scoring sees them: kube's defaults fill only a request that is absent;
    one set explicitly to 0 stays 0 (kube's NonMissingContainerRequests)."""
    return {
        CPU: req.get(CPU, DEFAULT_MILLI_CPU_REQUEST),
        MEMORY: req.get(MEMORY, DEFAULT_MEMORY_REQUEST),
    }


def _effective(containers: list[dict[str, int]], inits: list[tuple[dict[str, int], bool]]) -> dict[str, int]:
    """kube's effective request: max(sum of containers (+ sidecars), each init container's peak)."""
    total: dict[str, int] = {}
    for c in containers:
        _add(total, c)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for req, restartable in inits:
        if restartable:
            _add(total, req)
            _add(sidecars, req)
            _max(init_peak, sidecars)
        else:
            tmp = dict(req)
            _add(tmp, sidecars)
            _max(init_peak, tmp)
    _max(total, init_peak)
    return total


def parse_label_selector(obj: object, path: str) -> LabelSelector | None:
    if obj is None:
        return None
    d = _dict(obj, path)
    labels = _str_map(d.get("matchLabels"), f"{path}.matchLabels")
    exprs = []
    for i, e in enumerate(_list(d.get("matchExpressions"), f"{path}.matchExpressions")):
        exprs.append(_requirement(e, f"{path}.matchExpressions[{i}]", LABEL_OPERATORS))
    return LabelSelector(tuple(sorted(labels.items())), tuple(exprs))


def _requirement(obj: object, path: str, operators: tuple[str, ...], *, node: bool = False) -> Requirement:
    """One selector clause.  With node=True (node-selector terms) a clause kube's scheduler
    cannot turn into a selector (invalid label value, non-integer Gt/Lt) is kept but marked
    invalid, so its term matches no node, as in kube; elsewhere such input is the pod's fault."""
    d = _dict(obj, path)
    key = d.get("key")
    if not isinstance(key, str) or not key:
        raise PodParseError(f"{path}.key", "Required value")
    op = d.get("operator")
    if op not in operators:
        raise PodParseError(
            f"{path}.operator", f"Unsupported value: {op!r}: supported values: {', '.join(operators)}"
        )
    values = _str_list(d.get("values"), f"{path}.values")
    if op in ("In", "NotIn") and not values:
        raise PodParseError(f"{path}.values", f"must be specified when operator is {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise PodParseError(f"{path}.values", f"may not be specified when operator is {op}")
    valid = True
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise PodParseError(f"{path}.values", f"must have one element when operator is {op}")
        try:
            int(values[0])
        except ValueError as e:
            if not node:
                raise PodParseError(f"{path}.values[0]", f"must be an integer, got {values[0]!r}") from e
            valid = False
    elif node and any(label_value_error(v) for v in values):
        valid = False
    return Requirement(key, op, tuple(values), valid)


def _node_selector_term(obj: object, path: str) -> NodeSelectorTerm:
    d = _dict(obj, path)
    exprs = tuple(
        _requirement(e, f"{path}.matchExpressions[{i}]", NODE_OPERATORS, node=True)
        for i, e in enumerate(_list(d.get("matchExpressions"), f"{path}.matchExpressions"))
    )
    fields = []
    for i, e in enumerate(_list(d.get("matchFields"), f"{path}.matchFields")):
        r = _requirement(e, f"{path}.matchFields[{i}]", ("In", "NotIn"))
        if r.key != "metadata.name":
            raise PodParseError(
                f"{path}.matchFields[{i}].key",
                f'Unsupported value: {r.key!r}: supported values: "metadata.name"',
            )
        if len(r.values) != 1:  # kube's field selector takes exactly one value: the term is void
            r = Requirement(r.key, r.operator, r.values, valid=False)
        fields.append(r)
    return NodeSelectorTerm(exprs, tuple(fields))


def parse_node_selector(obj: object, path: str) -> NodeSelector | None:
    if obj is None:
        return None
    d = _dict(obj, path)
    terms = _list(d.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    return NodeSelector(
        tuple(_node_selector_term(t, f"{path}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))
    )


def _weight(obj: object, path: str) -> int:
    w = _int(obj, path, 0)
    if not 1 <= w <= 100:
        raise PodParseError(path, f"must be in the range 1-100, got {w}")
    return w


def _pod_affinity_term(obj: object, path: str) -> PodAffinityTerm:
    d = _dict(obj, path)
    topo = d.get("topologyKey")
    if not isinstance(topo, str) or not topo:
        raise PodParseError(f"{path}.topologyKey", "Required value: can not be empty")
    namespaces = _list(d.get("namespaces"), f"{path}.namespaces")
    return PodAffinityTerm(
        label_selector=parse_label_selector(d.get("labelSelector"), f"{path}.labelSelector"),
        topology_key=topo,
        namespaces=tuple(str(n) for n in namespaces),
        namespace_selector=parse_label_selector(d.get("namespaceSelector"), f"{path}.namespaceSelector"),
        match_label_keys=tuple(str(k) for k in _list(d.get("matchLabelKeys"), f"{path}.matchLabelKeys")),
        mismatch_label_keys=tuple(
            str(k) for k in _list(d.get("mismatchLabelKeys"), f"{path}.mismatchLabelKeys")
        ),
    )


def _pod_affinity(
    obj: object, path: str
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    d = _dict(obj, path)
    rpath = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_affinity_term(t, f"{rpath}[{i}]")
        for i, t in enumerate(_list(d.get("requiredDuringSchedulingIgnoredDuringExecution"), rpath))
    )
    ppath = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, t in enumerate(_list(d.get("preferredDuringSchedulingIgnoredDuringExecution"), ppath)):
        td = _dict(t, f"{ppath}[{i}]")
        preferred.append(
            WeightedPodAffinityTerm(
                _weight(td.get("weight"), f"{ppath}[{i}].weight"),
                _pod_affinity_term(td.get("podAffinityTerm"), f"{ppath}[{i}].podAffinityTerm"),
            )
        )
    return required, tuple(preferred)


def _toleration(obj: object, path: str) -> Toleration:
    d = _dict(obj, path)
    op = d.get("operator") or "Equal"
    if op not in ("Equal", "Exists"):
        raise PodParseError(
            f"{path}.operator", f'Unsupported value: {op!r}: supported values: "Equal", "Exists"'
        )
    effect = d.get("effect") or ""
    if effect and effect not in TAINT_EFFECTS:
        raise PodParseError(
            f"{path}.effect", f"Unsupported value: {effect!r}: supported values: {', '.join(TAINT_EFFECTS)}"
        )
    key = _str(d.get("key"), f"{path}.key")
    value = _str(d.get("value"), f"{path}.value")
    if op == "Exists" and value:
        raise PodParseError(f"{path}.value", "must be empty when `operator` is 'Exists'")
    if not key and op != "Exists":
        raise PodParseError(f"{path}.operator", "must be Exists when `key` is empty")
    return Toleration(key, op, value, str(effect))


def _spread(obj: object, path: str) -> TopologySpreadConstraint:
    d = _dict(obj, path)
    skew = _int(d.get("maxSkew"), f"{path}.maxSkew", 0)
    if skew <= 0:
        raise PodParseError(f"{path}.maxSkew", f"must be greater than zero, got {skew}")
    key = d.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise PodParseError(f"{path}.topologyKey", "Required value")
    when = d.get("whenUnsatisfiable")
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise PodParseError(
            f"{path}.whenUnsatisfiable",
            f'Unsupported value: {when!r}: supported values: "DoNotSchedule", "ScheduleAnyway"',
        )
    min_domains = d.get("minDomains")
    if min_domains is not None:
        min_domains = _int(min_domains, f"{path}.minDomains", 1)
        if min_domains <= 0:
            raise PodParseError(f"{path}.minDomains", f"must be greater than zero, got {min_domains}")
        if when != "DoNotSchedule":
            raise PodParseError(f"{path}.minDomains", "can only be used with whenUnsatisfiable=DoNotSchedule")
    policies = {}
    for fld, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
        v = d.get(fld) or default
        if v not in ("Honor", "Ignore"):
            raise PodParseError(
                f"{path}.{fld}", f'Unsupported value: {v!r}: supported values: "Honor", "Ignore"'
            )
        policies[fld] = v
    return TopologySpreadConstraint(
        max_skew=skew,
        topology_key=key,
        when_unsatisfiable=when,
        label_selector=parse_label_selector(d.get("labelSelector"), f"{path}.labelSelector"),
        min_domains=min_domains,
        node_affinity_policy=policies["nodeAffinityPolicy"],
        node_taints_policy=policies["nodeTaintsPolicy"],
        match_label_keys=tuple(str(k) for k in _list(d.get("matchLabelKeys"), f"{path}.matchLabelKeys")),
    )


def _container(
    obj: object, path: str, ports: list[HostPort], images: list[str]
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    c = _dict(obj, path)
    res = _dict(c.get("resources"), f"{path}.resources")
    req = _resource_list(res.get("requests"), f"{path}.resources.requests")
    lim = _resource_list(res.get("limits"), f"{path}.resources.limits")
    # A limit without a request defaults the request to the limit (API defaulting).
    for k, v in lim.items():
        req.setdefault(k, v)
    image = c.get("image")
    if isinstance(image, str):
        images.append(image)
    for i, p in enumerate(_list(c.get("ports"), f"{path}.ports")):
        pd = _dict(p, f"{path}.ports[{i}]")
        hp = _int(pd.get("hostPort"), f"{path}.ports[{i}].hostPort", 0)
        if hp <= 0:
            continue
        if hp > 65535:
            raise PodParseError(f"{path}.ports[{i}].hostPort", f"must be between 1 and 65535, got {hp}")
        proto = pd.get("protocol") or "TCP"
        if proto not in PROTOCOLS:
            raise PodParseError(
                f"{path}.ports[{i}].protocol",
                f'Unsupported value: {proto!r}: supported values: "TCP", "UDP", "SCTP"',
            )
        ports.append(HostPort(str(proto), _str(pd.get("hostIP"), f"{path}.ports[{i}].hostIP", "0.0.0.0"), hp))
    return req, lim, _with_scoring_defaults(req)


def parse_pod(raw: dict[str, Any]) -> PodInfo:
    """Parse a v1 Pod; raises PodParseError naming the field at fault."""
    meta = _dict(raw.get("metadata"), "metadata")
    spec = _dict(raw.get("spec"), "spec")
    status = _dict(raw.get("status"), "status")
    name, ns = meta.get("name"), _str(meta.get("namespace"), "metadata.namespace", "default")
    if not isinstance(name, str) or not name:
        raise PodParseError("metadata.name", "Required value")
    ports: list[HostPort] = []
    images: list[str] = []
    reqs, lims, nonzero = [], [], []
    for i, c in enumerate(_list(spec.get("containers"), "spec.containers")):
        r, lim, nz = _container(c, f"spec.containers[{i}]", ports, images)
        reqs.append(r)
        lims.append(lim)
        nonzero.append(nz)
    inits, init_lims, init_nz = [], [], []
    for i, c in enumerate(_list(spec.get("initContainers"), "spec.initContainers")):
        r, lim, nz = _container(c, f"spec.initContainers[{i}]", ports, images)
        restartable = isinstance(c, dict) and c.get("restartPolicy") == "Always"
        inits.append((r, restartable))
        init_lims.append((lim, restartable))
        init_nz.append((nz, restartable))
    requests = _effective(reqs, inits)
    limits = _effective(lims, init_lims)
    nz = _effective(nonzero, init_nz)
    overhead = _resource_list(spec.get("overhead"), "spec.overhead")
    _add(requests, overhead)
    _add(nz, overhead)
    requests = {k: v for k, v in requests.items() if v}

    affinity = _dict(spec.get("affinity"), "spec.affinity")
    node_aff = _dict(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    napath = "spec.affinity.nodeAffinity"
    required_node = parse_node_selector(
        node_aff.get("requiredDuringSchedulingIgnoredDuringExecution"),
        f"{napath}.requiredDuringSchedulingIgnoredDuringExecution",
    )
    preferred_node = []
    ppath = f"{napath}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, t in enumerate(_list(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"), ppath)):
        td = _dict(t, f"{ppath}[{i}]")
        preferred_node.append(
            PreferredSchedulingTerm(
                _weight(td.get("weight"), f"{ppath}[{i}].weight"),
                _node_selector_term(td.get("preference"), f"{ppath}[{i}].preference"),
            )
        )
    req_aff, pref_aff = _pod_affinity(affinity.get("podAffinity"), "spec.affinity.podAffinity")
    req_anti, pref_anti = _pod_affinity(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")

    tolerations = tuple(
        _toleration(t, f"spec.tolerations[{i}]")
        for i, t in enumerate(_list(spec.get("tolerations"), "spec.tolerations"))
    )
    spread = tuple(
        _spread(t, f"spec.topologySpreadConstraints[{i}]")
        for i, t in enumerate(_list(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints"))
    )
    gates = []
    for i, g in enumerate(_list(spec.get("schedulingGates"), "spec.schedulingGates")):
        gname = _dict(g, f"spec.schedulingGates[{i}]").get("name")
        if not isinstance(gname, str) or not gname:
            raise PodParseError(f"spec.schedulingGates[{i}].name", "Required value")
        gates.append(gname)
    pvcs = []
    for i, v in enumerate(_list(spec.get("volumes"), "spec.volumes")):
        claim = _dict(
            _dict(v, f"spec.volumes[{i}]").get("persistentVolumeClaim"),
            f"spec.volumes[{i}].persistentVolumeClaim",
        )
        if claim.get("claimName"):
            pvcs.append(str(claim["claimName"]))
    owner_kind = owner_name = ""
    for ref in _list(meta.get("ownerReferences"), "metadata.ownerReferences"):
        if isinstance(ref, dict) and ref.get("controller"):
            owner_kind, owner_name = str(ref.get("kind", "")), str(ref.get("name", ""))
    policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
    if policy not in ("PreemptLowerPriority", "Never"):
        raise PodParseError(
            "spec.preemptionPolicy",
            f'Unsupported value: {policy!r}: supported values: "Never", "PreemptLowerPriority"',
        )
    return PodInfo(
        uid=str(meta.get("uid") or f"{ns}/{name}"),
        namespace=ns,
        name=name,
        resource_version=str(meta.get("resourceVersion") or ""),
        scheduler_name=_str(spec.get("schedulerName"), "spec.schedulerName", "default-scheduler"),
        node_name=_str(spec.get("nodeName"), "spec.nodeName"),
        nominated_node_name=_str(status.get("nominatedNodeName"), "status.nominatedNodeName"),
        priority=_int(spec.get("priority"), "spec.priority", 0),
        preemption_policy=policy,
        phase=_str(status.get("phase"), "status.phase", "Pending"),
        labels=_str_map(meta.get("labels"), "metadata.labels"),
        annotations=_str_map(meta.get("annotations"), "metadata.annotations"),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        requests=requests,
        nonzero_cpu=nz.get(CPU, 0),
        nonzero_memory=nz.get(MEMORY, 0),
        limits={k: v for k, v in limits.items() if v},
        node_selector=_str_map(spec.get("nodeSelector"), "spec.nodeSelector"),
        required_node_affinity=required_node,
        preferred_node_affinity=tuple(preferred_node),
        required_affinity=req_aff,
        preferred_affinity=pref_aff,
        required_anti_affinity=req_anti,
        preferred_anti_affinity=pref_anti,
        tolerations=tolerations,
        topology_spread_constraints=spread,
        host_ports=tuple(ports),
        host_network=spec.get("hostNetwork") is True,
        scheduling_gates=tuple(gates),
        images=tuple(images),
        pvc_names=tuple(pvcs),
        owner_kind=owner_kind,
        owner_name=owner_name,
        raw=raw,
    )


def parse_node(raw: dict[str, Any]) -> NodeInfo:
    """Parse a v1 Node leniently: bad fields are logged and dropped, never fatal."""
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    name = str(meta.get("name") or "")
    alloc_raw = status.get("allocatable") or status.get("capacity") or {}
    allocatable: dict[str, int] = {}
    for res, q in alloc_raw.items() if isinstance(alloc_raw, dict) else ():
        try:
            allocatable[res] = to_canonical(res, q)
        except QuantityError as e:
            log.warning(
                "Ignoring unparsable node allocatable node=%r resource=%r value=%r err=%s", name, res, q, e
            )
    # No allocatable (kubelet has not posted status yet) means room for nothing, pods included.
    allocatable.setdefault(PODS, 0)
    taints = []
    for t in spec.get("taints") or ():
        if isinstance(t, dict) and t.get("key") and t.get("effect") in TAINT_EFFECTS:
            taints.append(Taint(str(t["key"]), str(t.get("value") or ""), str(t["effect"])))
    images: dict[str, int] = {}
    for img in status.get("images") or ():
        if isinstance(img, dict):
            size = int(img.get("sizeBytes") or 0)
            for n in img.get("names") or ():
                images[str(n)] = size
    ready = True
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
    addresses = tuple(
        (str(a.get("type", "")), str(a.get("address", "")))
        for a in status.get("addresses") or ()
        if isinstance(a, dict)
    )
    return NodeInfo(
        name=name,
        uid=str(meta.get("uid") or name),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        taints=tuple(taints),
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
        allocatable=allocatable,
        images=images,
        addresses=addresses,
        requested={PODS: 0},
        raw=raw,
    )
