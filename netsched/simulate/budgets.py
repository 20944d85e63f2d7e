"""A scenario's `podDisruptionBudgets:`: the budgets evictions must respect.

    podDisruptionBudgets:
      - {deployments: all, maxUnavailable: 1}           # one budget per Deployment
      - {deployment: api, minAvailable: 80%}            # or one Deployment's (name or namespace/name)
      - apiVersion: policy/v1                           # or a PodDisruptionBudget as written
        kind: PodDisruptionBudget
        metadata: {name: db, namespace: shop}
        spec: {maxUnavailable: 0, selector: {matchLabels: {app: db}}}

Each is a policy/v1 PodDisruptionBudget in the in-memory cluster's object
store, where InMemoryCluster.evict (kube's eviction rules,
netsched.framework.disruption) reads it: an eviction the budget does not
allow is refused with kube's 429.  A generated budget selects its
Deployment's pods by their template's labels (a Deployment whose pods carry
none cannot be selected: an error).  Every problem is reported with its path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from netsched.framework.fields import ErrorList, Fields, join
from netsched.framework.parse import PodParseError, parse_label_selector
from netsched.simulate.units import shown
from netsched.simulate.workloads import Deployment

ALL = "all"
_PERCENT = re.compile(r"^[0-9]+%$")
_BOUNDS = ("maxUnavailable", "minAvailable")


def decode_budgets(raw: Any, errs: ErrorList, deployments: Sequence[Deployment]) -> list[dict[str, Any]]:
    """PodDisruptionBudget objects, in the order given (generated ones expanded)."""
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        path = join("podDisruptionBudgets", i) if isinstance(raw, list) else "podDisruptionBudgets"
        f = Fields(item, path, errs)
        if f.has("kind") or f.has("spec") or f.has("metadata"):
            got = _object(f)
            if got is not None:
                out.append(got)
        else:
            out += _generated(f, deployments)
    seen: set[tuple[str, str]] = set()
    for obj in out:
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"])
        if key in seen:
            errs.duplicate("podDisruptionBudgets", f"{key[0]}/{key[1]}")
        seen.add(key)
    return out


def _object(f: Fields) -> dict[str, Any] | None:
    kind = f.str("kind", "PodDisruptionBudget")
    if kind != "PodDisruptionBudget":
        f.errs.invalid(join(f.path, "kind"), kind, "must be PodDisruptionBudget")
    f.str("apiVersion", "policy/v1", choices=("policy/v1",))
    meta = f.sub("metadata")
    name = meta.str("name", "")
    if not name:
        f.errs.required(join(meta.path, "name"))
    namespace = meta.str("namespace", "default") or "default"
    labels = meta.any("labels")
    meta.finish()
    spec = f.sub("spec")
    bound = _bound(spec)
    selector = spec.any("selector")
    if selector is None:
        f.errs.required(join(spec.path, "selector"), "which pods the budget covers (matchLabels)")
    else:
        try:
            parse_label_selector(selector, join(spec.path, "selector"))
        except PodParseError as e:
            f.errs.invalid(join(spec.path, "selector"), shown(selector), str(e))
    spec.any("unhealthyPodEvictionPolicy")
    spec.finish()
    f.finish()
    if not name or bound is None or selector is None:
        return None
    out_meta: dict[str, Any] = {"name": name, "namespace": namespace, "generation": 1}
    if isinstance(labels, dict):
        out_meta["labels"] = dict(labels)
    return _budget(out_meta, {**bound, "selector": selector})


def _generated(f: Fields, deployments: Sequence[Deployment]) -> list[dict[str, Any]]:
    by_key = {d.key: d for d in deployments}
    chosen: list[Deployment] = []
    if f.has("deployment") == f.has("deployments"):
        f.errs.required(f.path, "deployment: NAME, or deployments: all or [names] (or a PodDisruptionBudget)")
    elif f.has("deployments"):
        raw = f.any("deployments")
        path = join(f.path, "deployments")
        if raw == ALL:
            chosen = list(deployments)
            if not chosen:
                f.errs.invalid(path, ALL, "the scenario has no Deployments (pods with `deployment:`)")
        elif isinstance(raw, list) and raw:
            for i, name in enumerate(raw):
                d = by_key.get(_key(name))
                if d is None:
                    f.errs.invalid(join(path, i), shown(name), "no such Deployment among the scenario's pods")
                elif d not in chosen:
                    chosen.append(d)
        else:
            f.errs.required(path, f"a list of Deployment names, or {ALL}")
    else:
        name = f.any("deployment")
        d = by_key.get(_key(name))
        if d is None:
            f.errs.invalid(
                join(f.path, "deployment"), shown(name), "no such Deployment among the scenario's pods"
            )
        else:
            chosen.append(d)
    bound = _bound(f)
    f.finish()
    if bound is None:
        return []
    out = []
    for d in chosen:
        labels = dict((d.template.get("metadata") or {}).get("labels") or {})
        if not labels:
            f.errs.invalid(
                f.path,
                d.name,
                "the Deployment's pods carry no labels for a budget to select: give its pods labels",
            )
            continue
        meta = {"name": d.name, "namespace": d.namespace, "generation": 1}
        out.append(_budget(meta, {**bound, "selector": {"matchLabels": labels}}))
    return out


def _bound(f: Fields) -> dict[str, int | str] | None:
    """{maxUnavailable or minAvailable: pods or "N%"}; None (reported) when not exactly one."""
    given = [k for k in _BOUNDS if f.has(k)]
    for k in _BOUNDS:
        f.any(k)  # read (an extra one is reported below, not as unknown)
    if len(given) != 1:
        if given:
            f.errs.forbidden(join(f.path, given[1]), f"one of {', '.join(_BOUNDS)}, not {given[0]} too")
        else:
            f.errs.required(f.path, f"{' or '.join(_BOUNDS)}: a number of pods or a percentage")
        return None
    key = given[0]
    value = f.any(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return {key: value}
    if isinstance(value, str) and _PERCENT.match(value.strip()) and int(value.strip()[:-1]) <= 100:
        return {key: value.strip()}
    f.errs.invalid(
        join(f.path, key), shown(value), 'must be a number of pods (>= 0) or a percentage such as "10%"'
    )
    return None


def _budget(meta: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec}


def _key(name: object) -> str:
    text = str(name)
    return text if "/" in text else f"default/{text}"
