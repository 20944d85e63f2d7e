"""Nodes and pods of a scenario: Kubernetes objects as written, or generated from a count.

A generator entry (`{count: 50, cpu: "32", memory: "128Gi", linkSpeed:
"10Gbit"}`) expands to Node or Pod objects built with netsched.objects'
builders, so generated objects go through the scheduler's real parser like
any other.  A resource may be a [lo, hi] range, drawn per object from the
scenario's seeded generator.  Objects written out in full are checked with
the same parser and their errors carry the scenario's field path.  A pod
generator with `deployment: NAME` makes a Deployment's pods (workloads.py):
one template for all of them, owned by its ReplicaSet.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsched.framework.fields import ErrorList, FieldError, Fields, join
from netsched.framework.parse import PodParseError, parse_pod
from netsched.framework.quantity import CPU, MEMORY, QuantityError, to_canonical
from netsched.framework.selectors import label_key_errors
from netsched.framework.types import LABEL_TOPOLOGY_ZONE
from netsched.metrics.estimation import EGRESS_BANDWIDTH, INGRESS_BANDWIDTH
from netsched.objects import PodBuilder, make_node, make_pod
from netsched.simulate import compact
from netsched.simulate.units import bandwidth_annotation, bits_per_second, is_range, shown
from netsched.simulate.workloads import owned_pod, template_hash, template_of

MAX_COUNT = 100_000
DEFAULT_LINK_SPEED_BITS = 10e9


@dataclass(frozen=True, slots=True)
class Amount:
    """A scalar, or a [lo, hi] range drawn uniformly per object (canonical units)."""

    lo: float
    hi: float
    text: str  # the scalar as written ("" for a range)

    def draw(self, rng: np.random.Generator) -> float:
        return self.lo if self.lo == self.hi else float(rng.uniform(self.lo, self.hi))


def _amount(f: Fields, key: str, parse: Callable[[object], float]) -> Amount | None:
    raw = f.any(key)
    if raw is None:
        return None
    path = join(f.path, key)
    values = raw if is_range(raw) else [raw]
    if isinstance(raw, list) and not is_range(raw):
        f.errs.invalid(path, shown(raw), "must be a value or a [lo, hi] range")
        return None
    try:
        got = [parse(v) for v in values]
    except ValueError as e:
        f.errs.invalid(path, shown(raw), str(e))
        return None
    if got[0] > got[-1]:
        f.errs.invalid(path, shown(raw), "range must be [lo, hi] with lo <= hi")
        return None
    return Amount(got[0], got[-1], "" if len(got) > 1 else str(raw))


def _cpu(v: object) -> float:
    try:
        return float(to_canonical(CPU, v))
    except QuantityError:
        raise ValueError('must be a CPU quantity such as "500m" or "2"') from None


def _memory(v: object) -> float:
    try:
        return float(to_canonical(MEMORY, v))
    except QuantityError:
        raise ValueError('must be a memory quantity such as "512Mi" or "2Gi"') from None


def _cpu_text(a: Amount, rng: np.random.Generator) -> str:
    return a.text or f"{round(a.draw(rng))}m"


def _memory_text(a: Amount, rng: np.random.Generator) -> str:
    if a.text:
        return a.text
    v = a.draw(rng)
    return f"{round(v / 2**20)}Mi" if a.lo >= 2**20 else str(round(v))


def _items(raw: Any, path: str, errs: ErrorList) -> list[tuple[str, Any]]:
    """A list field (or a single entry written without the list) as (path, item) pairs."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [(path, raw)]
    out: list[tuple[str, Any]] = []
    for i, item in enumerate(raw):
        p = join(path, i)
        if isinstance(item, dict) and item.get("kind") in ("List", "NodeList", "PodList"):
            items = item.get("items")
            if not isinstance(items, list):
                errs.invalid(join(p, "items"), type(items).__name__, "must be a list")
                continue
            out += [(join(join(p, "items"), j), x) for j, x in enumerate(items)]
        else:
            out.append((p, item))
    return out


def _is_object(item: object) -> bool:
    return isinstance(item, dict) and any(k in item for k in ("kind", "metadata", "apiVersion"))


