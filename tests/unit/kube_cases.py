"""Shared helpers for the conformance tables (test_conformance_*.py) and kube regression tests.

Each conformance table ports the cases of one kube plugin test file: the same
cluster, pod and expected result, written with our builders.  Every helper
runs a plugin's per-node and batch forms and checks they agree (see
netsched.testing.agreement), so a case asserts both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netsched.framework import FilterPlugin, PluginArgs, PreFilterPlugin, ScorePlugin
from netsched.framework.cycle_state import CycleState
from netsched.framework.fields import ErrorList, Fields
from netsched.framework.snapshot import Snapshot
from netsched.framework.status import Code
from netsched.framework.types import NodeInfo, PodInfo
from netsched.testing.agreement import filter_statuses, score_outcomes
from netsched.testing.builders import NodeBuilder, PodBuilder, node_infos
from netsched.testing.framework import build_plugin

UNSCHED = Code.UNSCHEDULABLE
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def decode_args(cls: Any, raw: Mapping[str, Any] | None) -> PluginArgs | None:
    """The plugin's typed args from a raw `args:` mapping (None: the plugin's defaults)."""
    if raw is None or getattr(cls, "Args", None) is None:
        return None
    errs = ErrorList()
    args: PluginArgs = cls.Args.decode(Fields(dict(raw), "args", errs))
    assert not list(errs), [str(e) for e in errs]
    return args


def snapshot(nodes: Sequence[NodeBuilder | NodeInfo], pods: Sequence[PodBuilder | PodInfo] = ()) -> Snapshot:
    return Snapshot.of(node_infos(list(nodes), list(pods)))


def run_filter(
    cls: Any,
    pod: PodBuilder | PodInfo,
    nodes: Sequence[NodeBuilder | NodeInfo],
    existing: Sequence[PodBuilder | PodInfo] = (),
    args: Mapping[str, Any] | None = None,
    **kw: Any,
) -> dict[str, tuple[Code, tuple[str, ...]] | None]:
    """node -> None (fits) or (code, reasons), PreFilter first.

    A PreFilter rejection becomes every node's verdict (as kube reports it); a
    PreFilter skip means every node passes.
    """
    snap = snapshot(nodes, existing)
    plugin: FilterPlugin = build_plugin(cls, decode_args(cls, args), snapshot=snap, **kw)
    pi = pod.info() if isinstance(pod, PodBuilder) else pod
    state = CycleState()
    names = [n.name for n in snap.nodes]
    if isinstance(plugin, PreFilterPlugin):
        result, st = plugin.pre_filter(state, pi, snap)
        if st.is_skip:
            return dict.fromkeys(names)
        if not st.ok:
            return dict.fromkeys(names, (st.code, tuple(st.reasons)))
        if result is not None and result.node_names is not None:
            allowed = set(result.node_names)
            out: dict[str, tuple[Code, tuple[str, ...]] | None] = {}
            statuses = filter_statuses(plugin, pi, snap, state=state)
            for row, s in statuses.items():
                name = snap.nodes[row].name
                out[name] = None if s.ok else (s.code, tuple(s.reasons))
                if name not in allowed and out[name] is None:
                    out[name] = (UNRES, ("node(s) didn't satisfy plugin PreFilter",))
            return out
    statuses = filter_statuses(plugin, pi, snap, state=state)
    return {snap.nodes[row].name: None if s.ok else (s.code, tuple(s.reasons)) for row, s in statuses.items()}


def run_score(
    cls: Any,
    pod: PodBuilder | PodInfo,
    nodes: Sequence[NodeBuilder | NodeInfo],
    existing: Sequence[PodBuilder | PodInfo] = (),
    args: Mapping[str, Any] | None = None,
    *,
    normalize: bool = True,
    **kw: Any,
) -> dict[str, int]:
    """node -> score (after NormalizeScore when the plugin has one and `normalize`)."""
    import numpy as np

    snap = snapshot(nodes, existing)
    plugin: ScorePlugin = build_plugin(cls, decode_args(cls, args), snapshot=snap, **kw)
    pi = pod.info() if isinstance(pod, PodBuilder) else pod
    state = CycleState()
    from netsched.framework import PreScorePlugin

    if isinstance(plugin, PreScorePlugin):
        st = plugin.pre_score(state, pi, snap, snap.all_rows)
        if st.is_skip:
            return {n.name: 0 for n in snap.nodes}
        assert st.ok, st
    raw = np.array(score_outcomes(plugin, pi, snap, state=state), dtype=np.int64)
    if normalize:
        plugin.normalize_scores(state, pi, raw)
    return {n.name: int(s) for n, s in zip(snap.nodes, raw.tolist(), strict=True)}


# ---------------------------------------------------------------- kube's st.MakePod / st.MakeNode

_seq = iter(range(1, 1_000_000))


def _requests(req: Mapping[str, Any]) -> dict[str, Any]:
    return {"resources": {"requests": {k: str(v) for k, v in req.items()}}} if req else {"resources": {}}


def kpod(
    *containers: Mapping[str, Any],
    init: Sequence[Mapping[str, Any]] = (),
    sidecars: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, Any] | None = None,
    node: str = "",
    name: str = "",
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    terminating: bool = False,
    priority: int | None = None,
    start_time: str = "",
    **spec: Any,
) -> PodInfo:
    """A pod as kube's tests build it: one container per requests mapping (none at all when
    no mapping is given: such a pod gets no scoring defaults), init containers, overhead."""
    n = next(_seq)
    raw: dict[str, Any] = {
        "metadata": {
            "name": name or f"pod-{n}",
            "namespace": namespace,
            "uid": f"kube-case-{n}",
            "labels": dict(labels or {}),
        },
        "spec": {"containers": [{"name": f"c{i}", **_requests(c)} for i, c in enumerate(containers)], **spec},
    }
    inits = [{"name": f"i{i}", **_requests(c)} for i, c in enumerate(init)]
    inits += [{"name": f"s{i}", "restartPolicy": "Always", **_requests(c)} for i, c in enumerate(sidecars)]
    if inits:
        raw["spec"]["initContainers"] = inits
    if overhead:
        raw["spec"]["overhead"] = {k: str(v) for k, v in overhead.items()}
    if node:
        raw["spec"]["nodeName"] = node
    if terminating:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if priority is not None:
        raw["spec"]["priority"] = priority
    if start_time:
        raw["status"] = {"startTime": start_time}
    from netsched.framework.parse import parse_pod

    return parse_pod(raw)


def knode(
    name: str,
    capacity: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    *,
    hostname_label: bool = True,
    **spec: Any,
) -> NodeInfo:
    """A node whose capacity and allocatable are exactly `capacity` (kube's MakeNode().Capacity());
    it carries kubernetes.io/hostname unless hostname_label=False (kube's MakeNode() sets no labels)."""
    from netsched.framework.parse import parse_node

    status = {"capacity": {k: str(v) for k, v in (capacity or {}).items()}}
    status["allocatable"] = dict(status["capacity"])
    raw = {
        "metadata": {
            "name": name,
            "labels": {**({"kubernetes.io/hostname": name} if hostname_label else {}), **(labels or {})},
        },
        "spec": spec,
        "status": status if capacity else {},
    }
    return parse_node(raw)