class Names:
    """Sequential names per prefix, so two generators with one prefix do not collide."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def take(self, prefix: str, count: int) -> list[str]:
        start = self._next.get(prefix, 0)
        self._next[prefix] = start + count
        width = max(2, len(str(start + count - 1)))
        return [f"{prefix}-{i:0{width}d}" for i in range(start, start + count)]


# ---------------------------------------------------------------- nodes


@dataclass
class NodeSet:
    objects: list[dict[str, Any]]
    link_speed_bits: dict[str, float]  # from generators' linkSpeed
    levels: list[str] = field(default_factory=list)  # topology labels the generators set, outer to inner


def decode_nodes(raw: Any, errs: ErrorList, rng: np.random.Generator) -> NodeSet:
    out = NodeSet([], {})
    names = Names()
    seen: set[str] = set()
    for path, item in _items(raw, "nodes", errs):
        if isinstance(item, str):
            try:
                item = compact.node_generator(item)
            except ValueError as e:
                errs.invalid(path, item, str(e))
                continue
        if _is_object(item):
            obj = _node_object(item, path, errs)
            made = [obj] if obj is not None else []
        elif isinstance(item, dict):
            made = _node_generator(Fields(item, path, errs), rng, names, out.link_speed_bits, out.levels)
        else:
            errs.invalid(path, type(item).__name__, "must be a Node object, a generator mapping or a string")
            continue
        for obj in made:
            name = obj["metadata"]["name"]
            if name in seen:
                errs.duplicate(f"{path}.metadata.name", name)
                continue
            seen.add(name)
            out.objects.append(obj)
    if not out.objects and not errs:
        errs.required("nodes", "a scenario needs at least one node")
    return out


def named_object(item: Any, path: str, errs: ErrorList, kind: str | None = None) -> dict[str, Any] | None:
    """The object's metadata when it is a mapping of the expected kind (absent kind: that kind)
    with a metadata.name; otherwise the error is recorded at its path and None returned."""
    if not isinstance(item, dict):
        errs.invalid(path, type(item).__name__, "must be a mapping")
        return None
    if kind is not None and item.get("kind", kind) != kind:
        errs.unsupported(f"{path}.kind", item.get("kind"), [kind])
        return None
    meta = item.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        errs.required(f"{path}.metadata.name")
        return None
    return meta


def _node_object(item: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any] | None:
    meta = named_object(item, path, errs, "Node")
    if meta is None:
        return None
    status = item.get("status")
    if not isinstance(status, dict) or not (status.get("allocatable") or status.get("capacity")):
        errs.required(f"{path}.status.allocatable", "the node's cpu, memory and pods")
        return None
    obj = copy.deepcopy(item)
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "Node")
    obj["metadata"].setdefault("uid", f"sim-node-{meta['name']}")
    return obj


def _node_generator(
    f: Fields, rng: np.random.Generator, names: Names, link_speeds: dict[str, float], levels: list[str]
) -> list[dict[str, Any]]:
    count = f.int("count", 1, min=1, max=MAX_COUNT)
    prefix = f.str("namePrefix", "node")
    cpu = _amount(f, "cpu", _cpu) or Amount(4000, 4000, "4")
    memory = _amount(f, "memory", _memory) or Amount(8 * 2**30, 8 * 2**30, "8Gi")
    pods = f.int("pods", 110, min=1)
    link = _amount(f, "linkSpeed", bits_per_second)
    zones = f.int("zones", 0, min=0)
    labels = _string_map(f, "labels")
    topology = _topology(f, count)
    f.finish()
    for label in ([LABEL_TOPOLOGY_ZONE] if zones else []) + [t.label for t in topology]:
        if label not in levels:
            levels.append(label)
    out = []
    for i, name in enumerate(names.take(prefix, count)):
        b = make_node(name).capacity(
            cpu=_cpu_text(cpu, rng), memory=_memory_text(memory, rng), pods=str(pods)
        )
        for k, v in labels.items():
            b.label(k, v)
        if zones:
            b.zone(f"zone-{i % zones}")
        for t in topology:  # contiguous blocks: node i is in domain i x domains // count
            b.label(t.label, f"{t.prefix}-{i * t.domains // count}")
        obj = b.obj()
        obj["metadata"]["uid"] = f"sim-node-{name}"
        out.append(obj)
        if link is not None:
            link_speeds[name] = link.draw(rng)
    return out


@dataclass(frozen=True, slots=True)
class _Level:
    label: str
    domains: int
    prefix: str


def _topology(f: Fields, count: int) -> list[_Level]:
    """`topology: [{label, domains, prefix}]`, outer to inner: each level cuts the generator's
    nodes into `domains` contiguous blocks, each inside one block of the level outside it."""
    out: list[_Level] = []
    outer = 1
    for item in f.items("topology"):
        label = item.str("label", "")
        problems = label_key_errors(label) if label else ["must be a node label key"]
        if problems:
            item.errs.invalid(join(item.path, "label"), label, "; ".join(problems))
        domains = item.int("domains", 1, min=1, max=count)
        prefix = item.str("prefix", label.rsplit("/", 1)[-1] or "domain")
        item.finish()
        if domains % outer:
            item.errs.invalid(
                join(item.path, "domains"),
                domains,
                f"must be a multiple of {outer}, the domains of the level outside it (each one sits inside one of those)",
            )
        elif not problems:
            out.append(_Level(label, domains, prefix))
            outer = domains
    return out


def _string_map(f: Fields, key: str) -> dict[str, str]:
    raw = f.any(key, {})
    if not isinstance(raw, dict) or not all(isinstance(v, str | int | float) for v in raw.values()):
        f.errs.invalid(join(f.path, key), type(raw).__name__, "must be a mapping of strings")
        return {}
    return {str(k): str(v) for k, v in raw.items()}


# ---------------------------------------------------------------- pods


def decode_pods(
    raw: Any,
    field: str,
    errs: ErrorList,
    rng: np.random.Generator,
    *,
    nodes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """`pods` (nodes=None: to place) or `existingPods` (nodes given: each pod bound to one of them)."""
    out: list[dict[str, Any]] = []
    names = Names()
    seen: set[str] = set()
    existing = nodes is not None
    for path, item in _items(raw, field, errs):
        if isinstance(item, str):
            try:
                item = compact.pod_generator(item)
            except ValueError as e:
                errs.invalid(path, item, str(e))
                continue
        if _is_object(item):
            obj = _pod_object(item, path, errs, nodes)
            made = [obj] if obj is not None else []
        elif isinstance(item, dict):
            made = _pod_generator(Fields(item, path, errs), rng, names, nodes)
        else:
            errs.invalid(path, type(item).__name__, "must be a Pod object, a generator mapping or a string")
            continue
        for obj in made:
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            if key in seen:
                errs.duplicate(f"{path}.metadata.name", key)
                continue
            seen.add(key)
            out.append(obj)
    if not existing and not out and not errs:
        errs.required(field, "a scenario needs pods to place")
    return out


def _pod_object(
    item: dict[str, Any], path: str, errs: ErrorList, nodes: list[str] | None
) -> dict[str, Any] | None:
    meta = named_object(item, path, errs, "Pod")
    if meta is None:
        return None
    obj = copy.deepcopy(item)
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "Pod")
    obj["metadata"].setdefault("namespace", "default")
    obj["metadata"].setdefault("uid", f"sim-{obj['metadata']['namespace']}-{meta['name']}")
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        errs.invalid(f"{path}.spec", type(spec).__name__, "must be a mapping")
        return None
    spec.setdefault("containers", [{"name": "c0", "image": "busybox"}])
    bound = spec.get("nodeName")
    if nodes is not None:
        if not bound:
            errs.required(f"{path}.spec.nodeName", "an existing pod runs on a node")
            return None
        if bound not in nodes:
            errs.invalid(f"{path}.spec.nodeName", bound, "no such node in nodes")
            return None
        obj.setdefault("status", {})["phase"] = "Running"
    elif bound:
        errs.forbidden(
            f"{path}.spec.nodeName", "a pod to place must not be bound; list it under existingPods"
        )
        return None
    try:
        parse_pod(obj)
    except PodParseError as e:
        errs.append(FieldError(f"{path}.{e.path}", "Invalid value", e.detail))
        return None
    return obj


def _pod_generator(
    f: Fields, rng: np.random.Generator, names: Names, nodes: list[str] | None
) -> list[dict[str, Any]]:
    existing = nodes is not None
    targets: list[str] = []
    if existing:
        targets = _target_nodes(f, nodes or [])
        per_node = f.int("perNode", 0, min=0, max=MAX_COUNT)
        count = f.int("count", 0 if per_node else 1, min=0, max=MAX_COUNT)
        if per_node and f.has("count"):
            f.errs.forbidden(join(f.path, "count"), "use count or perNode, not both")
        count = per_node * len(targets) if per_node else count
    else:
        count = f.int("count", 1, min=1, max=MAX_COUNT)
    deployment = f.str("deployment", "")
    if deployment and not _DNS_LABEL.match(deployment):
        f.errs.invalid(join(f.path, "deployment"), deployment, "must be a Deployment name (a DNS label)")
        deployment = ""
    prefix = f.str("namePrefix", "") or ("" if deployment else "existing" if existing else "pod")
    namespace = f.str("namespace", "default")
    template = _PodTemplate(
        cpu=_amount(f, "cpu", _cpu),
        memory=_amount(f, "memory", _memory),
        both=_amount(f, "bandwidth", bits_per_second),
        ingress=_amount(f, "ingressBandwidth", bits_per_second),
        egress=_amount(f, "egressBandwidth", bits_per_second),
        scheduler=f.str("schedulerName", ""),
        labels=_string_map(f, "labels"),
        annotations=_string_map(f, "annotations"),
        priority=f.int("priority", 0) if f.has("priority") else None,
    )
    f.finish()
    if deployment:
        # One template for all the replicas (ranges drawn once), named after its ReplicaSet.
        model = template.build(make_pod("template", namespace), rng).obj()
        pod_hash = template_hash(template_of(model))
        made = [
            owned_pod(template_of(model), namespace, name, deployment, pod_hash)
            for name in names.take(prefix or f"{deployment}-{pod_hash}", count)
        ]
    else:
        made = [
            template.build(make_pod(name, namespace).uid(f"sim-{namespace}-{name}"), rng).obj()
            for name in names.take(prefix, count)
        ]
    for i, obj in enumerate(made):
        if existing:
            obj["spec"]["nodeName"] = targets[i % len(targets)]
            obj.setdefault("status", {})["phase"] = "Running"
        if not template.scheduler:
            obj["spec"].pop("schedulerName", None)  # filled in with the simulated profile's name
    return made


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class _PodTemplate:
    """A pod generator's fields, drawn per pod (ranges) by build()."""

    cpu: Amount | None
    memory: Amount | None
    both: Amount | None  # `bandwidth`: ingress and egress together
    ingress: Amount | None
    egress: Amount | None
    scheduler: str
    labels: dict[str, str]
    annotations: dict[str, str]
    priority: int | None

    def build(self, b: PodBuilder, rng: np.random.Generator) -> PodBuilder:
        reqs = {}
        if self.cpu is not None:
            reqs["cpu"] = _cpu_text(self.cpu, rng)
        if self.memory is not None:
            reqs["memory"] = _memory_text(self.memory, rng)
        if reqs:
            b.req(**reqs)
        for k, v in self.labels.items():
            b.label(k, v)
        for k, v in self.annotations.items():
            b.annotation(k, v)
        ingress = self.ingress or self.both
        egress = self.egress or self.both
        if ingress is not None:
            rx = ingress.draw(rng)
            # One draw for both directions when `bandwidth` set them together.
            tx = rx if egress is ingress else (egress.draw(rng) if egress is not None else None)
            b.annotation(INGRESS_BANDWIDTH, bandwidth_annotation(rx))
            if tx is not None:
                b.annotation(EGRESS_BANDWIDTH, bandwidth_annotation(tx))
        elif egress is not None:
            b.annotation(EGRESS_BANDWIDTH, bandwidth_annotation(egress.draw(rng)))
        if self.priority is not None:
            b.priority(self.priority)
        if self.scheduler:
            b.scheduler(self.scheduler)
        return b


def _target_nodes(f: Fields, nodes: list[str]) -> list[str]:
    raw = f.any("nodes")
    if raw is None:
        return nodes
    path = join(f.path, "nodes")
    if not isinstance(raw, list) or not raw:
        f.errs.invalid(path, shown(raw), "must be a non-empty list of node names")
        return nodes
    known = set(nodes)
    out = []
    for i, name in enumerate(raw):
        if name not in known:
            f.errs.invalid(join(path, i), name, "no such node in nodes")
        else:
            out.append(str(name))
    return out or nodes


def node_names(objects: Iterable[dict[str, Any]]) -> list[str]:
    return [str(o["metadata"]["name"]) for o in objects]
